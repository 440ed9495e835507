// HuJSON (JSON with comments and trailing commas) reader for the base policy and
// for the live policy Headscale returns verbatim.
//
// Built on jsonc-parser's event visitor instead of its `parse()` so that:
// - a key named "__proto__" becomes an ordinary own property (parse() would assign
//   through the setter and change the object's prototype);
// - duplicate keys are an error: Headscale 0.29 decodes with encoding/json v2, which
//   rejects duplicate names, and silently keeping the last one would render a policy
//   different from what the user wrote;
// - every error carries line:column.
import { printParseErrorCode, visit } from "jsonc-parser";

export type HuJsonResult = { ok: true; value: Record<string, unknown> } | { ok: false; message: string };

const ERROR_TEXT: Record<string, string> = {
  InvalidSymbol: "invalid symbol",
  InvalidNumberFormat: "invalid number",
  PropertyNameExpected: "property name expected",
  ValueExpected: "value expected",
  ColonExpected: "colon expected",
  CommaExpected: "comma expected",
  CloseBraceExpected: "closing brace expected",
  CloseBracketExpected: "closing bracket expected",
  EndOfFileExpected: "end of input expected",
  InvalidCommentToken: "invalid comment",
  UnexpectedEndOfComment: "unterminated comment",
  UnexpectedEndOfString: "unterminated string",
  UnexpectedEndOfNumber: "unterminated number",
  InvalidUnicode: "invalid unicode escape",
  InvalidEscapeCharacter: "invalid escape character",
  InvalidCharacter: "invalid character",
};

type Container = Record<string, unknown> | unknown[];

function setOwn(obj: Record<string, unknown>, key: string, value: unknown): void {
  if (key === "__proto__") {
    Object.defineProperty(obj, key, { value, enumerable: true, writable: true, configurable: true });
  } else {
    obj[key] = value;
  }
}

/**
 * Parses HuJSON text into a plain object. The top level must be an object. A
 * document holding only whitespace and comments is read as `{}` (an empty base).
 * Errors read "line L:C: <what>", 1-based.
 */
export function parseHuJson(text: string): HuJsonResult {
  const roots: unknown[] = [];
  const stack: { container: Container; keys: Set<string> | null }[] = [];
  let pendingKey: string | null = null;
  let firstError: string | null = null;

  const fail = (what: string, line: number, column: number): void => {
    firstError ??= `line ${line + 1}:${column + 1}: ${what}`;
  };

  const push = (value: unknown): void => {
    const top = stack.at(-1);
    if (!top) {
      roots.push(value);
    } else if (Array.isArray(top.container)) {
      top.container.push(value);
    } else if (pendingKey !== null) {
      setOwn(top.container, pendingKey, value);
      pendingKey = null;
    }
  };

  visit(
    text,
    {
      onObjectBegin: () => {
        const obj: Record<string, unknown> = {};
        push(obj);
        stack.push({ container: obj, keys: new Set() });
      },
      onObjectProperty: (name, _offset, _length, line, column) => {
        const keys = stack.at(-1)?.keys;
        if (keys?.has(name)) fail(`duplicate key ${JSON.stringify(name)}`, line, column);
        keys?.add(name);
        pendingKey = name;
      },
      onObjectEnd: () => {
        stack.pop();
      },
      onArrayBegin: () => {
        const arr: unknown[] = [];
        push(arr);
        stack.push({ container: arr, keys: null });
      },
      onArrayEnd: () => {
        stack.pop();
      },
      onLiteralValue: (value) => push(value),
      onError: (code, _offset, _length, line, column) => {
        const name = printParseErrorCode(code);
        fail(ERROR_TEXT[name] ?? name, line, column);
      },
    },
    { allowTrailingComma: true, disallowComments: false, allowEmptyContent: true },
  );

  if (firstError !== null) return { ok: false, message: firstError };
  if (roots.length === 0) return { ok: true, value: {} };
  const root = roots[0];
  if (root === null || typeof root !== "object" || Array.isArray(root)) {
    const kind = root === null ? "null" : Array.isArray(root) ? "an array" : typeof root;
    return { ok: false, message: `the top level must be an object, got ${kind}` };
  }
  return { ok: true, value: root as Record<string, unknown> };
}
