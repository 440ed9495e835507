/**
 * Registration as a tailscaled client makes it, without the control protocol: a login with a pre-auth key, a
 * restart that reconnects with the state it kept, a disconnect, and the ephemeral-node sweep. Modelled on
 * `juanfont/headscale` v0.29.3 hscontrol/state/state.go (`HandleNodeFromPreAuthKey`, `findExistingNodeForPAK`,
 * `createAndSaveNewNode`), hscontrol/auth.go (`handleRegister`, the Auth-nil path), hscontrol/types/preauth_key.go
 * (`Validate`) and hscontrol/app.go (`ephemeralGC`).
 */

import type { ParsedPolicy } from "./policy.js";
import { addNode } from "./seed.js";
import { type FakeNode, type FakePreAuthKey, type FakeState, fakeKeyMaterial, randomUrlSafe } from "./state.js";

export interface RegisterInput {
  /** Hostinfo.Hostname; a new node's givenName is derived from it (bumped -1, -2 … on collision). */
  name: string;
  givenName?: string;
  ipv4?: string;
  availableRoutes?: string[];
  online?: boolean;
  /**
   * The machine's key (tailscaled's `_machinekey`, kept in its state). Headscale finds an existing node by it.
   * Omitted: the machine of the node holding `nodeKey`, else a machine never seen before.
   */
  machineKey?: string;
  /** The node key the client presents; omitted: a fresh one (a client without state generates one). */
  nodeKey?: string;
  /** Tags the client asks for (`tailscale up --advertise-tags`, sent as Hostinfo.RequestTags). */
  requestTags?: string[];
}

/** What a registration did: the node, and whether Headscale made a new one or updated the machine's node. */
export interface Registration {
  node: FakeNode;
  created: boolean;
}

/**
 * A node logging in with a pre-auth key (by id or full secret), as HandleNodeFromPreAuthKey does it: the
 * machine key finds the machine's existing node (findExistingNodeForPAK), which is updated in place (same id,
 * same addresses, the node key replaced); otherwise a new node. The key is validated except for a plain
 * re-registration (same node key, not expired, no ownership change, the key the node last used), and a
 * single-use key is marked used on its first registration only (state.go l.2618, #2830); a reusable key is
 * never marked used (createAndSaveNewNode: `!PreAuthKey.Reusable`).
 */
export function register(
  state: FakeState,
  now: Date,
  policy: ParsedPolicy | undefined,
  keyIdOrSecret: string,
  input: RegisterInput,
): Registration {
  const key = findKey(state, keyIdOrSecret);
  if (!key) throw new Error("fake headscale: authkey not found");
  // 0.28+ refuses any client-requested tag on a pre-auth-key registration, even the key's own tag,
  // before anything is allocated or the key is marked used (hscontrol/state/state.go, "Reject
  // advertise-tags for PreAuthKey registrations early"): the key's aclTags alone tag the node.
  if (input.requestTags?.length) {
    throw new Error(`fake headscale: requested tags [${input.requestTags.join(" ")}] are invalid or not permitted`);
  }
  const byNodeKey = input.nodeKey ? nodeByNodeKey(state, input.nodeKey) : undefined;
  const machineKey = input.machineKey ?? byNodeKey?.machineKey ?? fakeKeyMaterial("mkey", randomUrlSafe(16));
  const nodeKey = input.nodeKey ?? fakeKeyMaterial("nodekey", randomUrlSafe(16));
  const existing = findExistingNodeForPAK(state, machineKey, key);
  if (!existing || !skipsValidation(existing, key, nodeKey, now)) validate(key, now);

  let node: FakeNode;
  if (existing) {
    // the 1:1 node key ↔ machine key binding (state.go "ErrNodeKeyInUse")
    if (byNodeKey && byNodeKey.machineKey !== machineKey) {
      throw new Error("fake headscale: node key already in use by another machine");
    }
    node = existing;
    const keyChanged = node.preAuthKeyId !== key.id;
    const tagged = node.tags.length > 0;
    if (key.aclTags.length > 0 && (!tagged || keyChanged)) {
      // a different tagged key re-applies its tags (KB 1068); a user node becomes tagged and loses its expiry
      node.tags = [...key.aclTags];
      node.userId = null;
      if (!tagged || expired(node, now)) node.expiry = null;
    }
    // tagged nodes never carry a past expiry (#3371); a user node's expiry follows the (zero) request expiry
    if (node.tags.length === 0 || expired(node, now)) node.expiry = null;
    node.nodeKey = nodeKey;
    node.name = input.name;
  } else {
    node = addNode(state, now, {
      name: input.name,
      givenName: input.givenName,
      ipv4: input.ipv4,
      nodeKey,
      machineKey,
      tags: key.aclTags,
    });
    if (key.aclTags.length === 0) node.userId = key.userId;
  }
  if (!key.reusable && !key.used) key.used = true;
  node.preAuthKeyId = key.id;
  node.registerMethod = "REGISTER_METHOD_AUTH_KEY";
  node.availableRoutes = [...(input.availableRoutes ?? node.availableRoutes)];
  node.online = input.online ?? true;
  node.lastSeen = now;
  if (policy) state.autoApproveNode(node, policy);
  return { node, created: !existing };
}

/**
 * findExistingNodeForPAK (state.go l.2306): the machine's node under the key's owner. A user's key matches that
 * user's node of the machine, or the machine's tagged node (#3312); a tagged key the machine's tagged node, or
 * its only user-owned node (converted in place); several user-owned nodes are ambiguous.
 */
function findExistingNodeForPAK(state: FakeState, machineKey: string, key: FakePreAuthKey): FakeNode | undefined {
  const all = [...state.nodes.values()].filter((n) => n.machineKey === machineKey);
  const taggedNode = all.find((n) => n.tags.length > 0);
  if (key.aclTags.length === 0) return all.find((n) => n.tags.length === 0 && n.userId === key.userId) ?? taggedNode;
  if (taggedNode) return taggedNode;
  const userOwned = all.filter((n) => n.tags.length === 0);
  if (userOwned.length > 1) throw new Error("fake headscale: machine key maps to ambiguous node ownership");
  return userOwned[0];
}

/**
 * The fast path that skips `pak.Validate()`: the same node key, a node not expired (tagged nodes never are),
 * no conversion of a user node to tagged, and no retag by a different tagged key (state.go l.2400-2460).
 */
function skipsValidation(node: FakeNode, key: FakePreAuthKey, nodeKey: string, now: Date): boolean {
  const tagged = node.tags.length > 0;
  if (node.nodeKey !== nodeKey) return false;
  if (!tagged && expired(node, now)) return false;
  if (key.aclTags.length > 0 && !tagged) return false;
  if (key.aclTags.length > 0 && tagged && node.preAuthKeyId !== key.id) return false;
  return true;
}

/** PreAuthKey.Validate (hscontrol/types/preauth_key.go), with its messages. */
function validate(key: FakePreAuthKey, now: Date): void {
  if (key.expiration.getTime() <= now.getTime()) throw new Error("fake headscale: authkey expired");
  if (!key.reusable && key.used) throw new Error("fake headscale: authkey already used");
}

const expired = (node: FakeNode, now: Date) => node.expiry !== null && node.expiry.getTime() <= now.getTime();

export interface ReconnectInput {
  nodeKey: string;
  machineKey: string;
}

/**
 * tailscaled restarting with its state: `RegisterRequest{Auth: nil, Expiry: zero}` (hscontrol/auth.go
 * handleRegister l.79-104). A known node key whose machine key matches comes back unchanged, no pre-auth key
 * involved; the fake also marks it online (the poll session that follows).
 */
export function reconnect(state: FakeState, now: Date, input: ReconnectInput): FakeNode {
  const node = nodeByNodeKey(state, input.nodeKey);
  // Unknown node key: the client is sent to log in (tailscaled's NeedsLogin).
  if (!node) throw new Error("fake headscale: node key not registered, the client needs to log in");
  if (node.machineKey !== input.machineKey) throw new Error("fake headscale: node exists with a different machine key");
  if (expired(node, now)) throw new Error("fake headscale: node expired, the client needs to log in");
  node.online = true;
  node.lastSeen = now;
  return node;
}

/** The node's poll session ends (pod gone, container stopped): offline, last seen now. */
export function disconnect(state: FakeState, now: Date, id: string): void {
  const node = state.nodes.get(id);
  if (!node) return;
  node.online = false;
  node.lastSeen = now;
}

/**
 * 0.29.3's built-in default for `node.ephemeral.inactivity_timeout`, 120 s (hscontrol/types/config.go
 * `viper.SetDefault`), which a config without the key (test/real/headscale.ts) gets; the shipped
 * config-example.yaml sets 30m.
 */
export const EPHEMERAL_INACTIVITY_MS = 120 * 1000;

/**
 * ephemeralGC (hscontrol/app.go): a node registered with an ephemeral key is deleted once it has been offline
 * for the inactivity timeout; every other node stays until someone deletes it. Returns the deleted ids.
 */
export function sweepEphemeral(state: FakeState, now: Date, timeoutMs = EPHEMERAL_INACTIVITY_MS): string[] {
  const deleted: string[] = [];
  for (const node of [...state.nodes.values()]) {
    const key = node.preAuthKeyId ? state.preAuthKeys.get(node.preAuthKeyId) : undefined;
    if (!key?.ephemeral || node.online) continue;
    if (node.lastSeen && now.getTime() - node.lastSeen.getTime() < timeoutMs) continue;
    state.nodes.delete(node.id);
    deleted.push(node.id);
  }
  return deleted;
}

function nodeByNodeKey(state: FakeState, nodeKey: string): FakeNode | undefined {
  for (const n of state.nodes.values()) if (n.nodeKey === nodeKey) return n;
  return undefined;
}

function findKey(state: FakeState, keyIdOrSecret: string): FakePreAuthKey | undefined {
  return state.preAuthKeys.get(keyIdOrSecret) ?? [...state.preAuthKeys.values()].find((k) => k.key === keyIdOrSecret);
}
