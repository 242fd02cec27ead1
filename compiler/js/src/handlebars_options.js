// How Ergon compiles Handlebars prompts: one object, imported by both bundles, so that the
// checker (analysis.js precompiles with it) and the runtime (runtime.js compiles with it) can
// never disagree about which helpers exist or what a missing field does.

// Helpers a template may call: Handlebars' own block helpers and `lookup`, plus Ergon's
// (registered in runtime.js). `log` and partials are left out: a prompt has nowhere to log to,
// and no partials are registered.
export const HELPERS = ["if", "unless", "each", "with", "lookup", "stringify", "_now", "_model"];

export const COMPILE_OPTIONS = {
  // Prompt text is not HTML: escaping would send `&quot;` and `&amp;` to the model in place of
  // the author's quotes and ampersands (and `{{{x}}}` would be the only way to avoid it).
  noEscape: true,
  // A missing field throws instead of rendering as an empty string. Helper arguments stay
  // lenient, which is what lets `{{#if optional_field}}` test an absent field.
  strict: true,
  // Any other helper name is a compile error (so `ergon check` reports it), not a runtime one.
  knownHelpersOnly: true,
  // (Handlebars adds its own built-ins to this table as known: `log` is switched off here.)
  knownHelpers: { ...Object.fromEntries(HELPERS.map((name) => [name, true])), log: false },
};
