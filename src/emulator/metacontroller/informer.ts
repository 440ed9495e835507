/**
 * What the composite loop (composite-sync.ts) and the decorator loop (decorator-sync.ts) share:
 * the store's keys, the related and owned selections, the v2-keyed maps a hook request carries,
 * the customize call (cached, decoded strictly), and the port through which a sync reads the
 * loop's store and sends its writes (loop.ts implements it; a store in a real API server
 * overrides the writes, test/real/kube/loop.ts).
 */
import type { ObjectMaps } from "../../k8s/objects.js";
import { type K8sObject, typeKey } from "../../k8s/objects.js";
import type { RelatedRule } from "../../pipeline/types.js";
import { kindOfResource } from "./controllers.js";
import type { LoopOptions, Obj } from "./types.js";

/** v2 key: namespace/name for namespaced objects, name for cluster-scoped. */
export const v2Key = (o: K8sObject) =>
  o.metadata.namespace ? `${o.metadata.namespace}/${o.metadata.name}` : o.metadata.name;
/** The store's key of an object: one per apiVersion, kind, namespace and name. */
export const objKey = (o: { apiVersion: string; kind: string; metadata: { namespace?: string; name: string } }) =>
  `${o.apiVersion}|${o.kind}|${o.metadata.namespace ?? ""}|${o.metadata.name}`;
export const clone = <T>(v: T): T => structuredClone(v);

/** A child or attachment type key with its update strategy (OnDelete, Recreate, InPlace, …). */
export interface ChildType {
  type: string;
  method: string;
}

export interface HookAnswer {
  code: number;
  json: unknown;
}

/** What one sync of a parent (or of a decorated object) uses of the loop. */
export interface SyncPort {
  readonly opts: LoopOptions;
  /** Rules by `<parent uid>/<generation>` (or `<decorator>/<uid>/<generation>`): customize is called once per generation. */
  readonly customizeCache: Map<string, RelatedRule[]>;
  /** `<decorator controller>|<object uid>`: the finalizer a DecoratorController with a finalize hook adds. */
  readonly decoratorFinalizers: Set<string>;
  objects(): Obj[];
  get(apiVersion: string, kind: string, name: string, namespace?: string): Obj | undefined;
  call(hookKind: string, hook: string, parent: Obj, body: unknown): Promise<HookAnswer>;
  applyChild(parent: Obj, c: Obj, childTypes: ChildType[], controllerUidLabel?: boolean): Promise<boolean>;
  /** kubectl delete (a parent kind gets a deletionTimestamp and is finalized by its own loop). */
  delete(apiVersion: string, kind: string, name: string, namespace?: string): void;
  removeWithDependents(o: Obj): void;
  deleteChild(o: Obj): Promise<void>;
  releaseParent(live: Obj): Promise<void>;
  sameStatus(live: Record<string, unknown> | undefined, status: Record<string, unknown>): boolean;
  writeStatus(live: Obj, status: Record<string, unknown>): Promise<void>;
  /** parentCacheLag: the sync given `parentIn` wrote `live`'s status; the next sync may see `parentIn`. */
  statusWritten(parentIn: Obj, live: Obj): void;
}

const RULE_KEYS = ["apiVersion", "resource", "labelSelector", "namespaceSelector", "namespace", "names"];
const SELECTOR_KEYS = ["matchLabels", "matchExpressions"];

/**
 * The customize answer as Metacontroller's strict v2 decoder reads it: only relatedResources at the
 * top, only RelatedResourceRule fields in a rule, only LabelSelector fields in its selectors.
 */
export function strictCustomizeResponse(json: unknown): RelatedRule[] {
  const body = (json ?? {}) as Record<string, unknown>;
  for (const k of Object.keys(body)) {
    if (k !== "relatedResources") throw new Error(`strict v2 decode of the customize answer fails on key ${k}`);
  }
  const rules = (body.relatedResources ?? []) as RelatedRule[];
  for (const rule of rules) {
    for (const k of Object.keys(rule)) {
      if (!RULE_KEYS.includes(k)) throw new Error(`strict v2 decode of a related rule fails on key ${k}`);
    }
    for (const sel of [rule.labelSelector, rule.namespaceSelector]) {
      for (const k of Object.keys(sel ?? {})) {
        if (!SELECTOR_KEYS.includes(k)) throw new Error(`strict v2 decode of a label selector fails on key ${k}`);
      }
    }
  }
  return rules;
}

/** The related rules of a parent: customize's answer, cached per cacheKey; undefined when customize failed. */
export async function relatedRules(
  port: SyncPort,
  cacheKey: string,
  hookKind: string,
  parent: Obj,
  body: unknown,
): Promise<RelatedRule[] | undefined> {
  let rules = port.customizeCache.get(cacheKey);
  if (!rules) {
    const r = await port.call(hookKind, "customize", parent, body);
    if (r.code !== 200) return undefined;
    rules = strictCustomizeResponse(r.json);
    port.customizeCache.set(cacheKey, rules);
  }
  return rules;
}

function matches(o: Obj, rule: RelatedRule): boolean {
  if (o.apiVersion !== rule.apiVersion || o.kind !== kindOfResource(rule.resource)) return false;
  if (rule.names?.length) {
    if (rule.labelSelector) throw new Error(`invalid related rule (names + selector): ${JSON.stringify(rule)}`);
    if (rule.namespace && o.metadata.namespace !== rule.namespace) return false;
    return rule.names.includes(o.metadata.name);
  }
  if (rule.namespace && o.metadata.namespace !== rule.namespace) return false;
  const want = rule.labelSelector?.matchLabels ?? {};
  return Object.entries(want).every(([k, v]) => o.metadata.labels?.[k] === v);
}

/** The objects any of the rules selects. */
export function relatedObjects(objects: Obj[], rules: RelatedRule[]): Obj[] {
  return objects.filter((o) => rules.some((rule) => matches(o, rule)));
}

/** The objects whose controller ownerReference is the parent's uid. */
export function controlledBy(objects: Obj[], parent: Obj): Obj[] {
  return objects.filter((o) =>
    o.metadata.ownerReferences?.some((ref) => ref.uid === parent.metadata.uid && ref.controller),
  );
}

/** type key → v2 key → a copy of the object; every type in `init` present, even empty. */
export function v2Maps(objects: Obj[], init: string[] = []): ObjectMaps {
  const out: ObjectMaps = {};
  for (const t of init) out[t] = {};
  for (const o of objects) {
    const k = typeKey(o.apiVersion, o.kind);
    out[k] ??= {};
    out[k][v2Key(o)] = clone(o);
  }
  return out;
}

/** One group per related rule, even an empty one, keyed like children (Metacontroller's
 * customize manager initialises a group per rule before it fills them). */
export function relatedMaps(related: Obj[], rules: RelatedRule[]): ObjectMaps {
  return v2Maps(
    related,
    rules.map((rule) => typeKey(rule.apiVersion, kindOfResource(rule.resource))),
  );
}

/** The answer's keys as the strict v2 decoder reads them: any other key fails the whole answer. */
export function strictAnswerKeys(resp: object, allowed: readonly string[], decode: string): void {
  for (const k of Object.keys(resp)) {
    if (!allowed.includes(k)) throw new Error(`${decode} fails on key ${k}`);
  }
}
