/**
 * Metacontroller's default child apply (`--apply-strategy=dynamic-apply`), modelled on
 * metacontroller/metacontroller v4.17.2 pkg/dynamic/apply/apply.go and
 * pkg/controller/common/manage_children.go (ApplyUpdate, DynamicApply.Apply):
 *
 * - create: the desired object is stored as given, its last-applied annotation is Go's
 *   `json.Marshal` of it (sorted keys, `<>&` escaped);
 * - update: a 3-way merge of observed ← (last-applied → desired). Maps merge by key; a list whose
 *   items are all maps sharing one of the guessed keys (containerPort, port, mountPath, name, uid,
 *   ip, path — first wins) merges as a map keyed by that field; any other list is replaced.
 *   Items that share a key value collapse: two ports 53/UDP and 53/TCP keyed by `port` come out as
 *   the same entry twice, which the API server refuses. Metadata system fields and status are
 *   kept from the observed object.
 */
import { jsonEqual } from "../../k8s/json-equal.js";
import { isRecord } from "../../k8s/objects.js";

export { jsonEqual };

export const LAST_APPLIED = "metacontroller.k8s.io/last-applied-configuration";

/** The precedence apply.go's knownMergeKeys gives its guesses. */
export const KNOWN_MERGE_KEYS = ["containerPort", "port", "mountPath", "name", "uid", "ip", "path"] as const;

const SYSTEM_FIELDS = [
  "selfLink",
  "uid",
  "resourceVersion",
  "generation",
  "creationTimestamp",
  "deletionTimestamp",
  "deletionGracePeriodSeconds",
  "managedFields",
];

type Json = unknown;

/** Go's encoding/json of a map[string]interface{}: keys sorted, HTML characters escaped. */
export function goJson(value: Json): string {
  return JSON.stringify(sortKeys(value)).replace(
    /[<>&\u2028\u2029]/g,
    (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`,
  );
}

function sortKeys(v: Json): Json {
  if (Array.isArray(v)) return v.map(sortKeys);
  if (isRecord(v)) {
    const out: Record<string, Json> = {};
    for (const k of Object.keys(v).sort()) out[k] = sortKeys(v[k]);
    return out;
  }
  return v;
}

/** apply.go Merge: the diff from lastApplied to desired, applied to (a copy of) observed. */
export function merge(observed: Record<string, Json>, lastApplied: Json, desired: Record<string, Json>) {
  return mergeValue("", structuredClone(observed), lastApplied, desired) as Record<string, Json>;
}

function mergeValue(path: string, dest: Json, last: Json, des: Json): Json {
  if (isRecord(dest)) {
    if (last != null && !isRecord(last)) throw new Error(`lastApplied${path}: expecting a map`);
    if (des != null && !isRecord(des)) throw new Error(`desired${path}: expecting a map`);
    return mergeObject(path, dest, (last ?? {}) as Record<string, Json>, (des ?? {}) as Record<string, Json>);
  }
  if (Array.isArray(dest)) {
    if (last != null && !Array.isArray(last)) throw new Error(`lastApplied${path}: expecting a list`);
    if (des != null && !Array.isArray(des)) throw new Error(`desired${path}: expecting a list`);
    return mergeArray(path, dest, (last ?? []) as Json[], (des ?? []) as Json[]);
  }
  return des;
}

function mergeObject(path: string, dest: Record<string, Json>, last: Record<string, Json>, des: Record<string, Json>) {
  for (const k of Object.keys(last)) if (!Object.hasOwn(des, k)) delete dest[k];
  for (const [k, v] of Object.entries(des)) dest[k] = mergeValue(`${path}[${k}]`, dest[k], last[k], v);
  return dest;
}

function mergeArray(path: string, dest: Json[], last: Json[], des: Json[]): Json {
  const key = detectListMapKey(dest, last, des);
  if (!key) return des;
  const destMap = listMap(key, dest);
  mergeObject(path, destMap, listMap(key, last), listMap(key, des));
  // apply.go keeps the observed order, then appends the new items. An observed item whose key
  // value another item shares is emitted once per occurrence: that is how duplicates come back.
  const out: Json[] = [];
  const added = new Set<string>();
  for (const item of dest) {
    const k = keyString((item as Record<string, Json>)[key]);
    if (Object.hasOwn(destMap, k)) {
      out.push(destMap[k]);
      added.add(k);
    }
  }
  for (const item of des) {
    const k = keyString((item as Record<string, Json>)[key]);
    if (!added.has(k)) {
      out.push(destMap[k]);
      added.add(k);
    }
  }
  return out;
}

function listMap(key: string, list: Json[]): Record<string, Json> {
  const out: Record<string, Json> = {};
  for (const item of list) out[keyString((item as Record<string, Json>)[key])] = item;
  return out;
}

/** fmt.Sprintf("%v") of a decoded JSON scalar. */
const keyString = (v: Json) => (typeof v === "string" ? v : String(v));

/** apply.go detectListMapKey: the first known key every item of every list has, or "". */
export function detectListMapKey(...lists: Json[][]): string {
  let common: Set<string> | undefined;
  for (const list of lists) {
    for (const item of list) {
      if (!isRecord(item)) return "";
      if (!common) common = new Set(Object.keys(item));
      else for (const k of [...common]) if (!Object.hasOwn(item, k)) common.delete(k);
    }
  }
  return KNOWN_MERGE_KEYS.find((k) => common?.has(k)) ?? "";
}

export interface Applied {
  object: Record<string, Json>;
  /** The merge changed the object (an update is sent). */
  changed: boolean;
}

/** manage_children.go ApplyUpdate + the DeepEqual check of DynamicApply.Apply. */
export function applyUpdate(observed: Record<string, Json>, desiredIn: Record<string, Json>): Applied {
  const meta = (observed.metadata ?? {}) as { annotations?: Record<string, string> };
  const lastJson = meta.annotations?.[LAST_APPLIED];
  const lastApplied = lastJson ? (JSON.parse(lastJson) as Json) : undefined;
  const desired = withoutLastApplied(desiredIn);
  const object = merge(observed, lastApplied, desired);
  const objMeta = (object.metadata ?? {}) as Record<string, Json>;
  const obsMeta = (observed.metadata ?? {}) as Record<string, Json>;
  for (const f of SYSTEM_FIELDS) {
    if (f in obsMeta) objMeta[f] = structuredClone(obsMeta[f]);
    else delete objMeta[f];
  }
  if ("status" in observed) object.status = structuredClone(observed.status);
  else delete object.status;
  object.metadata = objMeta;
  setLastApplied(object, desired);
  return { object, changed: !jsonEqual(object, observed) };
}

/** What the create path stores: the desired object with its own last-applied annotation. */
export function applyCreate(desiredIn: Record<string, Json>): Record<string, Json> {
  const desired = withoutLastApplied(desiredIn);
  const object = structuredClone(desired);
  setLastApplied(object, desired);
  return object;
}

function withoutLastApplied(o: Record<string, Json>): Record<string, Json> {
  const meta = o.metadata as { annotations?: Record<string, string> } | undefined;
  if (!meta?.annotations || !(LAST_APPLIED in meta.annotations)) return o;
  const annotations = { ...meta.annotations };
  delete annotations[LAST_APPLIED];
  return { ...o, metadata: { ...meta, annotations } };
}

function setLastApplied(o: Record<string, Json>, lastApplied: Json): void {
  o.metadata ??= {};
  const meta = o.metadata as { annotations?: Record<string, string> };
  meta.annotations = { ...(meta.annotations ?? {}), [LAST_APPLIED]: goJson(lastApplied) };
}
