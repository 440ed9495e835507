/**
 * State helpers for tests: put users and nodes into the fake the way Headscale would hold them, without going
 * through the (unimplemented) Tailscale control protocol.
 */

import type { ParsedPolicy } from "./policy.js";
import { normaliseRoutes } from "./policy.js";
import { type FakeNode, type FakePreAuthKey, type FakeState, type FakeUser, fakeKeyMaterial } from "./state.js";

export interface AddUserInput {
  name: string;
  /** "oidc" for an OIDC user (gets a providerId), "" or omitted for a local one. */
  provider?: string;
  displayName?: string;
  email?: string;
  providerId?: string;
}

export function addUser(state: FakeState, now: Date, input: AddUserInput): FakeUser {
  const id = state.nextUserId();
  const provider = input.provider ?? "";
  const user: FakeUser = {
    id,
    name: input.name,
    displayName: input.displayName ?? "",
    email: input.email ?? "",
    providerId: input.providerId ?? (provider === "oidc" ? `https://idp.example.com/${id}` : ""),
    provider,
    profilePicUrl: "",
    createdAt: now,
  };
  state.users.set(id, user);
  return user;
}

export interface AddNodeInput {
  name: string;
  givenName?: string;
  /** Tags (tagged node, no user). */
  tags?: string[];
  /** Owner by user name, for a user-owned node (ignored when tags are given). */
  user?: string;
  ipv4?: string;
  availableRoutes?: string[];
  approvedRoutes?: string[];
  /** Default true. */
  online?: boolean;
  preAuthKeyId?: string;
  nodeKey?: string;
  expiry?: Date | null;
  lastSeen?: Date | null;
  registerMethod?: string;
}

/** Inserts a node as stored state; no auto-approval (that belongs to registration and policy reloads). */
export function addNode(state: FakeState, now: Date, input: AddNodeInput): FakeNode {
  const tags = [...new Set(input.tags ?? [])].sort();
  let userId: string | null = null;
  if (tags.length === 0 && input.user !== undefined) {
    const user = state.userByName(input.user);
    if (!user) throw new Error(`fake headscale: no user named ${input.user}`);
    userId = user.id;
  }
  const id = state.nextNodeId();
  const ips = state.allocateIps();
  const node: FakeNode = {
    id,
    machineKey: fakeKeyMaterial("mkey", `${id}/${input.name}`),
    nodeKey: input.nodeKey ?? fakeKeyMaterial("nodekey", `${id}/${input.name}`),
    discoKey: fakeKeyMaterial("discokey", `${id}/${input.name}`),
    ipv4: input.ipv4 ?? ips.ipv4,
    ipv6: ips.ipv6,
    name: input.name,
    givenName: state.uniqueGivenName(input.givenName ?? input.name),
    userId,
    tags,
    lastSeen: input.lastSeen === undefined ? now : input.lastSeen,
    expiry: input.expiry ?? null,
    preAuthKeyId: input.preAuthKeyId ?? null,
    createdAt: now,
    registerMethod: input.registerMethod ?? (input.preAuthKeyId ? "REGISTER_METHOD_AUTH_KEY" : "REGISTER_METHOD_CLI"),
    online: input.online ?? true,
    approvedRoutes: normaliseRoutes(input.approvedRoutes ?? []),
    availableRoutes: [...(input.availableRoutes ?? [])],
  };
  state.nodes.set(id, node);
  return node;
}

export interface RegisterInput {
  name: string;
  givenName?: string;
  ipv4?: string;
  availableRoutes?: string[];
  online?: boolean;
  /** Re-registering an existing node key updates that node instead of creating one. */
  nodeKey?: string;
  /** Tags the client asks for (`tailscale up --advertise-tags`, sent as Hostinfo.RequestTags). */
  requestTags?: string[];
}

/**
 * A node registering with a pre-auth key (by id or full secret): Headscale checks the key, marks it used, makes
 * the node tagged with the key's aclTags (or owned by the key's user) and runs auto-approval.
 */
export function registerWithKey(
  state: FakeState,
  now: Date,
  policy: ParsedPolicy | undefined,
  keyIdOrSecret: string,
  input: RegisterInput,
): FakeNode {
  const key = findKey(state, keyIdOrSecret);
  if (!key) throw new Error("fake headscale: authkey not found");
  if (key.expiration.getTime() <= now.getTime()) throw new Error("fake headscale: authkey expired");
  if (key.used && !key.reusable) throw new Error("fake headscale: authkey already used");
  // 0.28+ refuses any client-requested tag on a pre-auth-key registration, even the key's own tag,
  // before anything is allocated or the key is marked used (hscontrol/state/state.go, "Reject
  // advertise-tags for PreAuthKey registrations early"): the key's aclTags alone tag the node.
  if (input.requestTags?.length) {
    throw new Error(`fake headscale: requested tags [${input.requestTags.join(" ")}] are invalid or not permitted`);
  }
  key.used = true;

  const existing = input.nodeKey ? [...state.nodes.values()].find((n) => n.nodeKey === input.nodeKey) : undefined;
  const node =
    existing ??
    addNode(state, now, { name: input.name, givenName: input.givenName, ipv4: input.ipv4, nodeKey: input.nodeKey });
  node.tags = [...key.aclTags];
  node.userId = key.aclTags.length > 0 ? null : key.userId;
  node.preAuthKeyId = key.id;
  node.registerMethod = "REGISTER_METHOD_AUTH_KEY";
  node.availableRoutes = [...(input.availableRoutes ?? node.availableRoutes)];
  node.online = input.online ?? true;
  node.lastSeen = now;
  if (policy) state.autoApproveNode(node, policy);
  return node;
}

function findKey(state: FakeState, keyIdOrSecret: string): FakePreAuthKey | undefined {
  return state.preAuthKeys.get(keyIdOrSecret) ?? [...state.preAuthKeys.values()].find((k) => k.key === keyIdOrSecret);
}
