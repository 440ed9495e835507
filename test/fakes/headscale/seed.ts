/**
 * State helpers for tests: put users and nodes into the fake the way Headscale would hold them, without going
 * through the (unimplemented) Tailscale control protocol. Registrations are in register.ts.
 */

import { normaliseRoutes } from "./policy.js";
import { type FakeNode, type FakeState, type FakeUser, fakeKeyMaterial } from "./state.js";

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
  /** The machine's key (default: derived from the node id and name, unique per node). */
  machineKey?: string;
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
    machineKey: input.machineKey ?? fakeKeyMaterial("mkey", `${id}/${input.name}`),
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
