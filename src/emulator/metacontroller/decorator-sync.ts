/**
 * One sync (or finalize) of one object a DecoratorController decorates, as
 * pkg/controller/decorator/controller.go syncParentObject does it: a matching object gets the
 * finalizer first; an object that stops matching (or is deleted) while it has the finalizer is
 * finalized; attachments are the owned objects annotated with this controller's name; labels and
 * annotations of the answer are set on the object (null deletes the key), a null status leaves it.
 */
import { kindInfoByKind } from "../../api/schemas.js";
import { typeKey } from "../../k8s/objects.js";
import { selectsByAnnotations } from "./annotation-selector.js";
import { type DecoratorController, kindOfResource } from "./controllers.js";
import {
  type ChildType,
  clone,
  controlledBy,
  objKey,
  relatedMaps,
  relatedObjects,
  relatedRules,
  type SyncPort,
  strictAnswerKeys,
  v2Maps,
} from "./informer.js";
import type { Obj } from "./types.js";

const DECORATOR_ANNOTATION = "metacontroller.k8s.io/decorator-controller";
const DECORATOR_ANSWER_KEYS = ["labels", "annotations", "status", "attachments", "resyncAfterSeconds", "finalized"];

interface DecoratorAnswer {
  labels?: Record<string, string | null>;
  annotations?: Record<string, string | null>;
  status?: Record<string, unknown> | null;
  attachments?: Obj[];
  finalized?: boolean;
}

/** One decorated object's sync: its controller, the object as the sync saw it, its finalizer key. */
interface Decorated {
  dc: DecoratorController;
  obj: Obj;
  fin: string;
  finalizing: boolean;
}

/** True when the sync changed anything (the finalizer, labels, annotations, status or an attachment). */
export async function syncDecorator(port: SyncPort, dc: DecoratorController, objIn: Obj): Promise<boolean> {
  const obj = clone(objIn);
  const rule = dc.spec.resources.find(
    (r) => r.apiVersion === obj.apiVersion && kindOfResource(r.resource) === obj.kind,
  );
  if (!rule) return false;
  const fin = `${dc.metadata.name}|${obj.metadata.uid}`;
  const matches = selectsByAnnotations(rule.annotationSelector, obj.metadata.annotations ?? {});
  if (!matches && !port.decoratorFinalizers.has(fin)) return false;
  let changed = false;
  if (dc.spec.hooks.finalize && !obj.metadata.deletionTimestamp && !port.decoratorFinalizers.has(fin)) {
    port.decoratorFinalizers.add(fin);
    changed = true;
  }
  const hookKind = (h: string) => dc.spec.hooks[h].webhook.path.split("/")[2];
  const cacheKey = `${dc.metadata.name}/${obj.metadata.uid}/${obj.metadata.generation}`;
  const customizeBody = { controller: controllerOf(dc), parent: obj };
  const rules = await relatedRules(port, cacheKey, hookKind("customize"), obj, customizeBody);
  if (!rules) return changed;
  const attachmentTypes = attachmentTypesOf(dc);
  const owned = controlledBy(port.objects(), obj).filter(
    (o) =>
      o.metadata.annotations?.[DECORATOR_ANNOTATION] === dc.metadata.name &&
      attachmentTypes.some((t) => t.type === typeKey(o.apiVersion, o.kind)),
  );
  const finalizing = !!dc.spec.hooks.finalize && (!!obj.metadata.deletionTimestamp || !matches);
  const hook = finalizing ? "finalize" : "sync";
  const body = {
    controller: controllerOf(dc),
    object: obj,
    attachments: v2Maps(
      owned,
      attachmentTypes.map((t) => t.type),
    ),
    related: relatedMaps(relatedObjects(port.objects(), rules), rules),
    finalizing,
  };
  const r = await port.call(hookKind(hook), hook, obj, body);
  if (r.code !== 200) return changed;
  const resp = r.json as DecoratorAnswer;
  strictAnswerKeys(resp, DECORATOR_ANSWER_KEYS, "strict v2 decode of the decorator answer");
  const live = port.get(obj.apiVersion, obj.kind, obj.metadata.name, obj.metadata.namespace);
  if (!live) return changed;
  const d: Decorated = { dc, obj, fin, finalizing };
  changed = decorate(port, d, live, resp) || changed;
  // Attachments are managed while the object lives, or while it is deleting and still has the finalizer.
  if (obj.metadata.deletionTimestamp && !port.decoratorFinalizers.has(fin)) {
    if (![...port.decoratorFinalizers].some((f) => f.endsWith(`|${obj.metadata.uid}`))) port.removeWithDependents(live);
    return true;
  }
  return (await manageAttachments(port, d, owned, resp.attachments ?? [], attachmentTypes)) || changed;
}

/** The controller as a hook request names it. */
function controllerOf(dc: DecoratorController) {
  return { metadata: { name: dc.metadata.name }, spec: dc.spec, status: {} };
}

/** Attachment type keys with their update strategy (default OnDelete, as Metacontroller). */
function attachmentTypesOf(dc: DecoratorController): ChildType[] {
  return (dc.spec.attachments ?? []).map((a) => ({
    type: typeKey(a.apiVersion, kindOfResource(a.resource)),
    method: a.updateStrategy?.method ?? "OnDelete",
  }));
}

/** The answer's labels, annotations and status set on the live object, its finalizer released when finalized. */
function decorate(port: SyncPort, { fin, finalizing }: Decorated, live: Obj, resp: DecoratorAnswer): boolean {
  let changed = false;
  for (const field of ["labels", "annotations"] as const) {
    const next = { ...(live.metadata[field] ?? {}) };
    for (const [k, v] of Object.entries(resp[field] ?? {})) {
      if (v === null) delete next[k];
      else next[k] = v;
    }
    if (JSON.stringify(next) !== JSON.stringify(live.metadata[field] ?? {})) {
      live.metadata[field] = next;
      changed = true;
    }
  }
  if (resp.status != null && JSON.stringify(resp.status) !== JSON.stringify(live.status)) {
    live.status = resp.status;
    changed = true;
  }
  if (finalizing && resp.finalized && port.decoratorFinalizers.has(fin)) {
    port.decoratorFinalizers.delete(fin);
    changed = true;
  }
  return changed;
}

/** Owned attachments the answer left out deleted, then the answer's created or updated; true when one changed. */
async function manageAttachments(
  port: SyncPort,
  { dc, obj }: Decorated,
  owned: Obj[],
  attachments: Obj[],
  attachmentTypes: ChildType[],
): Promise<boolean> {
  // a copy: the answer stays as the hook gave it (render shows it)
  const desired = clone(attachments);
  for (const c of desired) {
    if (!attachmentTypes.some((t) => t.type === typeKey(c.apiVersion, c.kind))) {
      throw new Error(`${dc.metadata.name} returned an undeclared attachment type ${typeKey(c.apiVersion, c.kind)}`);
    }
    c.metadata.namespace ??= obj.metadata.namespace;
    c.metadata.annotations = { ...(c.metadata.annotations ?? {}), [DECORATOR_ANNOTATION]: dc.metadata.name };
    port.opts.checkChild?.(c);
  }
  let changed = false;
  const desiredKeys = new Set(desired.map(objKey));
  for (const o of owned) {
    if (desiredKeys.has(objKey(o)) || o.metadata.deletionTimestamp) continue;
    // A parent kind (TailnetIngress, TailnetEgress) is deleted through its own finalize.
    if (kindInfoByKind(o.kind)) port.delete(o.apiVersion, o.kind, o.metadata.name, o.metadata.namespace);
    else await port.deleteChild(o);
    changed = true;
  }
  for (const c of desired) changed = (await port.applyChild(obj, c, attachmentTypes, false)) || changed;
  return changed;
}
