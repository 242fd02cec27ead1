// The runtime's bundle (vendor/runtime.js): renders Handlebars prompts, evaluates JST templates
// and runs runJavascriptCode code. compiler/js/engine.py loads it into a fresh V8 context for
// each evaluation and calls `__ergon_run` once with a JSON payload; the answer is JSON text,
// `{"value": ...}` or `{"error": {"name", "message", "line", "column"}}`.

import Handlebars from "handlebars";
import Papa from "papaparse";
import dayjs from "dayjs";
import utc from "dayjs/plugin/utc";

import { COMPILE_OPTIONS } from "./handlebars_options.js";

dayjs.extend(utc);

// Captured before any template or code runs: they may shadow or replace the globals.
const { defineProperty, freeze } = Object;
const { parse: parseJson, stringify: toJson } = JSON;
const indirectEval = eval;

class Located extends Error {
  constructor(message, line, column) {
    super(message);
    this.line = line;
    this.column = column;
  }
}

// ---------------------------------------------------------------------------------------------
// The `_` helpers of JST templates (and of runJavascriptCode code)

function stringify(value, replacer, space) {
  if (value === undefined) throw new TypeError("_.stringify(): the value is undefined (a missing field?)");
  return toJson(value, replacer, space);
}

function loadCsv(text) {
  const parsed = Papa.parse(String(text), { header: true, skipEmptyLines: true });
  if (parsed.errors.length) {
    const first = parsed.errors[0];
    const row = Number.isInteger(first.row) ? ` (data row ${first.row + 1})` : "";
    throw new TypeError(`_.loadCsv(): ${first.message}${row}`);
  }
  return parsed.data;
}

function jsonToCsv(data) {
  return Papa.unparse(data);
}

function addLineNumbers(text) {
  return String(text)
    .split("\n")
    .map((line, i) => `${i + 1}: ${line}`)
    .join("\n");
}

const helpers = freeze({ stringify, loadCsv, jsonToCsv, addLineNumbers, dayjs });

// ---------------------------------------------------------------------------------------------
// Handlebars

function renderHandlebars(template, data, model) {
  const hb = Handlebars.create();
  hb.unregisterHelper("log");
  hb.registerHelper("stringify", function (...args) {
    if (args.length !== 2) throw new Located("`stringify` takes exactly one argument", ...where(args[args.length - 1]));
    if (args[0] === undefined) throw new Located("`stringify`: the value is missing", ...where(args[1]));
    return toJson(args[0]);
  });
  hb.registerHelper("_now", () => new Date().toISOString());
  hb.registerHelper("_model", () => model);
  try {
    return hb.compile(template, COMPILE_OPTIONS)(data);
  } catch (error) {
    // strict mode's message for a missing field is `"name" not defined in [object Object] - L:C`
    const missing = /^"(.*)" not defined in .*?(?: - \d+:\d+)?$/s.exec(String(error.message));
    if (missing) throw new Located(`the field \`${missing[1]}\` is missing`, error.lineNumber, error.column);
    if (Number.isInteger(error.lineNumber)) {
      throw new Located(String(error.message).replace(/ - \d+:\d+$/, ""), error.lineNumber, error.column);
    }
    throw error;
  }
}

function where(options) {
  const loc = options && options.loc;
  return loc ? [loc.start.line, loc.start.column] : [null, null];
}

// ---------------------------------------------------------------------------------------------
// JavaScript: JST templates and activity code

const SOURCE = "code.js";

// Global properties, configurable so that the code may declare its own variable of that name.
function define(name, value) {
  defineProperty(globalThis, name, { value, writable: true, configurable: true, enumerable: false });
}

// The tag compiler/js/analysis.js puts on each template literal of a JST template.
function interpolationTags(table) {
  return (i) =>
    (strings, ...values) => {
      let out = strings[0];
      values.forEach((value, k) => {
        if (value === undefined) {
          const [source, line, column] = table[i][k];
          throw new Located(`\`\${${source}}\` is undefined (a missing field?)`, line, column);
        }
        out += `${value}${strings[k + 1]}`;
      });
      return out;
    };
}

// Code that `return`s (or `await`s) is a function body; other code is a script, whose value is
// its last expression's. The wrapper shares the code's first line, so lines keep their numbers.
const WRAPPER = { plain: "(function () {", async: "(async function () {" };
let firstLineShift = 0;

function evaluate(code, shape) {
  if (!shape || !(shape.returns || shape.awaits)) return indirectEval(`${code}\n//# sourceURL=${SOURCE}`);
  const head = shape.awaits ? WRAPPER.async : WRAPPER.plain;
  firstLineShift = head.length;
  return indirectEval(`${head}${code}\n})\n//# sourceURL=${SOURCE}`)();
}

function renderJst(code, data, fields, interpolations, model, shape) {
  for (const name of fields) define(name, data[name]);
  define("_", helpers);
  define("_model", model);
  define("__ergon_interpolate", interpolationTags(interpolations));
  const value = evaluate(code, shape);
  if (value instanceof Promise) return value.then((text) => jstText(text));
  return jstText(value);
}

function jstText(value) {
  if (typeof value !== "string") {
    throw new TypeError(`the template's value is ${describe(value)}, not a string (end it with a template literal)`);
  }
  return value;
}

function runCode(code, data, shape) {
  for (const name of Object.keys(data)) define(name, data[name]);
  define("_", helpers);
  const value = evaluate(code, shape);
  // a Promise (an async function's value) is awaited: the worker waits for it within the time limit
  const thenable = value !== null && (typeof value === "object" || typeof value === "function") && typeof value.then === "function";
  return thenable ? Promise.resolve(value).then(jsonValue) : jsonValue(value);
}

function jsonValue(value) {
  const text = toJson(value);
  if (text === undefined) {
    throw new TypeError(`the code's value is ${describe(value)}, which is not JSON (end the code with the expression whose value is the result)`);
  }
  return parseJson(text);
}

function describe(value) {
  if (value === null) return "null";
  if (Array.isArray(value)) return "an array";
  return { undefined: "undefined", object: "an object", function: "a function", symbol: "a symbol" }[typeof value] || `a ${typeof value}`;
}

// Where an error happened in the evaluated code: `code.js:L:C` in its stack (1-based column).
function stackPosition(error) {
  const m = new RegExp(`${SOURCE.replace(".", "\\.")}:(\\d+):(\\d+)`).exec(String(error && error.stack));
  if (!m) return [null, null];
  const line = Number(m[1]);
  return [line, Number(m[2]) - 1 - (line === 1 ? firstLineShift : 0)];
}

function report(error) {
  if (error instanceof Located) {
    return { name: "Error", message: error.message, line: error.line ?? null, column: error.column ?? null };
  }
  const [line, column] = stackPosition(error);
  const name = error && typeof error.name === "string" ? error.name : "Error";
  const message = error && error.message !== undefined ? String(error.message) : String(error);
  return { name, message, line, column };
}

// The one entry point. It removes itself first: the code it runs never sees it. The answer is
// JSON text, or a Promise of it when the code's value is a Promise.
function run(payload) {
  delete globalThis.__ergon_run;
  const answer = (value) => toJson({ value });
  const failed = (error) => toJson({ error: report(error) });
  try {
    const p = parseJson(payload);
    let value;
    if (p.op === "handlebars") value = renderHandlebars(p.template, p.data, p.model);
    else if (p.op === "jst") value = renderJst(p.code, p.data, p.fields, p.interpolations, p.model, p.shape);
    else if (p.op === "code") value = runCode(p.code, p.data, p.shape);
    else throw new TypeError(`unknown operation ${p.op}`);
    return value instanceof Promise ? value.then(answer, failed) : answer(value);
  } catch (error) {
    return failed(error);
  }
}

defineProperty(globalThis, "__ergon_run", { value: run, writable: false, configurable: true, enumerable: false });
