// Canonical JSON of a policy, and its hash.
//
// Object keys are sorted (by UTF-16 code units, like RFC 8785) at every level.
// Array order is KEPT everywhere: in a policy, order is meaning users chose (acls,
// grants, ssh rules and tests are read top to bottom; owner lists are written the
// way people read them), and the arrays the operator generates are already produced
// in a sorted, deterministic order. So two policies hash the same exactly when they
// differ only in comments, whitespace, trailing commas or key order.
//
// Fast path: a key-sorted copy serialized by the native JSON.stringify (sharing every
// part that is already in canonical order). JS objects
// always enumerate integer-like keys ("10", "9") first and in numeric order, which
// would break "keys sorted", so a value holding such a key is serialized by the
// hand-written writer instead (same output format otherwise).
import { createHash } from "node:crypto";
import { parseHuJson } from "./hujson.js";

/** True when JSON.stringify would escape something in s (quote, backslash, controls, surrogates). */
function needsEscape(s: string): boolean {
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x20 || c === 0x22 || c === 0x5c || (c >= 0xd800 && c <= 0xdfff)) return true;
  }
  return false;
}

function quote(s: string): string {
  return needsEscape(s) ? JSON.stringify(s) : `"${s}"`;
}

/** Appends the JSON of `value` to `out`; `step` is the indent unit ("" for compact). */
function write(value: unknown, indent: string, step: string, out: string[]): void {
  if (typeof value === "string") {
    out.push(quote(value));
    return;
  }
  if (value === null || typeof value !== "object") {
    // numbers and booleans as JSON.stringify writes them; anything else is null,
    // as it would be inside an array
    out.push(JSON.stringify(value) ?? "null");
    return;
  }
  const deeper = indent + step;
  const open = step === "" ? "" : `\n${deeper}`;
  const sep = step === "" ? "," : `,\n${deeper}`;
  const close = step === "" ? "" : `\n${indent}`;
  if (Array.isArray(value)) {
    if (value.length === 0) {
      out.push("[]");
      return;
    }
    out.push(`[${open}`);
    for (let i = 0; i < value.length; i++) {
      if (i > 0) out.push(sep);
      write(value[i], deeper, step, out);
    }
    out.push(`${close}]`);
    return;
  }
  const obj = value as Record<string, unknown>;
  // sort() without a comparator orders strings by UTF-16 code units (as RFC 8785 does)
  const keys = Object.keys(obj).sort();
  const colon = step === "" ? ":" : ": ";
  let first = true;
  for (const key of keys) {
    const v = obj[key];
    if (v === undefined || typeof v === "function") continue;
    out.push(first ? `{${open}` : sep, quote(key), colon);
    first = false;
    write(v, deeper, step, out);
  }
  out.push(first ? "{}" : `${close}}`);
}

// Keys a JS object enumerates before all others, in numeric order (array indices).
const INDEX_KEY = /^(?:0|[1-9]\d{0,9})$/;

function isIndexKey(key: string): boolean {
  const c = key.charCodeAt(0);
  return c >= 48 && c <= 57 && INDEX_KEY.test(key) && Number(key) < 4294967295;
}

/** Returned by `sortedCopy` when some key would not stay sorted under JSON.stringify. */
const UNSORTABLE = Symbol("unsortable");

/** Objects JSON.stringify writes from their own keys alone (no inherited toJSON, as in a parsed policy). */
function isPlainObject(obj: object): boolean {
  const proto = Object.getPrototypeOf(obj);
  return proto === Object.prototype || proto === null;
}

/**
 * Key-sorted deep copy for JSON.stringify, or UNSORTABLE. Only what needs it is copied:
 * an array none of whose elements change, and a plain object whose keys are already
 * sorted and none of whose values change, are returned as they are (a policy of
 * thousands of generated grants and owner lists is then mostly shared, not copied).
 */
function sortedCopy(value: unknown): unknown {
  if (value === null || typeof value !== "object") return value;
  if (Array.isArray(value)) {
    let out: unknown[] | null = null;
    for (let i = 0; i < value.length; i++) {
      const item = value[i];
      if (item === null || typeof item !== "object") {
        if (out) out[i] = item;
        continue;
      }
      const v = sortedCopy(item);
      if (v === UNSORTABLE) return UNSORTABLE;
      if (v !== item && !out) out = value.slice(0, i);
      if (out) out[i] = v;
    }
    return out ?? value;
  }
  const obj = value as Record<string, unknown>;
  const keys = Object.keys(obj);
  let ascending = isPlainObject(obj);
  for (let i = 0; i < keys.length; i++) {
    const key = keys[i];
    if (isIndexKey(key)) return UNSORTABLE;
    if (i > 0 && !(keys[i - 1] < key)) ascending = false;
  }
  if (!ascending) keys.sort(); // sort() without a comparator orders strings by UTF-16 code units (as RFC 8785 does)
  let out: Record<string, unknown> | null = ascending ? null : {};
  for (let i = 0; i < keys.length; i++) {
    const key = keys[i];
    const item = obj[key];
    const v = item === null || typeof item !== "object" ? item : sortedCopy(item);
    if (v === UNSORTABLE) return UNSORTABLE;
    if (!out) {
      if (v === item) continue;
      // A value changed: copy the (sorted) keys before it, then go on copying.
      out = {};
      for (let j = 0; j < i; j++) setKey(out, keys[j], obj[keys[j]]);
    }
    setKey(out, key, v);
  }
  return out ?? obj;
}

function setKey(out: Record<string, unknown>, key: string, v: unknown): void {
  if (key === "__proto__") Object.defineProperty(out, key, { value: v, enumerable: true, writable: true });
  else out[key] = v;
}

/**
 * Canonical JSON text: object keys sorted recursively, array order kept, no
 * whitespace. With `indent` (e.g. 2) the same order, pretty-printed for humans
 * (the ConfigMap / the PUT body); only the compact form is hashed.
 */
export function canonicalJson(value: unknown, indent = 0): string {
  const copy = sortedCopy(value);
  if (copy !== UNSORTABLE) return JSON.stringify(copy, null, indent) ?? "null";
  const out: string[] = [];
  write(value, "", " ".repeat(indent), out);
  return out.join("");
}

/** "sha256:<hex>" of the canonical text (UTF-8). */
export function policyHash(canonical: string): string {
  return `sha256:${createHash("sha256").update(canonical, "utf8").digest("hex")}`;
}

export type LivePolicyHash = { ok: true; hash: string } | { ok: false; message: string };

/**
 * Hash of a policy text as Headscale holds it (HuJSON, verbatim): parse, canonical
 * form, hash. Comments, whitespace and key order do not change it, so it equals the
 * rendered hash when the live policy is what we wrote.
 */
export function hashOfLivePolicy(text: string): LivePolicyHash {
  // The live policy changes rarely but is hashed on every Tailnet sync (and parsing a policy of
  // thousands of grants costs ~10 ms): the last results are kept, keyed by the exact text. Only the live
  // policy and the one before it: each key is a whole policy (3 MB at 20,000 objects), and a month of policy
  // writes kept eight of them, with their canonical text, for nothing (issue 36).
  const hit = liveMemo.get(text);
  if (hit) return hit;
  const parsed = parseHuJson(text);
  const result: LivePolicyHash = parsed.ok
    ? { ok: true, hash: policyHash(canonicalJson(parsed.value)) }
    : { ok: false, message: `live policy is not valid HuJSON: ${parsed.message}` };
  if (liveMemo.size >= LIVE_MEMO_SIZE) liveMemo.delete(liveMemo.keys().next().value as string);
  liveMemo.set(text, result);
  return result;
}

const LIVE_MEMO_SIZE = 2;
const liveMemo = new Map<string, LivePolicyHash>();
