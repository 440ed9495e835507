/**
 * Indexes over Headscale's node and pre-auth key lists, so a sync looks up what is its own (by tag, by key id)
 * in O(own) instead of scanning every key and node of the Tailnet. At 20,000 objects each sync's scans of the
 * whole lists made a resync round quadratic (issue 25).
 *
 * An index is built once per list read and memoised on the array itself (src/k8s/attached.ts: it dies with the read), so
 * the thousands of syncs sharing one cached read share one index, and pure stages (plan, decide) may call it:
 * the answer depends only on the array's contents. Buckets keep the list's order, so what is derived from them
 * is as deterministic as a scan. The view appends its own mints to a cached key list in place (`appendKey`),
 * which keeps the index in step; nothing else mutates a list that was read.
 *
 * Headscale 0.29 cannot narrow these reads (juanfont/headscale hscontrol/grpcv1.go, proto/headscale/v1):
 * ListPreAuthKeysRequest is empty (every key of every user, sorted by id) and ListNodesRequest takes only a
 * `user`, whose nodes are not the operator's (its nodes are tagged and owned by no user). So the lists are read
 * whole, once per TTL or per fresh read, and indexed here.
 */
import { attachedMemo } from "../k8s/attached.js";
import type { HsNode, HsPreAuthKey } from "./types.js";

export interface KeyIndex {
  byId: Map<string, HsPreAuthKey>;
  /** Keys per ACL tag (a key with two tags is in both buckets), in list order. */
  byTag: Map<string, HsPreAuthKey[]>;
}

export interface NodeIndex {
  byId: Map<string, HsNode>;
  /** Nodes per tag, in list order. */
  byTag: Map<string, HsNode[]>;
  /** Nodes per id of the pre-auth key they registered with, in list order. */
  byKeyId: Map<string, HsNode[]>;
  /** Each node's position in the list, to merge buckets back into list order. */
  position: Map<HsNode, number>;
}

const keyIndexes = attachedMemo<readonly HsPreAuthKey[], KeyIndex>("keyIndex");
const nodeIndexes = attachedMemo<readonly HsNode[], NodeIndex>("nodeIndex");

function push<K, V>(map: Map<K, V[]>, key: K, value: V): void {
  const bucket = map.get(key);
  if (bucket) bucket.push(value);
  else map.set(key, [value]);
}

function addKey(index: KeyIndex, key: HsPreAuthKey): void {
  index.byId.set(key.id, key);
  for (const tag of new Set(key.aclTags)) push(index.byTag, tag, key);
}

/** Whether the list was indexed already (a caller with one lookup may scan instead of building the index). */
export function hasKeyIndex(keys: readonly HsPreAuthKey[]): boolean {
  return keyIndexes.peek(keys) !== undefined;
}

/** The index of a key list (built on first use, then reused for the same array). */
export function keyIndex(keys: readonly HsPreAuthKey[]): KeyIndex {
  return keyIndexes.of(keys, () => {
    const index: KeyIndex = { byId: new Map(), byTag: new Map() };
    for (const k of keys) addKey(index, k);
    return index;
  });
}

/**
 * Adds a key the view just minted to a key list it holds (and to the list's index); a key already listed (a read
 * that landed after the mint) is left alone. Returns whether it was added.
 */
export function appendKey(keys: HsPreAuthKey[], key: HsPreAuthKey): boolean {
  const index = keyIndex(keys);
  if (index.byId.has(key.id)) return false;
  keys.push(key);
  addKey(index, key);
  return true;
}

/** The index of a node list (built on first use, then reused for the same array). */
export function nodeIndex(nodes: readonly HsNode[]): NodeIndex {
  return nodeIndexes.of(nodes, () => {
    const index: NodeIndex = { byId: new Map(), byTag: new Map(), byKeyId: new Map(), position: new Map() };
    for (const [i, n] of nodes.entries()) {
      index.byId.set(n.id, n);
      index.position.set(n, i);
      for (const tag of new Set(n.tags)) push(index.byTag, tag, n);
      if (n.preAuthKey) push(index.byKeyId, n.preAuthKey.id, n);
    }
    return index;
  });
}

/** Keys carrying the tag, in list order. */
export function keysWithTag(keys: readonly HsPreAuthKey[], tag: string): readonly HsPreAuthKey[] {
  return keyIndex(keys).byTag.get(tag) ?? [];
}

export function keyById(keys: readonly HsPreAuthKey[], id: string): HsPreAuthKey | undefined {
  return keyIndex(keys).byId.get(id);
}

/** Nodes carrying the tag, in list order. */
export function nodesTagged(nodes: readonly HsNode[], tag: string): readonly HsNode[] {
  return nodeIndex(nodes).byTag.get(tag) ?? [];
}

/** Nodes registered with any of the keys, in list order. */
export function nodesOfKeys(nodes: readonly HsNode[], keyIds: Iterable<string>): HsNode[] {
  const index = nodeIndex(nodes);
  const out = new Set<HsNode>();
  for (const id of keyIds) for (const n of index.byKeyId.get(id) ?? []) out.add(n);
  return [...out].sort((a, b) => (index.position.get(a) ?? 0) - (index.position.get(b) ?? 0));
}

/** Whether a node registered with the key. */
export function keyInUse(nodes: readonly HsNode[], keyId: string): boolean {
  return nodeIndex(nodes).byKeyId.has(keyId);
}
