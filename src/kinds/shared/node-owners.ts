/**
 * Which Headscale nodes the operator registered for which object, and whether an egress may target them
 * (pure; the Tailnet's policy render and the egress's own status both call it, so the grant and the
 * status agree — issue 31 item 2).
 *
 * Why: `Tailnet.spec.allowedEgressTargets` is the admins' allowlist of addresses (often the whole tailnet
 * range, 100.64.0.0/10). Without this rule a tenant's egress naming another object's agent — the admins'
 * kube-api ingress, another tenant's ingress, egress or gateway — got a grant to it on its ports, although
 * that ingress's `allowFrom` does not name the tenant: Headscale's grants are additive (juanfont/headscale
 * hscontrol/policy/v2/filter.go compiles every grant into the filter), so the egress grant alone opens it.
 *
 * A node is an object's when it registered with a pre-auth key the object minted (tenancy.ts ownKeyIds:
 * status.preAuthKeyIds, written by the operator only) — never because it carries the object's tag or
 * name, which an admin's machine or a tenant's node can carry too.
 */

import { API_VERSION } from "../../api/schemas.js";
import type { HsPreAuthKey } from "../../headscale/types.js";
import { type K8sObject as Obj, type ObjectMaps, objectsOf, recordOf } from "../../k8s/objects.js";
import { cidrContains, parseCidrOrIp } from "../../net/cidr.js";
import { buildNodeIndex, type NodeRef, type ResolvedTarget, resolveTargetHost } from "../../policy/targets.js";
import { tailnetRefName } from "./tailnet-ref.js";
import { ownKeyIds } from "./tenancy.js";
import { effectiveTag } from "./workload.js";

/** A node as the render sees it: the policy's NodeRef, with Headscale's id and registering key when known. */
export type OwnedNodeRef = NodeRef & { id?: string; preAuthKey?: Pick<HsPreAuthKey, "id"> | null };

/** Node → the object whose key registered it, for the operator's agent nodes only. */
export type ManagedNodes = ReadonlyMap<OwnedNodeRef, Obj>;

const strings = (v: unknown): string[] => (Array.isArray(v) ? v.filter((x): x is string => typeof x === "string") : []);
const idOf = (o: Obj) => `${o.kind} ${o.metadata.namespace ?? ""}/${o.metadata.name}`;

/**
 * Every node the operator registered for one of `objects` (the Tailnet's ingresses, egresses and gateways),
 * with its owner. One pass over the node list; the key list is rebuilt from the nodes only for an object from
 * before status.preAuthKeyIds (ownKeyIds adopts its agent-shaped keys, as tagTakenFromTailnet does).
 */
export function managedNodes(
  objects: readonly Obj[],
  nodes: readonly OwnedNodeRef[],
  settings: { tagPrefix: string; ttlSeconds: number },
): ManagedNodes {
  const out = new Map<OwnedNodeRef, Obj>();
  if (!objects.length || !nodes.length) return out;
  let keys: HsPreAuthKey[] | undefined;
  const keysOfNodes = () => {
    keys ??= [
      ...new Map(
        nodes.flatMap((n) => (n.preAuthKey && "aclTags" in n.preAuthKey ? [[n.preAuthKey.id, n.preAuthKey]] : [])),
      ).values(),
    ] as HsPreAuthKey[];
    return keys;
  };
  const ownerOfKey = new Map<string, Obj>();
  for (const o of objects) {
    const legacy = !Array.isArray(recordOf(o.status).preAuthKeyIds);
    const ids = ownKeyIds(o, effectiveTag(o, settings.tagPrefix), [], legacy ? keysOfNodes() : undefined, {
      ttlSeconds: settings.ttlSeconds,
    });
    for (const id of ids) if (!ownerOfKey.has(id)) ownerOfKey.set(id, o);
  }
  if (!ownerOfKey.size) return out;
  for (const n of nodes) {
    const owner = n.preAuthKey ? ownerOfKey.get(n.preAuthKey.id) : undefined;
    if (owner) out.set(n, owner);
  }
  return out;
}

/**
 * Whether `owner` lets the agents tagged `tag` connect to its nodes: a TailnetIngress whose spec.allowFrom
 * names the tag or "*". An egress's or a gateway's agent serves nobody on the tailnet (its own ports are
 * for probes and the data plane inside the cluster), so no other egress may target it.
 */
export function admitsTag(owner: Obj, tag: string): boolean {
  if (owner.kind !== "TailnetIngress") return false;
  const allowFrom = strings(recordOf(owner.spec).allowFrom);
  return allowFrom.includes(tag) || allowFrom.includes("*");
}

const nodeText = (n: OwnedNodeRef) => `Headscale node ${n.id ?? "?"} (${n.givenName || n.name})`;

function why(n: OwnedNodeRef, owner: Obj, tag: string): string {
  const whose = `${nodeText(n)} is an agent of ${idOf(owner)}`;
  return owner.kind === "TailnetIngress"
    ? `${whose}, whose spec.allowFrom does not name ${tag}`
    : `${whose}, which accepts no connections from egress agents`;
}

/**
 * Why the egress `self` (its agents tagged `tag`) may not target `resolved`, or undefined when it may: the
 * target is, or its prefix holds, a node the operator registered for another object that does not admit the
 * tag. A CIDR covering such a node is refused whole: a grant cannot carve a node out of a prefix.
 */
export function targetRefusal(
  self: Obj,
  tag: string,
  resolved: ResolvedTarget | null,
  managed: ManagedNodes,
): string | undefined {
  if (!resolved || managed.size === 0) return undefined;
  const refused = (n: OwnedNodeRef): boolean => {
    const owner = managed.get(n);
    return owner !== undefined && idOf(owner) !== idOf(self) && !admitsTag(owner, tag);
  };
  if (resolved.node && refused(resolved.node)) return why(resolved.node, managed.get(resolved.node) as Obj, tag);
  if (resolved.kind === "node") return undefined;
  for (const [n, owner] of managed) {
    if (!refused(n)) continue;
    const inside = n.ipAddresses.some((ip) => {
      const c = parseCidrOrIp(ip);
      return c !== null && cidrContains(resolved.prefix, c);
    });
    if (inside) return `${resolved.address} holds ${why(n, owner, tag)}`;
  }
  return undefined;
}

/**
 * The targets of the egress `self` (agents tagged `tag`) that node-owners refuses, name → why: the Tailnet's
 * render leaves them out of the policy, the egress reports them (TargetNotAllowed). `owners` are the
 * Tailnet's ingresses, egresses and gateways.
 */
export function refusedTargets(
  self: Obj,
  tag: string,
  targets: readonly { name: string; host: string }[],
  nodes: readonly OwnedNodeRef[],
  owners: readonly Obj[],
  settings: { tagPrefix: string; ttlSeconds: number; baseDomain?: string },
  managed: ManagedNodes = managedNodes(owners, nodes, settings),
): Map<string, string> {
  const out = new Map<string, string>();
  if (!managed.size) return out;
  const index = buildNodeIndex(nodes, settings.baseDomain);
  for (const t of targets) {
    const why = targetRefusal(self, tag, resolveTargetHost(t.host, index), managed);
    if (why) out.set(t.name, why);
  }
  return out;
}

const OWNER_KINDS = ["TailnetIngress", "TailnetEgress", "TailnetGateway"];

/** The ingresses, egresses and gateways among `related` that reference the Tailnet `tailnet` (the egress's view). */
export function ownersIn(related: ObjectMaps | undefined, tailnet: string | undefined): Obj[] {
  return OWNER_KINDS.flatMap((kind) => objectsOf(related, API_VERSION, kind)).filter(
    (o) => tailnet !== undefined && tailnetRefName(o) === tailnet,
  );
}
