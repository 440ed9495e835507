/**
 * Tenancy: what a namespace may ask of a Tailnet. A namespace editor controls every field of its
 * TailnetEgress/TailnetIngress/TailnetGateway (and its Services' annotations), so three rules live here,
 * in the one place every kind (and the Tailnet's policy render) calls:
 * - which namespaces may use the Tailnet (spec.tenancy.namespaceSelector, the admins' decision);
 * - which explicit tags (spec.tag, the tags annotation) a namespace may use (spec.tenancy.tags grants);
 *   a derived tag is the object's own by construction and needs no grant;
 * - which Headscale nodes and keys are the object's: only those registered with (or being) pre-auth keys
 *   the object minted — never "whatever carries the tag", which an admin's server may carry too.
 * Derived tags are injective over (namespace, name) so no two objects share one (derivedTag).
 */
import { createHash } from "node:crypto";
import { keyById, keyInUse, keysWithTag, nodesOfKeys, nodesTagged } from "../../headscale/lists.js";
import type { HsNode, HsPreAuthKey } from "../../headscale/types.js";
import type { K8sObject, ObjectMaps } from "../../k8s/objects.js";
import { findObject, recordOf } from "../../k8s/objects.js";

/** Headscale's tag grammar (hscontrol/policy/v2 tag names; the CRDs' `tag` pattern). */
export const TAG_BODY_MAX = 63;
const HASH_CHARS = 16;

/** RFC 1123 label (a namespace, or a name without dots). */
const LABEL = /^[a-z0-9]([a-z0-9-]*[a-z0-9])?$/;

/** Lower-case base32 (RFC 4648 alphabet, lower-cased: [a-z2-7]) of the first bytes of a SHA-256. */
function hash32(text: string, chars: number): string {
  const bytes = createHash("sha256").update(text).digest();
  const alphabet = "abcdefghijklmnopqrstuvwxyz234567";
  let out = "";
  let bits = 0;
  let acc = 0;
  for (const b of bytes) {
    acc = (acc << 8) | b;
    bits += 8;
    while (bits >= 5 && out.length < chars) {
      out += alphabet[(acc >>> (bits - 5)) & 31];
      bits -= 5;
    }
    acc &= (1 << bits) - 1;
    if (out.length >= chars) break;
  }
  return out;
}

/**
 * The derived tag of (namespace, name) under the Tailnet's tagPrefix (`tag:[a-z][a-z0-9-]{0,40}`),
 * injective over (namespace, name):
 * - direct form `<prefix><namespace with every "-" doubled>-<name>`, when namespace and name are RFC 1123
 *   labels and it fits 63 characters. Namespace dashes come in even runs, and the separator is the first
 *   odd run (a label neither starts nor ends with "-"), so the pair reads back uniquely. A namespace
 *   without a dash keeps the tag earlier versions derived (`tag:k8s-shop-db`).
 * - hashed form `<prefix><alphanumerics of namespace and name, cut>--<16 base32 of sha256(ns/name)>` for
 *   names with dots or too long: its only dash run (after the prefix) has length 2, so it never equals a
 *   direct form; two hashed forms collide only if 80 bits of SHA-256 do (about 2^40 objects for an even
 *   chance, beyond any cluster), and "one tag, one owner" (foreignCarriers) still refuses such a twin.
 */
export function derivedTag(tagPrefix: string, namespace: string, name: string): string {
  const prefix = tagPrefix.slice(4);
  if (LABEL.test(namespace) && LABEL.test(name)) {
    const direct = `${namespace.replaceAll("-", "--")}-${name}`;
    if (prefix.length + direct.length <= TAG_BODY_MAX) return `tag:${prefix}${direct}`;
  }
  const digest = hash32(`${namespace}/${name}`, HASH_CHARS);
  const room = TAG_BODY_MAX - prefix.length - 2 - HASH_CHARS;
  const readable = `${namespace}${name}`.replace(/[^a-z0-9]/g, "").slice(0, Math.max(0, room));
  return `tag:${prefix}${readable}--${digest}`;
}

/**
 * The tag versions before injective derivation gave (namespace, name): `<prefix><namespace>-<name>`,
 * lower-cased, other characters as "-", cut to 63. Only to recognise an object's own earlier tag.
 */
export function legacyDerivedTag(tagPrefix: string, namespace: string, name: string): string {
  const body = `${tagPrefix.slice(4)}${namespace}-${name}`
    .toLowerCase()
    .replace(/[^a-z0-9-]/g, "-")
    .slice(0, TAG_BODY_MAX)
    .replace(/-+$/, "");
  return `tag:${body}`;
}

/**
 * The derived tag of a workload object: the tag an earlier version derived for it, when its status
 * (written by the operator only: editors cannot write status) still names it — so upgrading renames no
 * existing agent, gateway or policy entry — else derivedTag.
 */
export function objectDerivedTag(parent: K8sObject, tagPrefix: string): string {
  const namespace = parent.metadata.namespace ?? "";
  const name = parent.metadata.name;
  const recorded = recordOf(parent.status).tag;
  if (typeof recorded === "string" && recorded === legacyDerivedTag(tagPrefix, namespace, name)) return recorded;
  return derivedTag(tagPrefix, namespace, name);
}

// ---- spec.tenancy of the Tailnet ----

export interface LabelSelector {
  matchLabels?: Record<string, string>;
  matchExpressions?: { key: string; operator: string; values?: string[] }[];
}

export interface TagGrant {
  namespaceSelector: LabelSelector;
  tags: string[];
}

/** spec.tenancy as read: undefined namespaceSelector = every namespace (the pre-tenancy behaviour). */
export interface Tenancy {
  namespaceSelector?: LabelSelector;
  tags: TagGrant[];
  /** spec.tenancy.exitNodes.namespaceSelector: whose gateways may be exit nodes; undefined = nobody's. */
  exitNodes?: LabelSelector;
}

type Rec = Record<string, unknown>;
const strings = (v: unknown): string[] => (Array.isArray(v) ? v.filter((x): x is string => typeof x === "string") : []);

function selectorOf(v: unknown): LabelSelector | undefined {
  if (!v || typeof v !== "object" || Array.isArray(v)) return undefined;
  const r = v as Rec;
  const labels = recordOf(r.matchLabels);
  return {
    matchLabels: Object.fromEntries(Object.entries(labels).filter(([, x]) => typeof x === "string")) as Record<
      string,
      string
    >,
    matchExpressions: (Array.isArray(r.matchExpressions) ? r.matchExpressions : []).map((e) => {
      const x = recordOf(e);
      return { key: String(x.key ?? ""), operator: String(x.operator ?? ""), values: strings(x.values) };
    }),
  };
}

/** A selector that selects no namespace (an unknown operator never matches). */
const NOTHING: LabelSelector = { matchExpressions: [{ key: "", operator: "" }] };

export function readTenancy(tailnetSpec: unknown): Tenancy {
  const t = recordOf(recordOf(tailnetSpec).tenancy);
  const exit = recordOf(t.exitNodes).namespaceSelector;
  return {
    ...(t.namespaceSelector !== undefined ? { namespaceSelector: selectorOf(t.namespaceSelector) ?? {} } : {}),
    ...(exit !== undefined ? { exitNodes: selectorOf(exit) ?? NOTHING } : {}),
    tags: (Array.isArray(t.tags) ? t.tags : []).map((g) => ({
      // a grant without a selector grants nothing: an admin names who gets a tag
      namespaceSelector: selectorOf(recordOf(g).namespaceSelector) ?? NOTHING,
      tags: strings(recordOf(g).tags),
    })),
  };
}

/** Kubernetes LabelSelector semantics (apimachinery labels.Selector): every term must hold; {} selects all. */
export function selects(sel: LabelSelector, labels: Record<string, string>): boolean {
  for (const [k, v] of Object.entries(sel.matchLabels ?? {})) if (labels[k] !== v) return false;
  for (const e of sel.matchExpressions ?? []) {
    const has = Object.hasOwn(labels, e.key);
    const values = e.values ?? [];
    if (e.operator === "In" && !(has && values.includes(labels[e.key]))) return false;
    if (e.operator === "NotIn" && has && values.includes(labels[e.key])) return false;
    if (e.operator === "Exists" && !has) return false;
    if (e.operator === "DoesNotExist" && has) return false;
    if (!["In", "NotIn", "Exists", "DoesNotExist"].includes(e.operator)) return false;
  }
  return true;
}

/** The Namespace object Metacontroller sent as a related object (workloadRelated asks for it). */
export function namespaceOf(related: ObjectMaps | undefined, namespace: string): K8sObject | undefined {
  return findObject(related, "v1", "Namespace", namespace);
}

/** Why a tenant's object is refused: each its own reason (docs/reference/reasons.md). */
export type TenancyReason = "NamespaceNotAllowed" | "TagNotGranted" | "TagInUse";
const TENANCY_REASONS: readonly string[] = [
  "TagNotGranted",
  "TagInUse",
  "NamespaceNotAllowed",
] satisfies TenancyReason[];
/** Whether an attachment's Ready reason is a tenancy refusal (the decorators repeat it on their object). */
export const isTenancyReason = (r: string | undefined): r is TenancyReason => TENANCY_REASONS.includes(r ?? "");
export type Refusal = { reason: Exclude<TenancyReason, "TagInUse">; message: string };

/**
 * Whether the object may use the Tailnet with this tag (pure). `explicit` is spec.tag / the tags
 * annotation when set; the derived tag needs no grant. `ns` is the namespace's Namespace object, when
 * observed: a selector cannot be judged without its labels, so a missing one refuses (nothing minted).
 */
export function admission(
  tenancy: Tenancy,
  namespace: string,
  ns: K8sObject | undefined,
  explicit: string | undefined,
): Refusal | undefined {
  const labels = ns?.metadata.labels ?? {};
  if (tenancy.namespaceSelector) {
    if (!ns) {
      return {
        reason: "NamespaceNotAllowed",
        message: `the labels of namespace ${namespace} are not observed yet (the Tailnet's spec.tenancy.namespaceSelector needs them)`,
      };
    }
    if (!selects(tenancy.namespaceSelector, labels)) {
      return {
        reason: "NamespaceNotAllowed",
        message: `namespace ${namespace} is not selected by the Tailnet's spec.tenancy.namespaceSelector`,
      };
    }
  }
  if (explicit === undefined) return undefined;
  const granted =
    ns !== undefined && tenancy.tags.some((g) => g.tags.includes(explicit) && selects(g.namespaceSelector, labels));
  if (granted) return undefined;
  return {
    reason: "TagNotGranted",
    message: `${explicit} is not granted to namespace ${namespace} (the Tailnet's spec.tenancy.tags); nothing is minted for it`,
  };
}

/**
 * Whether a gateway in `namespace` may offer itself as an exit node (pure): an exit node lets tailnet clients
 * send anything to the internet from the cluster's network, so only the Tailnet's admins decide, by
 * spec.tenancy.exitNodes.namespaceSelector; unset, no namespace may. The gateway's sync (what the pod
 * advertises, what it approves) and the Tailnet's render (autoApprovers.exitNode, the autogroup:internet
 * grant) both call it. `ns` is the related Namespace: without its labels nothing is allowed.
 */
export function exitNodeAdmission(
  tenancy: Tenancy,
  namespace: string,
  ns: K8sObject | undefined,
): { reason: "ExitNodeNotAllowed"; message: string } | undefined {
  const refuse = (why: string) => ({
    reason: "ExitNodeNotAllowed" as const,
    message: `spec.exitNode: ${why}; the gateway advertises no exit routes and the policy grants none`,
  });
  if (!tenancy.exitNodes)
    return refuse("the Tailnet's spec.tenancy.exitNodes is not set (no namespace may run an exit node)");
  if (!ns) return refuse(`the labels of namespace ${namespace} are not observed yet`);
  if (!selects(tenancy.exitNodes, ns.metadata.labels ?? {})) {
    return refuse(`namespace ${namespace} is not selected by the Tailnet's spec.tenancy.exitNodes.namespaceSelector`);
  }
  return undefined;
}

/** exitNodeAdmission for a gateway object against its Tailnet's tenancy and the related Namespace. */
export function admitExitNode(parent: K8sObject, tenancy: Tenancy, related: ObjectMaps | undefined) {
  const namespace = parent.metadata.namespace ?? "";
  return exitNodeAdmission(tenancy, namespace, namespaceOf(related, namespace));
}

// ---- what is the object's own in Headscale ----

/**
 * The pre-auth key ids an object may call its own: those status.preAuthKeyIds recorded and those its key
 * Secrets name. An object from before that field (no status.preAuthKeyIds) also adopts, once, the keys
 * earlier versions minted for it: agent-shaped (reusable, ephemeral), no user, exactly its tag, created at
 * or after the object. For an explicit tag — which an admin's keys may carry too — only when the caller
 * says the tag is granted to the object (`granted`, from admission) and only keys with exactly the lifetime
 * the operator gives agent keys (`granted.ttlSeconds`): a tenant can neither grant itself a tag nor mint a key.
 */
export function ownKeyIds(
  parent: K8sObject,
  tag: string,
  secretKeyIds: readonly string[],
  keys: readonly HsPreAuthKey[] | undefined,
  granted?: { ttlSeconds: number },
): Set<string> {
  const status = recordOf(parent.status);
  const ids = new Set([...strings(status.preAuthKeyIds), ...secretKeyIds]);
  const explicit = explicitTag(parent) !== undefined;
  if (Array.isArray(status.preAuthKeyIds) || !keys || (explicit && !granted)) return ids;
  const born = Date.parse(parent.metadata.creationTimestamp ?? "");
  // only keys carrying the tag can have the agent shape (exactly [tag]): the tag's bucket, not every key
  for (const k of keysWithTag(keys, tag)) {
    const created = Date.parse(k.createdAt ?? "");
    const shape = k.reusable && k.ephemeral && k.user === null && k.aclTags.length === 1 && k.aclTags[0] === tag;
    const lifetime = (Date.parse(k.expiration ?? "") - created) / 1000;
    if (shape && !(created < born) && (!explicit || lifetime === granted?.ttlSeconds)) ids.add(k.id);
  }
  return ids;
}

/** Nodes registered with a key this object minted: the only nodes it may ever delete. */
export function nodesMintedBy(nodes: readonly HsNode[], keyIds: ReadonlySet<string>): HsNode[] {
  return nodesOfKeys(nodes, keyIds);
}

/** Nodes carrying the tag that this object did not register: someone else owns the tag. */
export function foreignCarriers(nodes: readonly HsNode[], tag: string, keyIds: ReadonlySet<string>): HsNode[] {
  return nodesTagged(nodes, tag).filter((n) => !(n.preAuthKey && keyIds.has(n.preAuthKey.id)));
}

/**
 * One tag, one owner (pure): the nodes that make the object's explicit tag someone else's — carriers it did
 * not register. The workload's sync (nothing minted: TagInUse) and the Tailnet's render (nothing rendered)
 * both call it, so a refused object gets neither keys nor grants. A derived tag is the object's own by
 * construction: its only twin is a legacy tag another object kept (kept-tags.ts keptTagTwins).
 */
export function tagTakenBy(parent: K8sObject, tag: string, nodes: readonly HsNode[], ownKeys: ReadonlySet<string>) {
  return explicitTag(parent) === undefined ? [] : foreignCarriers(nodes, tag, ownKeys);
}

/**
 * tagTakenBy from what the Tailnet sees: Headscale's node list and the object's status, not its key Secrets
 * nor the key list. status.preAuthKeyIds records a minted key in the same sync that mints it (before any
 * node can register with it); an object from before that field adopts its nodes' agent-shaped keys as its
 * own sync does (ownKeyIds, only the keys nodes registered with: the only ones a carrier can name).
 */
export function tagTakenFromTailnet(
  parent: K8sObject,
  tag: string,
  nodes: readonly HsNode[],
  ttlSeconds: number,
): HsNode[] {
  if (explicitTag(parent) === undefined) return [];
  const keys = new Map(nodes.flatMap((n) => (n.preAuthKey ? [[n.preAuthKey.id, n.preAuthKey] as const] : [])));
  return tagTakenBy(parent, tag, nodes, ownKeyIds(parent, tag, [], [...keys.values()], { ttlSeconds }));
}

/**
 * Most ids status remembers of keys no node uses: an object rotating every 12 h keeps about two weeks of them. Ids a
 * node still uses are kept beyond it: with in-place rotation a node keeps the key id it registered with for life
 * (Headscale updates it only on a re-registration, hscontrol/state/state.go), and dropping it would drop the node's
 * ownership (nodesMintedBy, finalize). In-use ids are bounded by replicas plus predecessors.
 */
export const MAX_RECORDED_KEYS = 32;
/** The hard bound of status.preAuthKeyIds (its schema's maxItems): in-use ids past it keep the newest. */
export const MAX_RECORDED_KEYS_TOTAL = 128;

const byNumericId = (a: string, b: string) => Number(a) - Number(b) || a.localeCompare(b);

/**
 * status.preAuthKeyIds for the next status: the ids known so far plus the key in use, kept while a node
 * still uses one or Headscale still lists it (pruned only from lists read this sync). Ids a node uses are
 * always kept; of the others the newest MAX are. Without the lists nothing is pruned or capped: which ids a node
 * uses is not known, and the known set was bounded when it was recorded.
 */
export function recordedKeyIds(
  known: ReadonlySet<string>,
  current: string | undefined,
  nodes: readonly HsNode[] | undefined,
  keys: readonly HsPreAuthKey[] | undefined,
): string[] {
  const ids = new Set(known);
  if (current) ids.add(current);
  if (!nodes || !keys) return [...ids].sort(byNumericId).slice(-MAX_RECORDED_KEYS_TOTAL);
  // by the lists' indexes: O(own ids), not O(every key and node) per sync
  const inUse = [...ids].filter((id) => keyInUse(nodes, id));
  const used = new Set(inUse);
  const others = [...ids]
    .filter((id) => !used.has(id) && (id === current || keyById(keys, id) !== undefined))
    .sort(byNumericId)
    .slice(-MAX_RECORDED_KEYS);
  const room = MAX_RECORDED_KEYS_TOTAL - others.length;
  return [...inUse.sort(byNumericId).slice(-room), ...others].sort(byNumericId);
}

/** The namespace/name and explicit tag of a workload object, for admission. */
export function explicitTag(parent: K8sObject): string | undefined {
  const t = recordOf(parent.spec).tag;
  return typeof t === "string" && t ? t : undefined;
}

/** admission() for a workload object against its Tailnet's tenancy and the related Namespace. */
export function admitObject(parent: K8sObject, tenancy: Tenancy, related: ObjectMaps | undefined): Refusal | undefined {
  const namespace = parent.metadata.namespace ?? "";
  return admission(tenancy, namespace, namespaceOf(related, namespace), explicitTag(parent));
}
