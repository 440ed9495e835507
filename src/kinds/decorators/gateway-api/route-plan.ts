/**
 * The status of an HTTPRoute or GRPCRoute (pure): its `status.parents[]` entries for the parentRefs that name
 * a Gateway of our class, each with `Accepted` and `ResolvedRefs` (bind.ts, refs.ts).
 *
 * `status.parents` is shared: every controller whose Gateways the route names writes its own entries
 * (apis/v1 shared_types.go RouteParentStatus.ControllerName). So the answer is the route's status as the hook
 * saw it with only our entries replaced — entries of other controllers are kept as they are, in their order,
 * and ours follow in parentRef order; an entry of ours for a parentRef that no longer names a Gateway of
 * ours is dropped (the spec asks controllers to clean up their own). Metacontroller writes a decorator's
 * status whole, with UpdateStatus on a copy of the object it sent to the hook, resourceVersion included
 * (metacontroller pkg/controller/decorator/controller.go syncParentObject): if another controller wrote the
 * route meanwhile, the write is refused with a conflict, which Metacontroller ignores, and the next sync
 * starts from the new status. A write of ours can therefore never drop an entry it did not see.
 */
import { mergeConditions } from "../../../conditions/condition.js";
import { jsonEqual } from "../../../k8s/json-equal.js";
import type { K8sObject } from "../../../k8s/objects.js";
import { recordOf } from "../../../k8s/objects.js";
import { CONTROLLER_NAME, type ParentRef, readRoute } from "../../shared/gateway-api-objects.js";
import { type GatewayWorld, routeVerdicts } from "./bind.js";

interface ParentStatus {
  parentRef: Record<string, unknown>;
  controllerName: string;
  conditions: unknown[];
}

/** A parentRef as status repeats it: the spec's fields, the defaults the API server stores left as written. */
const sameRef = (a: unknown, ref: ParentRef) => jsonEqual(a, ref.raw);

export function planRouteStatus(route: K8sObject, world: GatewayWorld, now: Date): Record<string, unknown> | null {
  const status = recordOf(route.status);
  const previous = (Array.isArray(status.parents) ? status.parents : []) as ParentStatus[];
  const theirs = previous.filter((p) => recordOf(p).controllerName !== CONTROLLER_NAME);
  const oursBefore = previous.filter((p) => recordOf(p).controllerName === CONTROLLER_NAME);
  const verdicts = routeVerdicts(readRoute(route), world);
  if (verdicts.length === 0 && oursBefore.length === 0) return null;
  const gen = route.metadata.generation ?? 0;
  const ours = verdicts.map((v) => {
    const before = oursBefore.find((p) => sameRef(p.parentRef, v.ref))?.conditions;
    return {
      parentRef: v.ref.raw,
      controllerName: CONTROLLER_NAME,
      conditions: mergeConditions(before, [v.accepted, v.resolvedRefs], gen, now),
    };
  });
  return { ...status, parents: [...theirs, ...ours] };
}
