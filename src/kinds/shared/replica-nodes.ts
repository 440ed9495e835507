/**
 * Which Headscale node each replica is (issue 32), decided from observation alone (pure): replica i's node is the
 * one whose id is the `device_id` containerboot wrote into replica i's state Secret (tailscale
 * cmd/containerboot/kube.go storeDeviceID; Headscale's StableID is the decimal node id, hscontrol/types/node.go), and
 * it counts only if the node is ours (exactly the tag, registered with a key this object minted). The plan names the
 * Headscale writes: predecessors, unbound nodes and removed replicas' nodes to delete, and renames back to the
 * wanted MagicDNS label. Safety invariants (test/kinds/shared/replica-nodes.test.ts):
 * 1. a node named by an active replica's observed device_id is never deleted;
 * 2. an online node is never deleted (finalize aside, planFinalNodes);
 * 3. only nodes of ours are deleted, and only from a node list this sync read;
 * 4. a lagging status record can only name the bound node, a deleted one or an offline predecessor.
 */

import type { HsNode } from "../../headscale/types.js";
import type { K8sObject } from "../../k8s/objects.js";
import { isStateSecret, replicaIndexOf, wantedLabel } from "./replica.js";
import { secretValue } from "./secrets.js";

/** An offline node is deleted only after this long: a pod that merely reconnects keeps its node. */
export const SUPERSEDED_GRACE_SECONDS = 60;
/** How long a replica without a device_id counts as registering (first start, scale-up, lost state). */
export const REGISTRATION_GRACE_SECONDS = 120;

/** The only state Secret key the hook reads (containerboot's). */
export const DEVICE_ID_KEY = "device_id";
/** tailscaled's machine key entry (ipn/store.go MachineKeyStateKey): its presence is tested, its value never read. */
export const MACHINE_KEY_KEY = "_machinekey";

export interface StateFact {
  index: number;
  name: string;
  created?: Date;
  /** A decimal node id; "invalid" when the key holds anything else. */
  deviceId?: string;
  hasState: boolean;
}

/**
 * The one accessor of state Secret data: per replica, device_id and whether a machine key is present. Nothing else
 * is read, and nothing read here is ever put in an answer (replica.ts keptStateSecret).
 */
export function stateFacts(children: readonly K8sObject[]): StateFact[] {
  const out: StateFact[] = [];
  for (const s of children) {
    if (!isStateSecret(s) || s.metadata.deletionTimestamp) continue;
    const index = replicaIndexOf(s);
    if (index === undefined) continue;
    const raw = secretValue(s, DEVICE_ID_KEY)?.trim();
    const data = s.data as Record<string, unknown> | undefined;
    const created = s.metadata.creationTimestamp ? new Date(s.metadata.creationTimestamp) : undefined;
    out.push({
      index,
      name: s.metadata.name,
      ...(created && !Number.isNaN(created.getTime()) ? { created } : {}),
      ...(raw ? { deviceId: /^[0-9]{1,19}$/.test(raw) ? raw : "invalid" } : {}),
      hasState: typeof data?.[MACHINE_KEY_KEY] === "string",
    });
  }
  return out.sort((a, b) => a.index - b.index);
}

/** status.nodes[] item (src/api/schemas/common.ts nodeStatusItem). */
export interface NodeStatusItem {
  replica: number;
  id: string;
  name: string;
  addresses: string[];
  nodeKey: string;
  machineKey: string;
  preAuthKeyId?: string;
  online: boolean;
  /** The node this replica had before it re-registered, until it is deleted. */
  predecessorId?: string;
}

/** The previous status.nodes[] as recorded (malformed items are dropped). */
export function recordedNodes(status: unknown): NodeStatusItem[] {
  const items = (status as { nodes?: unknown } | undefined)?.nodes;
  if (!Array.isArray(items)) return [];
  return items.flatMap((x): NodeStatusItem[] => {
    const o = x as Record<string, unknown>;
    if (typeof o?.replica !== "number" || typeof o.id !== "string" || typeof o.nodeKey !== "string") return [];
    const str = (v: unknown) => (typeof v === "string" ? v : "");
    return [
      {
        replica: o.replica,
        id: o.id,
        name: str(o.name),
        addresses: Array.isArray(o.addresses) ? o.addresses.filter((a): a is string => typeof a === "string") : [],
        nodeKey: o.nodeKey,
        machineKey: str(o.machineKey),
        ...(typeof o.preAuthKeyId === "string" ? { preAuthKeyId: o.preAuthKeyId } : {}),
        online: o.online === true,
        ...(typeof o.predecessorId === "string" ? { predecessorId: o.predecessorId } : {}),
      },
    ];
  });
}

export type Verdict =
  | "stable"
  | "firstBinding"
  | "reregistered"
  | "identityChanged"
  | "foreign"
  | "registering"
  | "stateLost";

export interface ReplicaBinding {
  index: number;
  verdict: Verdict;
  /** The node the state Secret names, when it is ours. */
  node?: HsNode;
  /** The raw device_id, for messages (a decimal id, or "invalid"). */
  deviceId?: string;
  record?: NodeStatusItem;
  /** The node this replica had before (re-registered), while Headscale still lists it. */
  predecessor?: HsNode;
  /** The label the node should carry. */
  wanted: string;
}

export interface RemovedReplica {
  index: number;
  /** Its nodes to delete (bound and predecessor); its children go once every one of them is gone. */
  nodes: HsNode[];
  /** Why it cannot go yet (its pod still runs, a node is online, the node list was not read). */
  waiting?: string;
}

export interface ReplicaPodFact {
  index: number;
  startedAt?: Date;
}

export interface ReplicaNodesInput {
  replicas: number;
  facts: readonly StateFact[];
  /** Replica indexes whose StatefulSet or pod is still observed. */
  running: ReadonlySet<number>;
  pods: readonly ReplicaPodFact[];
  /** Headscale's node list; undefined when this sync could not read it (then nothing is written). */
  nodes: readonly HsNode[] | undefined;
  ownKeys: ReadonlySet<string>;
  tag: string;
  record: readonly NodeStatusItem[];
  now: Date;
  /** tailnet.internal/accept-node-key: a node key the user approved. */
  acceptedNodeKey?: string;
  /** wantedLabel(hostname, i) */
  wanted: (index: number) => string;
}

/** ReplicaNodesInput.wanted for an object's host name. */
export const wantedOf = (hostname: string) => (index: number) => wantedLabel(hostname, index);

export interface ReplicaNodesPlan {
  bindings: ReplicaBinding[];
  removed: RemovedReplica[];
  /** Predecessors and unbound nodes to delete now (removed replicas' nodes are in `removed`). */
  deletes: HsNode[];
  /** Ours, bound to nothing, online: reported, never deleted. */
  unboundOnline: HsNode[];
  renames: { node: HsNode; name: string }[];
  /** Why a wanted label stays taken (a node that is not ours holds it). */
  renameBlocked: string[];
}

export const isOurNode = (n: HsNode, tag: string, ownKeys: ReadonlySet<string>) =>
  n.tags.length === 1 && n.tags[0] === tag && !!n.preAuthKey && ownKeys.has(n.preAuthKey.id);

const offlineFor = (n: HsNode, now: Date, seconds: number) =>
  !n.online && (!n.lastSeen || Date.parse(n.lastSeen) <= now.getTime() - seconds * 1000);

const olderThan = (n: HsNode, now: Date, seconds: number) =>
  !n.createdAt || Date.parse(n.createdAt) <= now.getTime() - seconds * 1000;

const byId = (a: HsNode, b: HsNode) => Number(a.id) - Number(b.id) || a.id.localeCompare(b.id);

function bindReplica(input: ReplicaNodesInput, index: number, byNodeId: Map<string, HsNode>): ReplicaBinding {
  const fact = input.facts.find((f) => f.index === index);
  const record = input.record.find((r) => r.replica === index);
  const base = { index, wanted: input.wanted(index), ...(record ? { record } : {}) };
  const ours = (n: HsNode | undefined) => (n && isOurNode(n, input.tag, input.ownKeys) ? n : undefined);
  if (fact?.deviceId) {
    const node = ours(byNodeId.get(fact.deviceId));
    if (!node) return { ...base, verdict: "foreign", deviceId: fact.deviceId };
    const bound = { ...base, node, deviceId: fact.deviceId };
    if (!record) return { ...bound, verdict: "firstBinding" };
    if (node.id !== record.id) {
      const predecessor = ours(byNodeId.get(record.id));
      return { ...bound, verdict: "reregistered", ...(predecessor ? { predecessor } : {}) };
    }
    const predecessor = record.predecessorId ? ours(byNodeId.get(record.predecessorId)) : undefined;
    const more = predecessor ? { predecessor } : {};
    if (node.nodeKey !== record.nodeKey && node.nodeKey !== input.acceptedNodeKey)
      return { ...bound, ...more, verdict: "identityChanged" };
    return { ...bound, ...more, verdict: "stable" };
  }
  if (!record) return { ...base, verdict: "registering" };
  const started = input.pods.find((p) => p.index === index)?.startedAt;
  const recorded = byNodeId.get(record.id);
  const inGrace = !started || started.getTime() > input.now.getTime() - REGISTRATION_GRACE_SECONDS * 1000;
  if (inGrace || recorded?.online) return { ...base, verdict: "registering" };
  return { ...base, verdict: "stateLost" };
}

/** Pure: the bindings of every replica and the Headscale writes they call for. */
export function planReplicaNodes(input: ReplicaNodesInput): ReplicaNodesPlan {
  const nodes = input.nodes ?? [];
  const byNodeId = new Map(nodes.map((n) => [n.id, n]));
  const bindings = Array.from({ length: input.replicas }, (_, i) => bindReplica(input, i, byNodeId));
  // invariant 1: whatever an active replica's device_id names is kept, ours or not
  const named = new Set(input.facts.filter((f) => f.index < input.replicas && f.deviceId).map((f) => f.deviceId));
  const ours = (n: HsNode) => isOurNode(n, input.tag, input.ownKeys);
  const deletable = (n: HsNode) => ours(n) && !named.has(n.id) && offlineFor(n, input.now, SUPERSEDED_GRACE_SECONDS);
  const removed = removedReplicas(input, byNodeId, named);
  const claimed = new Set<string>();
  for (const b of bindings) {
    if (b.node) claimed.add(b.node.id);
    if (b.record) claimed.add(b.record.id);
    if (b.predecessor) claimed.add(b.predecessor.id);
  }
  for (const r of removed) for (const n of r.nodes) claimed.add(n.id);
  for (const f of input.facts) if (f.deviceId) claimed.add(f.deviceId);
  const deletes: HsNode[] = [];
  if (input.nodes) {
    for (const b of bindings) if (b.predecessor && deletable(b.predecessor)) deletes.push(b.predecessor);
    for (const n of nodes) {
      if (claimed.has(n.id) || !ours(n)) continue;
      if (deletable(n) && olderThan(n, input.now, REGISTRATION_GRACE_SECONDS)) deletes.push(n);
    }
  }
  const unboundOnline = nodes.filter((n) => ours(n) && !claimed.has(n.id) && n.online).sort(byId);
  const { renames, renameBlocked } = planRenames(bindings, nodes, input);
  return { bindings, removed, deletes: deletes.sort(byId), unboundOnline, renames, renameBlocked };
}

function removedReplicas(
  input: ReplicaNodesInput,
  byNodeId: Map<string, HsNode>,
  named: ReadonlySet<string | undefined>,
): RemovedReplica[] {
  const indexes = new Set<number>();
  for (const f of input.facts) if (f.index >= input.replicas) indexes.add(f.index);
  for (const r of input.record) if (r.replica >= input.replicas) indexes.add(r.replica);
  for (const i of input.running) if (i >= input.replicas) indexes.add(i);
  return [...indexes]
    .sort((a, b) => a - b)
    .map((index) => {
      const ids = new Set<string>();
      const fact = input.facts.find((f) => f.index === index);
      const record = input.record.find((r) => r.replica === index);
      if (fact?.deviceId) ids.add(fact.deviceId);
      if (record) ids.add(record.id);
      if (record?.predecessorId) ids.add(record.predecessorId);
      const nodes = [...ids]
        .map((id) => byNodeId.get(id))
        .filter((n): n is HsNode => !!n && isOurNode(n, input.tag, input.ownKeys) && !named.has(n.id))
        .sort(byId);
      const waiting = !input.nodes
        ? "the node list could not be read"
        : input.running.has(index)
          ? "its pod is still running"
          : nodes.find((n) => n.online)
            ? `node ${nodes.find((n) => n.online)?.givenName} is still online`
            : undefined;
      return { index, nodes, ...(waiting ? { waiting } : {}) };
    });
}

function planRenames(bindings: readonly ReplicaBinding[], nodes: readonly HsNode[], input: ReplicaNodesInput) {
  const renames: { node: HsNode; name: string }[] = [];
  const renameBlocked: string[] = [];
  if (!input.nodes) return { renames, renameBlocked };
  for (const b of bindings) {
    // only a settled binding is renamed: a predecessor still holding the name is deleted first
    if (!b.node || b.predecessor || (b.verdict !== "stable" && b.verdict !== "firstBinding")) continue;
    if (b.node.givenName === b.wanted) continue;
    const holder = nodes.find((n) => n.id !== b.node?.id && n.givenName === b.wanted);
    if (!holder) renames.push({ node: b.node, name: b.wanted });
    else if (!isOurNode(holder, input.tag, input.ownKeys))
      renameBlocked.push(
        `replica ${b.index}: ${b.wanted} is held by node ${holder.id}, which this object did not register`,
      );
  }
  return { renames, renameBlocked };
}

/** status.nodes[]: one item per bound replica, sorted by replica (deterministic). */
export function statusNodes(plan: ReplicaNodesPlan, deleted: ReadonlySet<string>): NodeStatusItem[] {
  const out: NodeStatusItem[] = [];
  for (const b of plan.bindings) {
    if (!b.node) {
      // nothing bound yet: the record stays, so a later binding can tell continuity from a re-registration
      if (b.record) out.push(b.record);
      continue;
    }
    // an identity change keeps the recorded key: the condition stays until the key is accepted
    const nodeKey = b.verdict === "identityChanged" && b.record ? b.record.nodeKey : b.node.nodeKey;
    const predecessorId = b.predecessor && !deleted.has(b.predecessor.id) ? b.predecessor.id : undefined;
    out.push({
      replica: b.index,
      id: b.node.id,
      name: b.node.givenName || b.node.name,
      addresses: [...b.node.ipAddresses].sort(),
      nodeKey,
      machineKey: b.node.machineKey,
      ...(b.node.preAuthKey ? { preAuthKeyId: b.node.preAuthKey.id } : {}),
      online: b.node.online,
      ...(predecessorId ? { predecessorId } : {}),
    });
  }
  return out;
}

/** Finalize: every node of ours goes (bound, predecessor or unbound), online or not — the pods are going away. */
export function planFinalNodes(nodes: readonly HsNode[], tag: string, ownKeys: ReadonlySet<string>): HsNode[] {
  return nodes.filter((n) => isOurNode(n, tag, ownKeys)).sort(byId);
}

export type NodeIdentityReason =
  | "Stable"
  | "Registering"
  | "Migrating"
  | "IdentityChanged"
  | "Reregistered"
  | "StateLost"
  | "ForeignNode";

export interface NodeIdentityVerdict {
  status: "True" | "False";
  reason: NodeIdentityReason;
  message: string;
}

const short = (key: string) => {
  const body = key.slice(key.indexOf(":") + 1);
  return `${key.slice(0, key.indexOf(":") + 1)}${body.slice(0, 8)}…`;
};

const PRIORITY = [
  ["foreign", "ForeignNode"],
  ["identityChanged", "IdentityChanged"],
  ["stateLost", "StateLost"],
  ["reregistered", "Reregistered"],
] as const satisfies readonly (readonly [Verdict, NodeIdentityReason])[];

function describe(b: ReplicaBinding): string {
  switch (b.verdict) {
    case "foreign":
      return b.deviceId === "invalid"
        ? `replica ${b.index}: its state Secret's device_id is not a node id`
        : `replica ${b.index}: its state Secret names node ${b.deviceId}, which this object did not register`;
    case "identityChanged":
      return `replica ${b.index}: node ${b.node?.id} (${b.node?.givenName}) changed its node key from ${short(b.record?.nodeKey ?? "")} to ${short(b.node?.nodeKey ?? "")} while its state persisted`;
    case "stateLost":
      return `replica ${b.index}: no node in its state Secret ${REGISTRATION_GRACE_SECONDS}s after its pod started, and its recorded node ${b.record?.id} is offline`;
    default:
      return `replica ${b.index}: registered node ${b.node?.id} while its previous node ${b.predecessor?.id ?? b.record?.id} still exists`;
  }
}

/**
 * The NodeIdentity condition (pure). On an agent a False verdict does not stop Ready: the data plane works, and the
 * alert TailnetNodeIdentityChanged reports it.
 */
export function nodeIdentityVerdict(plan: ReplicaNodesPlan, replicas: number, migrating: boolean): NodeIdentityVerdict {
  for (const [v, reason] of PRIORITY) {
    // a re-registration is a problem only while its predecessor still exists
    const hit = plan.bindings.filter((b) => b.verdict === v && (v !== "reregistered" || b.predecessor));
    if (hit.length) return { status: "False", reason, message: hit.map(describe).join("; ") };
  }
  if (migrating)
    return {
      status: "True",
      reason: "Migrating",
      message: "the agent from before per-replica identity still runs; it goes once every replica is bound",
    };
  const bound = plan.bindings.filter((b) => b.node).length;
  if (bound < replicas)
    return { status: "True", reason: "Registering", message: `${bound} of ${replicas} replicas bound to a node` };
  const names = plan.bindings.map((b) => `${b.index}=${b.node?.id}`).join(", ");
  return {
    status: "True",
    reason: "Stable",
    message: replicas ? `every replica keeps its node (${names})` : "no replicas",
  };
}
