/**
 * In-memory state of the fake Headscale and its JSON rendering (protojson style: every field present, ids as
 * strings, unset timestamps and messages as null).
 */

import { createHash, randomBytes } from "node:crypto";
import { autoApprove, isExitRoute, type ParsedPolicy, type PolicyWorld } from "./policy.js";

export interface FakeUser {
  id: string;
  name: string;
  displayName: string;
  email: string;
  providerId: string;
  provider: string;
  profilePicUrl: string;
  createdAt: Date;
}

export interface FakeNode {
  id: string;
  machineKey: string;
  nodeKey: string;
  discoKey: string;
  ipv4: string;
  ipv6: string;
  name: string;
  givenName: string;
  userId: string | null;
  tags: string[];
  lastSeen: Date | null;
  expiry: Date | null;
  preAuthKeyId: string | null;
  createdAt: Date;
  registerMethod: string;
  online: boolean;
  approvedRoutes: string[];
  availableRoutes: string[];
}

export interface FakePreAuthKey {
  id: string;
  prefix: string;
  /** Full secret, `hskey-auth-<prefix>-<64 chars>`. */
  key: string;
  userId: string | null;
  reusable: boolean;
  ephemeral: boolean;
  used: boolean;
  expiration: Date;
  createdAt: Date;
  aclTags: string[];
}

export interface FakeApiKey {
  id: string;
  /** As listed: `hskey-api-<12 characters>-***` (0.28+), `<7 characters>***` for a legacy key. */
  prefix: string;
  /** The full key, to authenticate with (the real server keeps a bcrypt hash of its secret part). */
  key: string;
  expiration: Date;
  createdAt: Date;
}

export interface PolicyVersion {
  text: string;
  updatedAt: Date;
}

/** Headscale's synthetic owner shown for tagged nodes by ListNodes (NOTES §1.2). */
export const TAGGED_DEVICES_USER = {
  id: "2147455555",
  name: "tagged-devices",
  createdAt: null,
  displayName: "Tagged Devices",
  email: "",
  providerId: "",
  provider: "",
  profilePicUrl: "",
};

/** Go's zero time, stored by Headscale when a key is created without expiration. */
export const ZERO_TIME = new Date("0001-01-01T00:00:00Z");

export class FakeState {
  readonly users = new Map<string, FakeUser>();
  readonly nodes = new Map<string, FakeNode>();
  readonly preAuthKeys = new Map<string, FakePreAuthKey>();
  readonly apiKeys = new Map<string, FakeApiKey>();
  /** Database mode: append-only history, newest last. */
  readonly policies: PolicyVersion[] = [];
  /** File mode: the file's bytes. */
  filePolicy = "{}";
  /**
   * The policy Headscale serves from memory when it differs from the newest stored row: 0.29's SetPolicy swaps
   * the policy manager before the SSH check and the database write (hscontrol/grpcv1.go), so a PUT that fails
   * there leaves the rejected text live until a restart or reload. undefined: memory = the stored policy.
   */
  memoryPolicy: string | undefined = undefined;
  /** The database is unreachable: /health fails and every /api/v1 call is 401 (the key lookup fails). */
  databaseDown = false;
  private seq = { user: 0, node: 0, key: 0, apiKey: 0, ip: 0 };

  nextUserId(): string {
    return String(++this.seq.user);
  }

  nextNodeId(): string {
    return String(++this.seq.node);
  }

  nextKeyId(): string {
    return String(++this.seq.key);
  }

  nextApiKeyId(): string {
    return String(++this.seq.apiKey);
  }

  /** 100.64.0.x / fd7a:115c:a1e0::x, never reused. */
  allocateIps(): { ipv4: string; ipv6: string } {
    const n = ++this.seq.ip;
    return { ipv4: `100.64.${Math.floor(n / 256)}.${n % 256}`, ipv6: `fd7a:115c:a1e0::${n.toString(16)}` };
  }

  userByName(name: string): FakeUser | undefined {
    return [...this.users.values()].find((u) => u.name === name);
  }

  /** 0.29 suffixes colliding MagicDNS names with -1, -2, … */
  uniqueGivenName(base: string, exceptId?: string): string {
    const clean =
      base
        .toLowerCase()
        .replace(/[^a-z0-9-]/g, "-")
        .replace(/^-+|-+$/g, "") || "node";
    const collides = (name: string) => {
      for (const n of this.nodes.values()) if (n.givenName === name && n.id !== exceptId) return true;
      return false;
    };
    // one scan in the usual no-collision case (bench/tailnet-scale.ts adds 20,000 nodes)
    if (!collides(clean)) return clean;
    const taken = new Set([...this.nodes.values()].filter((n) => n.id !== exceptId).map((n) => n.givenName));
    for (let i = 1; ; i++) if (!taken.has(`${clean}-${i}`)) return `${clean}-${i}`;
  }

  /** Users and nodes as the policy engine sees them (for `tests`). */
  policyWorld(): PolicyWorld {
    return {
      users: [...this.users.values()].map((u) => ({ name: u.name, email: u.email })),
      nodes: [...this.nodes.values()].map((n) => ({
        ipv4: n.ipv4,
        ipv6: n.ipv6,
        tags: [...n.tags],
        userName: n.userId ? (this.users.get(n.userId)?.name ?? null) : null,
      })),
    };
  }

  /** Re-runs route auto-approval for every node (Headscale does this on every policy reload). */
  autoApproveAll(policy: ParsedPolicy): void {
    for (const node of this.nodes.values()) this.autoApproveNode(node, policy);
  }

  autoApproveNode(node: FakeNode, policy: ParsedPolicy): void {
    const userName = node.userId ? (this.users.get(node.userId)?.name ?? null) : null;
    node.approvedRoutes = autoApprove(policy, { ...node, userName });
  }

  /**
   * Routes a node actually serves: HA primary for subnet routes (lowest id among online nodes announcing and
   * approved for the prefix) plus its approved exit routes. Computed only for ListNodes and approve_routes.
   */
  subnetRoutes(node: FakeNode): string[] {
    const served: string[] = [];
    for (const route of node.approvedRoutes) {
      if (!node.availableRoutes.includes(route)) continue;
      if (isExitRoute(route)) {
        served.push(route);
        continue;
      }
      if (!node.online) continue;
      const primary = [...this.nodes.values()]
        .filter((n) => n.online && n.approvedRoutes.includes(route) && n.availableRoutes.includes(route))
        .sort((a, b) => Number(a.id) - Number(b.id))[0];
      if (primary?.id === node.id) served.push(route);
    }
    return served;
  }

  // ---- rendering ----

  userJson(user: FakeUser) {
    return {
      id: user.id,
      name: user.name,
      createdAt: ts(user.createdAt),
      displayName: user.displayName,
      email: user.email,
      providerId: user.providerId,
      provider: user.provider,
      profilePicUrl: user.profilePicUrl,
    };
  }

  /** `reveal` only in the create response; listings mask the secret (0.28+). */
  preAuthKeyJson(key: FakePreAuthKey, reveal = false) {
    const user = key.userId ? this.users.get(key.userId) : undefined;
    return {
      user: user ? this.userJson(user) : null,
      id: key.id,
      key: reveal ? key.key : `hskey-auth-${key.prefix}-***`,
      reusable: key.reusable,
      ephemeral: key.ephemeral,
      used: key.used,
      expiration: ts(key.expiration),
      createdAt: ts(key.createdAt),
      aclTags: [...key.aclTags],
    };
  }

  /**
   * `listing`: ListNodes shows the synthetic tagged-devices user and fills subnetRoutes; GetNode and the
   * mutation responses show `user: null` for tagged nodes and `subnetRoutes: []` (approve_routes fills it).
   */
  nodeJson(node: FakeNode, opts: { listing?: boolean; subnetRoutes?: boolean } = {}) {
    const owner = node.userId ? this.users.get(node.userId) : undefined;
    const key = node.preAuthKeyId ? this.preAuthKeys.get(node.preAuthKeyId) : undefined;
    const user = owner ? this.userJson(owner) : node.tags.length > 0 && opts.listing ? TAGGED_DEVICES_USER : null;
    return {
      id: node.id,
      machineKey: node.machineKey,
      nodeKey: node.nodeKey,
      discoKey: node.discoKey,
      ipAddresses: [node.ipv4, node.ipv6],
      name: node.name,
      user,
      lastSeen: ts(node.lastSeen),
      expiry: ts(node.expiry),
      preAuthKey: key ? this.preAuthKeyJson(key) : null,
      createdAt: ts(node.createdAt),
      registerMethod: node.registerMethod,
      givenName: node.givenName,
      online: node.online,
      approvedRoutes: [...node.approvedRoutes],
      availableRoutes: [...node.availableRoutes],
      subnetRoutes: opts.listing || opts.subnetRoutes ? this.subnetRoutes(node) : [],
      tags: [...node.tags],
    };
  }

  apiKeyJson(key: FakeApiKey) {
    return {
      id: key.id,
      prefix: key.prefix,
      expiration: ts(key.expiration),
      createdAt: ts(key.createdAt),
      lastSeen: null,
    };
  }
}

/** RFC 3339 the way protojson prints it: no fractional part when it is zero. */
export function ts(date: Date | null): string | null {
  if (!date) return null;
  return date.toISOString().replace(/\.000Z$/, "Z");
}

export function fakeKeyMaterial(kind: "mkey" | "nodekey" | "discokey", seed: string): string {
  return `${kind}:${createHash("sha256").update(`${kind}/${seed}`).digest("hex")}`;
}

/**
 * Random base64url text, as Headscale mints key prefixes and secrets (`util.GenerateRandomStringURLSafe`,
 * hscontrol/util/string.go): a 12-character prefix holds a "-" or "_" about a third of the time.
 */
export function randomUrlSafe(length: number): string {
  return randomBytes(length).toString("base64url").slice(0, length);
}
