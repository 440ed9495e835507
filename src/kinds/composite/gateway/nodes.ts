/**
 * Which Headscale nodes are the gateway's (pure). api.md "Ours": a node carrying exactly the
 * gateway tag and registered with the bootstrap key in the Secret child or the one recorded in
 * status.node.preAuthKeyId. The current node is the newest of ours; every other node of ours is
 * stale. Provenance (the fresh writer's second check) looks at the node that registered for the
 * gateway most recently — the newest node with the gateway tag or one of our keys — and at any node
 * wearing the gateway tag that was not registered with a bootstrap-style key: both must be ours.
 *
 * With spec.replicas N > 1 every pod registers with the same reusable bootstrap key, so "ours" also counts
 * the keys recorded in status.nodes[]; the current nodes are the newest N of ours (`currents`), and a node of
 * ours beyond them is stale once it is offline (an online one still has its pod, e.g. mid-rollout). The
 * identity check runs per current node against its status.nodes[] entry.
 */
import { nodesOfKeys, nodesTagged } from "../../../headscale/lists.js";
import type { HsNode } from "../../../headscale/types.js";

export interface StatusNode {
  id: string;
  name: string;
  nodeKey: string;
  preAuthKeyId: string;
}

export interface NodeAnalysis {
  ourKeyIds: string[];
  /** Ours, oldest first. */
  ours: HsNode[];
  current?: HsNode;
  /** The newest `replicas` of ours, oldest first ([current] with one replica). */
  currents: HsNode[];
  /** Ours except the current node(s), oldest first. */
  stale: HsNode[];
  /** Why provenance is not verified, one entry per offending node; empty when verified. */
  provenanceProblems: string[];
  /** Set when the current node's key differs from status.node.nodeKey for the same registration. */
  identityChange?: { node: HsNode; previousKey: string };
}

const sameTags = (tags: readonly string[], tag: string) => tags.length === 1 && tags[0] === tag;
const createdMs = (n: HsNode) => (n.createdAt ? Date.parse(n.createdAt) : 0) || 0;

/** Oldest first: by createdAt, then by numeric id (Headscale ids only grow). */
export function byAge(a: HsNode, b: HsNode): number {
  return createdMs(a) - createdMs(b) || Number(a.id) - Number(b.id) || a.id.localeCompare(b.id);
}

export function describeNode(n: HsNode): string {
  return `node ${n.id} "${n.givenName || n.name}"`;
}

export function isOurs(n: HsNode, tag: string, ourKeyIds: readonly string[]): boolean {
  return sameTags(n.tags, tag) && !!n.preAuthKey && ourKeyIds.includes(n.preAuthKey.id);
}

/** A key shaped like the operator's bootstrap keys: single-use, not ephemeral, tagged exactly with the tag. */
function bootstrapShaped(n: HsNode, tag: string): boolean {
  const k = n.preAuthKey;
  return !!k && !k.reusable && !k.ephemeral && sameTags(k.aclTags, tag);
}

function keyList(ids: readonly string[]): string {
  return ids.length === 1 ? ids[0] : ids.join(" or ");
}

function whyNotOurs(n: HsNode, tag: string, ourKeyIds: readonly string[]): string {
  const keys = keyList(ourKeyIds);
  if (n.preAuthKey && ourKeyIds.includes(n.preAuthKey.id)) {
    return `${describeNode(n)} was registered with bootstrap key ${n.preAuthKey.id} but carries tags [${n.tags.join(", ")}], not exactly ${tag}`;
  }
  const how = n.preAuthKey ? `pre-auth key ${n.preAuthKey.id}` : `no pre-auth key (${n.registerMethod})`;
  return `${describeNode(n)} carries ${tag} but was registered with ${how}, not with this gateway's bootstrap key ${keys || "(none yet)"}`;
}

export function analyzeNodes(input: {
  nodes: readonly HsNode[];
  tag: string;
  /** Key id of the bootstrap Secret child (after rotation, if any). */
  secretKeyId?: string;
  previous?: StatusNode;
  /** status.nodes[] of the previous sync (replicas > 1). */
  previousNodes?: readonly StatusNode[];
  acceptedNodeKey?: string;
  /** spec.replicas; default 1. */
  replicas?: number;
}): NodeAnalysis {
  const { tag } = input;
  const replicas = input.replicas ?? 1;
  const previous = [...(input.previous ? [input.previous] : []), ...(input.previousNodes ?? [])];
  const ourKeyIds = [
    ...new Set([input.secretKeyId, ...previous.map((p) => p.preAuthKeyId)].filter((x): x is string => !!x)),
  ].sort((a, b) => Number(a) - Number(b) || a.localeCompare(b));
  // every node looked at below carries the tag or registered with one of our keys: those buckets, not every node
  const sorted = [...new Set([...nodesTagged(input.nodes, tag), ...nodesOfKeys(input.nodes, ourKeyIds)])].sort(byAge);
  const ours = sorted.filter((n) => isOurs(n, tag, ourKeyIds));
  const current = ours.at(-1);
  const currents = current ? ours.slice(-replicas) : [];
  const stale = ours.filter((n) => !currents.includes(n) && (replicas === 1 || !n.online));

  const candidates = sorted.filter(
    (n) => n.tags.includes(tag) || (!!n.preAuthKey && ourKeyIds.includes(n.preAuthKey.id)),
  );
  const newest = candidates.at(-1);
  const offending = new Set<HsNode>();
  if (newest && !isOurs(newest, tag, ourKeyIds)) offending.add(newest);
  for (const n of candidates) {
    if (n.tags.includes(tag) && !isOurs(n, tag, ourKeyIds) && !bootstrapShaped(n, tag)) offending.add(n);
  }
  const provenanceProblems = [...offending].sort(byAge).map((n) => whyNotOurs(n, tag, ourKeyIds));

  let identityChange: NodeAnalysis["identityChange"];
  // one replica: the current node against status.node; more: each current node against its status.nodes[] entry
  for (const node of replicas === 1 ? (current ? [current] : []) : currents) {
    const prev = replicas === 1 ? input.previous : input.previousNodes?.find((p) => p.id === node.id);
    if (
      prev?.nodeKey &&
      node.id === prev.id &&
      node.preAuthKey?.id === prev.preAuthKeyId &&
      node.nodeKey !== prev.nodeKey &&
      node.nodeKey !== input.acceptedNodeKey
    ) {
      identityChange = { node, previousKey: prev.nodeKey };
      break;
    }
  }
  return { ourKeyIds, ours, current, currents, stale, provenanceProblems, identityChange };
}

export function statusNodeOf(n: HsNode): StatusNode {
  return { id: n.id, name: n.givenName || n.name, nodeKey: n.nodeKey, preAuthKeyId: n.preAuthKey?.id ?? "" };
}

/** status.nodes[] (replicas > 1): each entry as previousStatusNode reads status.node. */
export function previousStatusNodes(status: Record<string, unknown>): StatusNode[] {
  const list = Array.isArray(status.nodes) ? status.nodes : [];
  return list.flatMap((n) => previousStatusNode({ node: n }) ?? []);
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
