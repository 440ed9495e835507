/**
 * Headscale 0.29 response shapes and their defensive decoders (NOTES.md §0, §7.2): ids stay strings (uint64 is
 * sent as a JSON string; a number is stringified), timestamps may be null, missing arrays become [], unknown
 * fields are ignored. A decoder throws `DecodeProblem` only when a value we cannot default is missing or has the
 * wrong type (e.g. the policy text, or the key of a freshly created pre-auth key).
 */

import { isRecord } from "./errors.js";

export interface HsUser {
  id: string;
  name: string;
  createdAt: string | null;
  displayName: string;
  email: string;
  providerId: string;
  provider: string;
  profilePicUrl: string;
}

export interface HsPreAuthKey {
  user: HsUser | null;
  id: string;
  /** Full secret only in the create response; listed keys are masked (`hskey-auth-<prefix>-***`) on 0.28+. */
  key: string;
  reusable: boolean;
  ephemeral: boolean;
  used: boolean;
  /** Raw timestamp; `0001-01-01T00:00:00Z` here means "already expired", not "never" (NOTES §1.5). */
  expiration: string | null;
  createdAt: string | null;
  aclTags: string[];
}

export interface HsNodeShape {
  /** The server sent a `tags` key (0.28+ tags-as-identity). */
  hasTags: boolean;
  /** The server sent an `approvedRoutes` key (0.26+ routes on the node). */
  hasApprovedRoutes: boolean;
}

export interface HsNode {
  id: string;
  machineKey: string;
  nodeKey: string;
  ipAddresses: string[];
  name: string;
  givenName: string;
  user: HsUser | null;
  lastSeen: string | null;
  /** null = never expires (also when the server sent year 0001, see NOTES §1.2). */
  expiry: string | null;
  preAuthKey: HsPreAuthKey | null;
  createdAt: string | null;
  registerMethod: string;
  online: boolean;
  approvedRoutes: string[];
  availableRoutes: string[];
  subnetRoutes: string[];
  tags: string[];
  shape: HsNodeShape;
}

export interface HsApiKey {
  id: string;
  prefix: string;
  expiration: string | null;
  createdAt: string | null;
}

export interface HsPolicy {
  /** HuJSON text, verbatim. */
  policy: string;
  /** null in file mode (NOTES §1.6). */
  updatedAt: string | null;
}

/** A response that cannot be decoded into the shape we need; the client turns it into a `decode` error. */
export class DecodeProblem extends Error {
  constructor(message: string) {
    super(message);
    this.name = "DecodeProblem";
  }
}

function str(value: unknown): string {
  if (typeof value === "string") return value;
  if (typeof value === "number" || typeof value === "bigint") return String(value);
  return "";
}

function bool(value: unknown): boolean {
  return value === true;
}

function strings(value: unknown): string[] {
  return Array.isArray(value) ? value.filter((v): v is string => typeof v === "string") : [];
}

/**
 * What repeats across the items of one list answer is held once (issue 36: a node of a 20,000-node list took
 * 1.9 KiB of heap, the list a third of the hook server's live heap): the user object every tagged node carries
 * (`tagged-devices` on 0.29), the empty route lists, the shape flags and the register method. Decoded values are
 * never mutated (their readers copy), so sharing them is safe; the empty list is frozen to keep it so.
 */
export class ListInterner {
  private readonly users = new Map<string, HsUser>();
  private readonly texts = new Map<string, string>();

  user(u: HsUser): HsUser {
    const key = `${u.id}\u0000${u.name}\u0000${u.createdAt}\u0000${u.displayName}\u0000${u.email}\u0000${u.providerId}\u0000${u.provider}\u0000${u.profilePicUrl}`;
    const had = this.users.get(key);
    if (had) return had;
    if (this.users.size < 1024) this.users.set(key, u);
    return u;
  }

  /** A low-cardinality text (an enum value): one string per distinct value. */
  text(t: string): string {
    const had = this.texts.get(t);
    if (had !== undefined) return had;
    if (this.texts.size < 64) this.texts.set(t, t);
    return t;
  }
}

const NO_STRINGS = Object.freeze([]) as unknown as string[];
const nonEmpty = (v: string[]): string[] => (v.length === 0 ? NO_STRINGS : v);

const SHAPES: readonly HsNodeShape[] = [
  Object.freeze({ hasTags: false, hasApprovedRoutes: false }),
  Object.freeze({ hasTags: false, hasApprovedRoutes: true }),
  Object.freeze({ hasTags: true, hasApprovedRoutes: false }),
  Object.freeze({ hasTags: true, hasApprovedRoutes: true }),
];

function timestamp(value: unknown): string | null {
  return typeof value === "string" && value !== "" ? value : null;
}

/** Year 0001 is Go's zero time: Headscale <0.28 stored it for "no expiry". */
function expiryTimestamp(value: unknown): string | null {
  const ts = timestamp(value);
  return ts === null || ts.startsWith("0001-") ? null : ts;
}

function record(value: unknown, what: string): Record<string, unknown> {
  if (!isRecord(value)) throw new DecodeProblem(`expected ${what} to be an object`);
  return value;
}

function list(body: Record<string, unknown>, key: string): unknown[] {
  const value = body[key];
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value)) throw new DecodeProblem(`expected "${key}" to be an array`);
  return value;
}

export function decodeUser(value: unknown): HsUser {
  const u = record(value, "user");
  return {
    id: str(u.id),
    name: str(u.name),
    createdAt: timestamp(u.createdAt),
    displayName: str(u.displayName),
    email: str(u.email),
    providerId: str(u.providerId),
    provider: str(u.provider),
    profilePicUrl: str(u.profilePicUrl),
  };
}

function optionalUser(value: unknown, interner?: ListInterner): HsUser | null {
  // ≤0.25 sent the user name as a plain string on pre-auth keys.
  const user =
    typeof value === "string"
      ? value
        ? { ...decodeUser({}), name: value }
        : null
      : isRecord(value)
        ? decodeUser(value)
        : null;
  return user && interner ? interner.user(user) : user;
}

export function decodePreAuthKey(value: unknown, interner?: ListInterner): HsPreAuthKey {
  const k = record(value, "preAuthKey");
  return {
    user: optionalUser(k.user, interner),
    id: str(k.id),
    key: str(k.key),
    reusable: bool(k.reusable),
    ephemeral: bool(k.ephemeral),
    used: bool(k.used),
    expiration: timestamp(k.expiration),
    createdAt: timestamp(k.createdAt),
    aclTags: strings(k.aclTags),
  };
}

export function decodeNode(value: unknown, interner = new ListInterner()): HsNode {
  const n = record(value, "node");
  return {
    id: str(n.id),
    machineKey: str(n.machineKey),
    nodeKey: str(n.nodeKey),
    ipAddresses: strings(n.ipAddresses),
    name: str(n.name),
    givenName: str(n.givenName),
    user: optionalUser(n.user, interner),
    lastSeen: timestamp(n.lastSeen),
    expiry: expiryTimestamp(n.expiry),
    preAuthKey: isRecord(n.preAuthKey) ? decodePreAuthKey(n.preAuthKey, interner) : null,
    createdAt: timestamp(n.createdAt),
    registerMethod: interner.text(str(n.registerMethod) || "REGISTER_METHOD_UNSPECIFIED"),
    online: bool(n.online),
    approvedRoutes: nonEmpty(strings(n.approvedRoutes)),
    availableRoutes: nonEmpty(strings(n.availableRoutes)),
    subnetRoutes: nonEmpty(strings(n.subnetRoutes)),
    tags: nonEmpty(strings(n.tags)),
    shape: SHAPES[(Array.isArray(n.tags) ? 2 : 0) + (Array.isArray(n.approvedRoutes) ? 1 : 0)],
  };
}

export function decodeApiKey(value: unknown): HsApiKey {
  const k = record(value, "apiKey");
  return {
    id: str(k.id),
    prefix: str(k.prefix),
    expiration: timestamp(k.expiration),
    createdAt: timestamp(k.createdAt),
  };
}

export function decodePolicy(value: unknown): HsPolicy {
  const p = record(value, "response");
  // Never default the text: an empty policy taken for the live one would trigger a write.
  if (typeof p.policy !== "string") throw new DecodeProblem('expected "policy" to be a string');
  return { policy: p.policy, updatedAt: timestamp(p.updatedAt) };
}

export function decodeNodeList(body: unknown): HsNode[] {
  const interner = new ListInterner();
  return list(record(body, "response"), "nodes").map((n) => decodeNode(n, interner));
}

export function decodeNodeResponse(body: unknown): HsNode {
  return decodeNode(record(body, "response").node);
}

export function decodeUserList(body: unknown): HsUser[] {
  return list(record(body, "response"), "users").map(decodeUser);
}

export function decodeApiKeyList(body: unknown): HsApiKey[] {
  return list(record(body, "response"), "apiKeys").map(decodeApiKey);
}

export function decodePreAuthKeyList(body: unknown): HsPreAuthKey[] {
  const interner = new ListInterner();
  return list(record(body, "response"), "preAuthKeys").map((k) => decodePreAuthKey(k, interner));
}

export function decodeCreatedPreAuthKey(body: unknown): HsPreAuthKey {
  const key = decodePreAuthKey(record(body, "response").preAuthKey);
  // The create response is the only place the secret is shown; without it the key is useless.
  if (!key.key || key.key.endsWith("-***")) throw new DecodeProblem("created pre-auth key carries no secret");
  return key;
}

export function decodeApiHealth(body: unknown): { databaseConnectivity: boolean } {
  return { databaseConnectivity: bool(record(body, "response").databaseConnectivity) };
}

export function decodeServerHealth(body: unknown): { status: string } {
  return { status: str(record(body, "response").status) };
}

/** Accepts any object (e.g. `{}` from delete/expire/check), rejecting only non-objects. */
export function decodeEmpty(body: unknown): void {
  record(body, "response");
}
