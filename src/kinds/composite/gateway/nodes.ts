/**
 * Which Headscale nodes are the gateway's, and the fresh writer's second check, node identity (pure; issue 32,
 * design §2.4). Replica i's node is the one its state Secret's device_id names (src/kinds/shared/replica-nodes.ts
 * planReplicaNodes, the binding every kind shares); "ours" is exactly the gateway tag and a pre-auth key this
 * gateway minted. Every node wearing the tag, or registered with one of our keys, must be one of:
 *   (a) bound to a replica with continuity — the id and node key status.nodes[] recorded for that replica (or
 *       the accepted key), or a first binding whose node was created after that replica's state Secret;
 *   (b) a recorded predecessor awaiting deletion (offline);
 *   (c) an unbound node of ours younger than REGISTRATION_GRACE_SECONDS while a replica has no device_id yet,
 *       or, while the legacy gateway Deployment still runs (the upgrade), that Deployment's node, or a node of the
 *       previous version's single-use key (spent: no other machine can register with it).
 * Anything else blocks: a rogue node (the tag, a key we did not mint or none), an online unbound node of ours
 * past the grace (someone holding the reusable key registered a machine outside the cluster: it cannot be bound,
 * binding needs write access to a state Secret only that replica's ServiceAccount has), a state Secret naming a
 * node that is not ours (ForeignNode). A continuity break is IdentityChanged (Registered, decide.ts).
 */
import { nodesOfKeys, nodesTagged } from "../../../headscale/lists.js";
import type { HsNode } from "../../../headscale/types.js";
import { wantedLabel } from "../../shared/replica.js";
import {
  isOurNode,
  type NodeStatusItem,
  planReplicaNodes,
  REGISTRATION_GRACE_SECONDS,
  type ReplicaBinding,
  type ReplicaNodesPlan,
  type ReplicaPodFact,
  type StateFact,
} from "../../shared/replica-nodes.js";

export interface StatusNode {
  id: string;
  name: string;
  nodeKey: string;
  preAuthKeyId: string;
}

/** A first binding's node may predate its state Secret's creation timestamp by this much (clock skew). */
export const FIRST_BINDING_SKEW_SECONDS = 5;

export interface NodeAnalysis {
  ourKeyIds: string[];
  plan: ReplicaNodesPlan;
  /** Replica 0's node (else the lowest bound replica's): status.node, the single-replica messages. */
  current?: HsNode;
  /** The bound nodes, by replica: the routes are approved on them, and only on them. */
  currents: HsNode[];
  /** Predecessors and unbound nodes of ours, offline past the grace: what staleNodes Delete removes. */
  stale: HsNode[];
  /** Why node identity is not verified, one entry per offending node or replica; empty when verified. */
  provenanceProblems: string[];
  /** Replicas whose bound node's key differs from the recorded one (and is not the accepted key). */
  identityChanges: ReplicaBinding[];
}

export interface NodeAnalysisInput {
  nodes: readonly HsNode[];
  tag: string;
  ourKeyIds: readonly string[];
  replicas: number;
  hostname: string;
  facts: readonly StateFact[];
  running: ReadonlySet<number>;
  pods: readonly ReplicaPodFact[];
  record: readonly NodeStatusItem[];
  acceptedNodeKey?: string;
  now: Date;
  /** The legacy gateway Deployment still runs (the upgrade, §2.8): its unbound node is not a rogue one. */
  migrating?: boolean;
}

const createdMs = (n: HsNode) => (n.createdAt ? Date.parse(n.createdAt) : 0) || 0;

/** Oldest first: by createdAt, then by numeric id (Headscale ids only grow). */
export function byAge(a: HsNode, b: HsNode): number {
  return createdMs(a) - createdMs(b) || Number(a.id) - Number(b.id) || a.id.localeCompare(b.id);
}

export function describeNode(n: HsNode): string {
  return `node ${n.id} "${n.givenName || n.name}"`;
}

export function isOurs(n: HsNode, tag: string, ourKeyIds: readonly string[]): boolean {
  return isOurNode(n, tag, new Set(ourKeyIds));
}

function whyNotOurs(n: HsNode, tag: string, ourKeyIds: readonly string[]): string {
  const keys = ourKeyIds.length === 1 ? ourKeyIds[0] : ourKeyIds.join(" or ");
  if (n.preAuthKey && ourKeyIds.includes(n.preAuthKey.id)) {
    return `${describeNode(n)} was registered with bootstrap key ${n.preAuthKey.id} but carries tags [${n.tags.join(", ")}], not exactly ${tag}`;
  }
  const how = n.preAuthKey ? `pre-auth key ${n.preAuthKey.id}` : `no pre-auth key (${n.registerMethod})`;
  return `${describeNode(n)} carries ${tag} but was registered with ${how}, not with this gateway's bootstrap key ${keys || "(none yet)"}`;
}

const isBound = (b: ReplicaBinding) => !!b.node && b.verdict !== "foreign";

/** Why one node of ours that no replica holds is refused, or undefined when it is allowed (b, c). */
function unboundProblem(n: HsNode, input: NodeAnalysisInput, plan: ReplicaNodesPlan): string | undefined {
  const predecessor = plan.bindings.find((b) => b.predecessor?.id === n.id || (b.record?.id === n.id && !b.node));
  if (predecessor) {
    if (!n.online || !predecessor.node) return undefined;
    return `${describeNode(n)} is replica ${predecessor.index}'s previous node but is still online, while the replica runs as ${describeNode(predecessor.node)}`;
  }
  if (plan.removed.some((r) => r.nodes.some((x) => x.id === n.id))) return undefined;
  // a single-use key of ours is the previous version's (every key now is reusable): the legacy pod's node, whose
  // key is spent — it goes offline with that pod and is deleted then (the upgrade, §2.8)
  const legacy = n.preAuthKey?.reusable === false;
  if (!n.online || input.migrating || legacy) return undefined;
  const young = createdMs(n) > input.now.getTime() - REGISTRATION_GRACE_SECONDS * 1000;
  const waiting = plan.bindings.some((b) => !b.node && b.verdict !== "foreign");
  if (young && waiting) return undefined;
  return `${describeNode(n)} is online and was registered with this gateway's bootstrap key ${n.preAuthKey?.id}, but no replica's state Secret names it: a machine outside the cluster holds the key`;
}

/** A first binding is continuity only if the node registered after the replica's state Secret existed. */
function firstBindingProblem(b: ReplicaBinding, facts: readonly StateFact[]): string | undefined {
  const created = facts.find((f) => f.index === b.index)?.created;
  if (b.verdict !== "firstBinding" || !b.node || !created) return undefined;
  if (createdMs(b.node) >= created.getTime() - FIRST_BINDING_SKEW_SECONDS * 1000) return undefined;
  return `replica ${b.index}: its state Secret names ${describeNode(b.node)}, registered before the state Secret was created`;
}

export function analyzeNodes(input: NodeAnalysisInput): NodeAnalysis {
  const { tag } = input;
  const ourKeyIds = [...new Set(input.ourKeyIds)].sort((a, b) => Number(a) - Number(b) || a.localeCompare(b));
  const plan = planReplicaNodes({
    replicas: input.replicas,
    facts: input.facts,
    running: input.running,
    pods: input.pods,
    nodes: input.nodes,
    ownKeys: new Set(ourKeyIds),
    tag,
    record: input.record,
    now: input.now,
    ...(input.acceptedNodeKey ? { acceptedNodeKey: input.acceptedNodeKey } : {}),
    wanted: (i) => wantedLabel(input.hostname, i),
  });
  const bound = plan.bindings.filter(isBound);
  const boundIds = new Set(bound.map((b) => b.node?.id));
  const currents = bound.map((b) => b.node as HsNode);
  const current = bound.find((b) => b.index === 0)?.node ?? currents[0];
  const problems: { at: HsNode | undefined; why: string }[] = [];
  for (const b of plan.bindings.filter((x) => x.verdict === "foreign")) {
    const why =
      b.deviceId === "invalid"
        ? `replica ${b.index}: its state Secret's device_id is not a node id`
        : `replica ${b.index}: its state Secret names node ${b.deviceId}, which this gateway did not register`;
    problems.push({ at: undefined, why });
  }
  for (const b of bound) {
    const why = firstBindingProblem(b, input.facts);
    if (why) problems.push({ at: b.node, why });
  }
  const candidates = [...new Set([...nodesTagged(input.nodes, tag), ...nodesOfKeys(input.nodes, ourKeyIds)])];
  for (const n of candidates.sort(byAge)) {
    if (boundIds.has(n.id)) continue;
    if (!isOurs(n, tag, ourKeyIds)) {
      problems.push({ at: n, why: whyNotOurs(n, tag, ourKeyIds) });
      continue;
    }
    const why = unboundProblem(n, input, plan);
    if (why) problems.push({ at: n, why });
  }
  return {
    ourKeyIds,
    plan,
    ...(current ? { current } : {}),
    currents,
    stale: plan.deletes,
    provenanceProblems: problems.map((p) => p.why),
    identityChanges: plan.bindings.filter((b) => b.verdict === "identityChanged"),
  };
}

/** status.node: replica 0's entry in the shape status.node has always had. */
export function statusNodeOf(n: NodeStatusItem | HsNode): StatusNode {
  if ("replica" in n) return { id: n.id, name: n.name, nodeKey: n.nodeKey, preAuthKeyId: n.preAuthKeyId ?? "" };
  return { id: n.id, name: n.givenName || n.name, nodeKey: n.nodeKey, preAuthKeyId: n.preAuthKey?.id ?? "" };
}

export function previousStatusNode(status: Record<string, unknown>): StatusNode | undefined {
  const n = status.node as Partial<StatusNode> | undefined;
  if (!n || typeof n !== "object" || typeof n.id !== "string" || !n.id) return undefined;
  return {
    id: n.id,
    name: typeof n.name === "string" ? n.name : "",
    nodeKey: typeof n.nodeKey === "string" ? n.nodeKey : "",
    preAuthKeyId: typeof n.preAuthKeyId === "string" ? n.preAuthKeyId : "",
  };
}

/** Every pre-auth key id the previous status names (status.node, status.nodes[], status.preAuthKeyIds). */
export function recordedKeyIdsOf(status: Record<string, unknown>): string[] {
  const ids = new Set<string>();
  const node = previousStatusNode(status);
  if (node?.preAuthKeyId) ids.add(node.preAuthKeyId);
  for (const n of Array.isArray(status.nodes) ? status.nodes : []) {
    const id = (n as { preAuthKeyId?: unknown } | null)?.preAuthKeyId;
    if (typeof id === "string" && /^[0-9]+$/.test(id)) ids.add(id);
  }
  for (const id of Array.isArray(status.preAuthKeyIds) ? status.preAuthKeyIds : []) {
    if (typeof id === "string" && /^[0-9]+$/.test(id)) ids.add(id);
  }
  return [...ids];
}
