// The checker's bundle (vendor/analysis.js): parses Handlebars templates and JavaScript, never
// runs them. Loaded once into a long-lived V8 context by compiler/js/analysis.py; every entry
// point takes text and returns JSON text, so nothing but strings crosses into Python.

import Handlebars from "handlebars";
import * as acorn from "acorn";
import * as eslintScope from "eslint-scope";
import estraverse from "estraverse";

import { COMPILE_OPTIONS, HELPERS } from "./handlebars_options.js";

// Which ECMAScript the JavaScript parser and the scope analyser accept (V8 runs newer).
const ECMA_VERSION = 2024;

class Located extends Error {
  constructor(message, line, column) {
    super(message);
    this.line = line;
    this.column = column;
  }
}

function failure(error) {
  return JSON.stringify({
    error: {
      message: String(error && error.message ? error.message : error),
      line: error && Number.isInteger(error.line) ? error.line : null,
      column: error && Number.isInteger(error.column) ? error.column : null,
    },
  });
}

// ---------------------------------------------------------------------------------------------
// Handlebars

// Handlebars' generated parser reports a syntax error with a message and a `hash` holding the
// offending token and its location; the error it throws by default keeps only the message, which
// lists every token the grammar would have taken. Ergon's message names the token it got, and the
// expected ones when there are few.
const TOKENS = {
  EOF: "end of the template", CLOSE: "`}}`", CLOSE_UNESCAPED: "`}}}`", OPEN: "`{{`", OPEN_BLOCK: "`{{#`",
  OPEN_ENDBLOCK: "`{{/`", OPEN_INVERSE: "`{{^`", INVERSE: "`{{else}}`", OPEN_INVERSE_CHAIN: "`{{else …`",
  OPEN_SEXPR: "`(`", CLOSE_SEXPR: "`)`", ID: "a name", SEP: "`.`",
};
const token = (name, text) => TOKENS[String(name).replace(/'/g, "")] || (text ? `\`${text}\`` : `\`${name}\``);

Handlebars.parse("");
Handlebars.Parser.yy.parseError = (message, hash) => {
  const loc = hash && hash.loc;
  // the location is the last token read before the offending one: the error is at its end
  const line = loc ? loc.last_line : hash && Number.isInteger(hash.line) ? hash.line + 1 : null;
  const column = loc ? loc.last_column : null;
  let text = String(message).split("\n")[0].replace(/ on line \d+[.:]?$/, "");
  if (hash && hash.token) {
    const expected = (hash.expected || []).map((name) => token(name));
    text = `unexpected ${token(hash.token, hash.text)}` + (expected.length && expected.length <= 3 ? ` (expected ${expected.join(" or ")})` : "");
  }
  throw new Located(text, line, column);
};

function position(node) {
  return node && node.loc ? { line: node.loc.start.line, column: node.loc.start.column } : { line: null, column: null };
}

function pathRef(path, strict) {
  return { ref: path.parts, depth: path.depth, data: path.data, strict, ...position(path) };
}

// A mustache or block names a helper when it has arguments or its name is a registered helper.
function callsHelper(node) {
  const path = node.path;
  if (path.type !== "PathExpression") return false;
  const named = !path.data && path.depth === 0 && path.parts.length === 1 && HELPERS.includes(path.parts[0]);
  return named || node.params.length > 0 || Boolean(node.hash && node.hash.pairs.length);
}

// Field references inside a helper's arguments (never strict: helpers see absent fields).
function argumentRefs(node, out) {
  const values = [...node.params, ...(node.hash ? node.hash.pairs.map((pair) => pair.value) : [])];
  for (const value of values) {
    if (value.type === "PathExpression") out.push(pathRef(value, false));
    else if (value.type === "SubExpression") argumentRefs(value, out);
  }
}

// Handlebars checks these only when the template runs.
const ONE_ARGUMENT = ["if", "unless", "each", "with"];

// The template as nested references and blocks, for compiler/templates/handlebars.py to check
// against the interaction's input schema.
function outline(program) {
  const out = [];
  for (const node of program ? program.body : []) {
    switch (node.type) {
      case "MustacheStatement":
        if (node.path.type !== "PathExpression") break; // a literal: `{{"text"}}`
        if (callsHelper(node)) argumentRefs(node, out);
        else out.push(pathRef(node.path, true));
        break;
      case "BlockStatement": {
        const name = node.path.type === "PathExpression" && callsHelper(node) ? node.path.parts[0] : null;
        if (ONE_ARGUMENT.includes(name) && node.params.length !== 1) {
          throw new Located(`\`#${name}\` takes exactly one argument`, ...Object.values(position(node)));
        }
        const args = [];
        if (name !== null) argumentRefs(node, args);
        const subject = name === null ? pathRef(node.path, false) : args.length ? args[0] : null;
        out.push({
          block: name,
          subject,
          args: name === null ? [subject] : args,
          params: node.program ? node.program.blockParams || [] : [],
          body: outline(node.program),
          inverse: outline(node.inverse),
          ...position(node),
        });
        break;
      }
      case "PartialStatement":
      case "PartialBlockStatement":
        throw new Located("partials (`{{> name}}`) are not supported: Ergon registers none", ...Object.values(position(node)));
      case "Decorator":
      case "DecoratorBlock":
        throw new Located("decorators (`{{* name}}`) are not supported", ...Object.values(position(node)));
      default: // content and comments
        break;
    }
  }
  return out;
}

function handlebars(text) {
  try {
    const ast = Handlebars.parse(text);
    const tree = outline(ast);
    // compiling finds what parsing does not: unknown helpers, misused block parameters...
    Handlebars.precompile(text, COMPILE_OPTIONS);
    return JSON.stringify({ outline: tree });
  } catch (error) {
    if (error instanceof Located) return failure(error);
    // Handlebars' own exceptions carry `lineNumber` and `column`; the message ends with " - L:C"
    const message = String(error.message).replace(/ - \d+:\d+$/, "");
    return failure({ message, line: error.lineNumber, column: error.column });
  }
}

// ---------------------------------------------------------------------------------------------
// JavaScript (JST templates and the runJavascriptCode activity)

// Code may be written as a script whose last expression is its value, or as a function body
// that `return`s it (and may `await`): both parse; `shape` tells the runtime which it is.
function parse(text) {
  try {
    return acorn.parse(text, {
      ecmaVersion: ECMA_VERSION, sourceType: "script", locations: true, ranges: true,
      allowReturnOutsideFunction: true, allowAwaitOutsideFunction: true,
    });
  } catch (error) {
    const message = String(error.message).replace(/ \(\d+:\d+\)$/, "");
    throw new Located(message, error.loc ? error.loc.line : null, error.loc ? error.loc.column : null);
  }
}

// Identifiers the code reads or writes without declaring them: the scope manager's references
// that no scope of the program resolves (`through` of the global scope).
function freeNames(ast) {
  const manager = eslintScope.analyze(ast, { ecmaVersion: ECMA_VERSION, sourceType: "script" });
  return manager.globalScope.through.map((reference) => ({
    name: reference.identifier.name,
    ...position(reference.identifier),
  }));
}

const FUNCTIONS = ["FunctionDeclaration", "FunctionExpression", "ArrowFunctionExpression", "ClassBody"];

// Whether the code `return`s or `await`s outside any function of its own.
function shape(ast) {
  const found = { returns: false, awaits: false };
  estraverse.traverse(ast, {
    fallback: "iteration",
    enter(node) {
      if (FUNCTIONS.includes(node.type)) return estraverse.VisitorOption.Skip;
      if (node.type === "ReturnStatement") found.returns = true;
      if (node.type === "AwaitExpression" || (node.type === "ForOfStatement" && node.await)) found.awaits = true;
      return undefined;
    },
  });
  return found;
}

function javascript(text) {
  try {
    const ast = parse(text);
    return JSON.stringify({ free: freeNames(ast), ...shape(ast) });
  } catch (error) {
    return failure(error);
  }
}

// A JST template for the runtime: every untagged template literal gets the tag
// `__ergon_interpolate(i)`, which renders it as JavaScript would but throws when an
// interpolated value is `undefined` (a missing field, never the word "undefined" in a prompt).
// `interpolations[i]` lists, for literal i, each `${}`'s source text, line and column. The tag
// is inserted in front of the backtick, on the same line, so line numbers do not move.
const TAG = "__ergon_interpolate";

function prepareJst(text) {
  try {
    const ast = parse(text);
    const literals = [];
    estraverse.traverse(ast, {
      fallback: "iteration",
      enter(node, parent) {
        if (node.type !== "TemplateLiteral") return;
        if (parent && parent.type === "TaggedTemplateExpression" && parent.quasi === node) return;
        literals.push(node);
      },
    });
    literals.sort((a, b) => a.start - b.start);
    const interpolations = literals.map((node) =>
      node.expressions.map((expr) => [text.slice(expr.start, expr.end), expr.loc.start.line, expr.loc.start.column]),
    );
    let code = "";
    let last = 0;
    literals.forEach((node, i) => {
      code += text.slice(last, node.start) + `${TAG}(${i})`;
      last = node.start;
    });
    code += text.slice(last);
    return JSON.stringify({ code, interpolations, ...shape(ast) });
  } catch (error) {
    return failure(error);
  }
}

// Names of the global object of a bare context: the ECMAScript built-ins V8 provides (and the
// timer functions MiniRacer installs), which a JST template or activity code may use.
function globalNames() {
  return JSON.stringify(Object.getOwnPropertyNames(globalThis).filter((name) => !name.startsWith("__") && name !== "ErgonAnalysis"));
}

globalThis.ErgonAnalysis = { handlebars, javascript, prepareJst, globalNames };
