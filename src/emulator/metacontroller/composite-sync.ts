/**
 * One sync (or finalize) of one parent of a CompositeController, as Metacontroller's
 * syncParentObject does it (pkg/controller/composite/controller.go): customize (cached per
 * uid+generation), sync with the owned children and the related groups, the children applied
 * (owned ones left out deleted first), status replaced wholesale with observedGeneration.
 */
import { type KindInfo, kindInfoByKind } from "../../api/schemas.js";
import { typeKey } from "../../k8s/objects.js";
import type { RelatedRule } from "../../pipeline/types.js";
import { childTypes as ccChildTypes, compositeController } from "./controllers.js";
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

interface SyncAnswer {
  status?: Record<string, unknown>;
  children?: Obj[];
  finalized?: boolean;
  resyncAfterSeconds?: number;
}

const SYNC_ANSWER_KEYS = ["status", "children", "resyncAfterSeconds", "finalized"];

/** True when the sync changed anything (a child or the status). */
export async function syncComposite(port: SyncPort, parentIn: Obj): Promise<boolean> {
  const info = kindInfoByKind(parentIn.kind);
  if (!info) throw new Error(`not a parent: ${parentIn.kind}`);
  const parent = clone(parentIn);
  const cc = compositeController(info.hookKind, port.opts.components);
  const childTypes = ccChildTypes(info.hookKind, port.opts.components);
  const cacheKey = `${parent.metadata.uid}/${parent.metadata.generation}`;
  const rules = await relatedRules(port, cacheKey, info.hookKind, parent, { controller: cc, parent });
  if (!rules) return false;
  const related = relatedObjects(port.objects(), rules);
  const owned = controlledBy(port.objects(), parent);
  const finalizing = !!parent.metadata.deletionTimestamp;
  const hook = finalizing ? "finalize" : "sync";
  const body = syncRequest(info, parent, owned, related, rules, childTypes);
  const r = await port.call(info.hookKind, hook, parent, body);
  if (r.code !== 200) return false;
  const resp = r.json as SyncAnswer;
  strictAnswerKeys(resp, SYNC_ANSWER_KEYS, "strict v2 decode");
  if (finalizing && resp.finalized) {
    // finalized: true → Metacontroller removes its finalizer and then skips child management for
    // this answer (pkg/controller/composite/controller.go syncParentObject: ManageChildren runs only
    // while ShouldFinalize, i.e. our finalizer is still on the parent). The parent, deleting and
    // without finalizers, is gone; the garbage collector removes its children; the status write
    // finds no object (NotFound is swallowed). Children in this answer are never applied.
    const live = port.get(parent.apiVersion, parent.kind, parent.metadata.name, parent.metadata.namespace);
    if (live) await port.releaseParent(live);
    return !!live;
  }
  const changed = await manageChildren(port, info, parent, owned, resp.children ?? [], childTypes);
  return (await updateStatus(port, info, parentIn, parent, resp)) || changed;
}

function syncRequest(
  info: KindInfo,
  parent: Obj,
  owned: Obj[],
  related: Obj[],
  rules: RelatedRule[],
  childTypes: ChildType[],
) {
  const cc = compositeController(info.hookKind);
  return {
    controller: { metadata: { name: cc.metadata.name }, spec: cc.spec, status: {} },
    parent,
    children: v2Maps(
      owned,
      childTypes.map((c) => c.type),
    ),
    related: relatedMaps(related, rules),
    finalizing: !!parent.metadata.deletionTimestamp,
  };
}

/** Deletes first, then creates/updates (manage_children.go); true when a child changed. */
async function manageChildren(
  port: SyncPort,
  info: KindInfo,
  parent: Obj,
  owned: Obj[],
  desired: Obj[],
  childTypes: ChildType[],
): Promise<boolean> {
  for (const c of desired) {
    if (!childTypes.some((t) => t.type === typeKey(c.apiVersion, c.kind))) {
      throw new Error(`${info.kind} returned an undeclared child type ${typeKey(c.apiVersion, c.kind)}`);
    }
    c.metadata.namespace ??= parent.metadata.namespace;
    port.opts.checkChild?.(c);
  }
  let changed = false;
  const desiredKeys = new Set(desired.map(objKey));
  for (const o of owned) {
    if (!desiredKeys.has(objKey(o))) {
      await port.deleteChild(o);
      changed = true;
    }
  }
  for (const c of desired) changed = (await port.applyChild(parent, c, childTypes)) || changed;
  return changed;
}

/** Status replaces .status wholesale; observedGeneration comes from the generation seen at the start. */
async function updateStatus(
  port: SyncPort,
  info: KindInfo,
  parentIn: Obj,
  parent: Obj,
  resp: SyncAnswer,
): Promise<boolean> {
  const live = port.get(parent.apiVersion, parent.kind, parent.metadata.name, parent.metadata.namespace);
  if (!live) return false;
  const status = { ...(resp.status ?? {}), observedGeneration: parent.metadata.generation };
  port.opts.checkStatus?.(info.kind, status);
  if (port.sameStatus(live.status, status)) return false;
  port.statusWritten(parentIn, live);
  await port.writeStatus(live, status);
  return true;
}
