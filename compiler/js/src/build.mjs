// Builds the two bundles compiler/js loads into V8, and gathers the bundled libraries' licenses:
//
//   vendor/analysis.js   Handlebars' parser and compiler, acorn, eslint-scope (the checker's)
//   vendor/runtime.js    Handlebars, dayjs, papaparse and Ergon's helpers (the runtime's)
//   vendor/LICENSES/     the license text of every package in them
//
// Run from this folder: `npm ci && npm run build`. The output is committed (CI has no npm), and
// the same lock file gives the same bytes.

import { build } from "esbuild";
import { copyFileSync, mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const vendor = join(here, "..", "vendor");

const common = {
  bundle: true,
  format: "iife",
  // V8 without Node or a browser: no `process`, no `require`; the `browser` fields of the
  // packages pick their builds that need neither (Handlebars' without its `fs` loader).
  platform: "browser",
  target: "es2022",
  minifyWhitespace: true,
  minifySyntax: true,
  legalComments: "none", // the licenses are in vendor/LICENSES/
  metafile: true,
  logLevel: "warning",
};

const used = new Set();
for (const entry of ["analysis", "runtime"]) {
  const result = await build({ ...common, entryPoints: [join(here, `${entry}.js`)], outfile: join(vendor, `${entry}.js`) });
  for (const input of Object.keys(result.metafile.inputs)) {
    const m = /node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(input);
    if (m) used.add(m[1]);
  }
}

const licenses = join(vendor, "LICENSES");
rmSync(licenses, { recursive: true, force: true });
mkdirSync(licenses, { recursive: true });
for (const name of [...used].sort()) {
  const folder = join(here, "node_modules", name);
  const { version, license } = JSON.parse(readFileSync(join(folder, "package.json"), "utf8"));
  const target = (file) => join(licenses, `${name.replace("/", "__")}-${version}.${file}`);
  const files = readdirSync(folder).filter((f) => /^(licen[cs]e|copying)/i.test(f));
  for (const file of files) copyFileSync(join(folder, file), target(file));
  if (!files.length) {
    // esrecurse keeps its license text in the README's last section
    const readme = readFileSync(join(folder, "README.md"), "utf8");
    const at = readme.search(/^#+ License\s*$/im);
    if (at < 0) throw new Error(`${name} ships no license text`);
    writeFileSync(target("LICENSE"), readme.slice(at).replace(/^#+ License\s*/i, "").trim() + "\n");
  }
  console.log(`${name} ${version} (${license})`);
}
