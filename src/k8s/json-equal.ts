import { isRecord } from "./objects.js";

/**
 * Deep equality of JSON values, key order ignored (Go's reflect.DeepEqual on decoded JSON). What
 * Metacontroller writes (its last-applied annotation is Go's json.Marshal: sorted keys) is compared
 * with what we build this way, never as strings.
 */
export function jsonEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (Array.isArray(a) || Array.isArray(b)) {
    return Array.isArray(a) && Array.isArray(b) && a.length === b.length && a.every((x, i) => jsonEqual(x, b[i]));
  }
  if (isRecord(a) && isRecord(b)) {
    const ka = Object.keys(a);
    return ka.length === Object.keys(b).length && ka.every((k) => Object.hasOwn(b, k) && jsonEqual(a[k], b[k]));
  }
  return false;
}
