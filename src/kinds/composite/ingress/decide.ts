/**
 * decide for a TailnetIngress (pure): spec + observation + the outcomes of act in, children +
 * conditions + status fields out. Ready repeats the first blocker: NoTailnet / NoAPIKey, TagUnknown,
 * InvalidDNSName, DNSNameReserved, DNSNameConflict, then Registered, PolicyGranted, TLSReady, BackendsReachable
 * (reasons page order). An expose whose backend is in a namespace that did not consent (permitted.ts) is left out
 * of the agent's config, BackendsReachable False/BackendNotPermitted. The writes it reports on are planned in plan.ts.
 */
import { IngressCondition as C, IngressReason as R } from "../../../conditions/tables/ingress.js";
import type { HsNode } from "../../../headscale/types.js";
import { reuseObserved } from "../../../k8s/objects.js";
import type { DecideInput, Decision } from "../../../pipeline/run.js";
import { registeredCondition, tagKnownCondition } from "../../shared/agent-conditions.js";
import { agentName } from "../../shared/agent-pod.js";
import {
  decideReplicas,
  type ReplicaNodesOutcome,
  stagedReplicaAnswer,
  withRolloutNote,
} from "../../shared/agent-replicas.js";
import { type AuthKeyOutcome, observedKeys } from "../../shared/authkey.js";
import { heldNamesOf, type NameHolder } from "../../shared/dns-owners.js";
import { agentHostname } from "../../shared/dns-tenancy.js";
import { type IngressNames, nameConflicts, namesIn } from "../../shared/ingress-names.js";
import { listNames, nodeLabel, nodesWithTag } from "../../shared/node-names.js";
import { withoutStateData } from "../../shared/replica.js";
import type { NodeStatusItem, ReplicaNodesPlan } from "../../shared/replica-nodes.js";
import { recordedKeyIds } from "../../shared/tenancy.js";
import { effectiveTag, type TailnetSettings } from "../../shared/workload.js";
import type { IngressOutcome } from "./act.js";
import { backendsCondition } from "./backends.js";
import { certificateChildren, certificatesOf } from "./certificate.js";
import { ingressChildren } from "./children.js";
import { cond, type IngressCondition, isReadyBlocker } from "./conditions.js";
import { type IngressFacts, ingressOwnKeys, settingsOf, type TailnetView } from "./facts.js";
import { policyGranted } from "./granted.js";
import { type Blocker, dnsServedCondition, namesBlockers, publishedNames } from "./names.js";
import type { IngressObservation } from "./observe.js";
import { refusedExposes } from "./permitted.js";
import type { IngressPlan } from "./plan.js";
import type { IngressSpec } from "./spec.js";
import { tlsCondition } from "./tls.js";

/** decide's input: the spec, the facts, with the node list as left by act, and the pre-auth key after act. */
export interface IngressDecideInput extends IngressFacts {
  spec: IngressSpec;
  /** The pre-auth key after act (see planIngress). */
  authKey: AuthKeyOutcome;
  /** The replica plan (planIngress) and act's node writes. */
  replicaPlan?: ReplicaNodesPlan;
  replicaNodes?: ReplicaNodesOutcome;
}

export interface IngressStatusFields extends Record<string, unknown> {
  tag?: string;
  dnsName?: string;
  exposes: { name: string; dnsName?: string; dnsAliases: string[]; reachable?: boolean }[];
  /** Which node each replica is (replica-nodes.ts), sorted by replica. */
  nodes?: NodeStatusItem[];
  /** The pre-auth keys this ingress minted (tenancy.ts): the only ones finalize and rollouts act on. */
  preAuthKeyIds?: string[];
}

export interface IngressDecision extends Decision {
  conditions: IngressCondition[];
  fields: IngressStatusFields;
  /** Per expose (spec order): reachability as observed, for tailnet_ingress_expose_reachable. */
  exposes: { name: string; reachable: boolean | undefined }[];
  /** Expiry of the pre-auth key in use (tailnet_auth_key_expiry_timestamp_seconds). */
  authKeyExpiresAt?: Date;
}

/** While something outside the operator is awaited (registration, policy, agent, Headscale). */
export const WAIT_RESYNC_SECONDS = 30;
const MIN_RESYNC_SECONDS = 5;

type Tailnetless = Exclude<TailnetView, { ok: true }>;

/** Not evaluated without the Tailnet or its credentials, with the Ready reason that explains it. */
function notEvaluated<T extends "TagKnown" | "Registered" | "NodeIdentity">(
  type: T,
  tailnet: Tailnetless,
): IngressCondition<T>;
function notEvaluated(type: "TagKnown" | "Registered" | "NodeIdentity", tailnet: Tailnetless): IngressCondition {
  const message = `not evaluated: ${tailnet.message}`;
  return cond(type, "Unknown", tailnet.reason, message);
}

/** A condition that must be True to let Ready through; its reason is repeated on Ready. */
function blockerFrom(c: IngressCondition): Blocker {
  if (c.status === "True" || !isReadyBlocker(c.reason))
    return { ok: c.status === "True", reason: "Ready", message: "" };
  return { ok: false, reason: c.reason, message: c.message };
}

/** Seconds until the next moment the answer would change by itself, or undefined. */
function resyncAfter(waiting: boolean, due: (Date | undefined)[], now: Date): number | undefined {
  const candidates = waiting ? [WAIT_RESYNC_SECONDS] : [];
  for (const d of due) {
    if (!d) continue;
    const s = Math.ceil((d.getTime() - now.getTime()) / 1000);
    candidates.push(s > 0 ? Math.max(s, MIN_RESYNC_SECONDS) : WAIT_RESYNC_SECONDS);
  }
  return candidates.length ? Math.min(...candidates) : undefined;
}

/** When the key in use reaches half its lifetime (rotation time). */
function rotationDue(authKey: AuthKeyOutcome): Date | undefined {
  const [key] = observedKeys(authKey.secret ? [authKey.secret] : []);
  if (!key) return undefined;
  return new Date(key.createdAt.getTime() + (key.expiresAt.getTime() - key.createdAt.getTime()) / 2);
}

/**
 * Ready needs a node that serves: with nodes carrying the tag and none of them online (Headscale's view),
 * Ready is NodesOffline; TailnetNodeOffline alerts on each offline node. Nothing while not registered.
 */
function onlineBlocker(registered: IngressCondition<"Registered">, mine: readonly HsNode[], tag: string): Blocker {
  if (registered.status !== "True" || mine.length === 0 || mine.some((n) => n.online)) {
    return { ok: true, reason: "Ready", message: "" };
  }
  const noun = mine.length === 1 ? "the node" : `all ${mine.length} nodes`;
  return {
    ok: false,
    reason: "NodesOffline",
    message: `${noun} carrying ${tag} ${mine.length === 1 ? "is" : "are"} offline in Headscale (${listNames(mine.map(nodeLabel))}); check the agent pods and their connection to the control server`,
  };
}

/** With replicas > 1, how many nodes serve: "2 of 3 nodes online" (or "3 nodes online"); nothing with one replica. */
function onlineNote(replicas: number, mine: readonly HsNode[] | undefined): string {
  if (replicas <= 1 || !mine) return "";
  const online = mine.filter((n) => n.online).length;
  return online < replicas ? ` (${online} of ${replicas} nodes online)` : ` (${online} nodes online)`;
}

// the agent's node is never named like the user-facing hostname (dns-tenancy.ts agentHostname)
const nodeHostnameOf = (hostname: string, namespace: string, flat: readonly string[] | undefined) => ({
  nodeHostname: agentHostname(hostname, namespace, flat),
});

/** The decide stage (src/pipeline/run.ts DecideInput): the facts observed, with the node list and key act left. */
export function decideIngressSync(
  input: DecideInput<IngressSpec, IngressObservation, IngressPlan, IngressOutcome>,
): IngressDecision {
  const { spec, observed, outcome, plan } = input;
  return decideIngress({
    ...observed.facts,
    spec,
    nodes: outcome.nodes,
    authKey: outcome.authKey,
    ...(plan.replicas ? { replicaPlan: plan.replicas } : {}),
    ...(outcome.replicaNodes ? { replicaNodes: outcome.replicaNodes } : {}),
  });
}

/** The names the ingress would publish, and which of them a Headscale node or an older ingress holds. */
interface NamesSeen {
  settings?: TailnetSettings;
  tag?: string;
  flat?: readonly string[];
  names?: IngressNames;
  held: NameHolder[];
  heldNames: Set<string>;
  conflicts: { name: string; claimedBy: string }[];
}

function namesSeen(input: IngressDecideInput): NamesSeen {
  const { parent, spec, tailnet } = input;
  const settings = settingsOf(tailnet);
  const tag = settings ? effectiveTag(parent, settings.tagPrefix) : spec.tag;
  const flat = settings?.dnsFlatNamespaces;
  const names = settings ? namesIn(parent, settings.baseDomain, flat) : undefined;
  // Names a Headscale node holds (dns-owners.ts), from this sync's node list; none known without it.
  const held = settings && input.nodes?.ok ? heldNamesOf(parent, input.ingresses, input.nodes.value, settings) : [];
  const heldNames = new Set(held.map((h) => h.name));
  const conflicts = settings
    ? nameConflicts(parent, input.ingresses, settings.baseDomain, flat).filter((c) => !heldNames.has(c.name))
    : [];
  return { ...(settings ? { settings } : {}), tag, flat, names, held, heldNames, conflicts };
}

/** Names a Headscale node or an older ingress holds: never published for this one. */
const lostNames = (seen: NamesSeen) => new Set([...seen.heldNames, ...seen.conflicts.map((x) => x.name)]);

/** Expose i's published names (status.exposes[i]): none while a name is invalid, never one another holds. */
function publishedOfExpose(seen: NamesSeen): (index: number) => string[] {
  const lost = lostNames(seen);
  const { names } = seen;
  return (i) => {
    const e = names?.exposes[i];
    if (!names || names.invalid.length > 0 || !e) return [];
    return [e.dnsName, ...e.dnsAliases].filter((n) => !lost.has(n));
  };
}

/** The conditions besides Ready, and the nodes carrying the tag (undefined while the node list was not read). */
function conditionsOfIngress(input: IngressDecideInput, seen: NamesSeen) {
  const { parent, spec, tailnet, now } = input;
  const { tag, names } = seen;
  const namespace = parent.metadata.namespace ?? "";
  const tagKnown = !tailnet.ok
    ? notEvaluated("TagKnown", tailnet)
    : input.policy && tag
      ? tagKnownCondition(input.policy, tag)
      : cond(C.TagKnown, "Unknown", R.Unknown, "not evaluated: the live policy was not read");
  const keyNote = input.authKey.error
    ? `no pre-auth key could be created (${input.authKey.error})`
    : input.authKey.secret
      ? undefined
      : "no pre-auth key yet";
  const registered = !tailnet.ok
    ? notEvaluated("Registered", tailnet)
    : input.nodes && tag
      ? registeredCondition(input.nodes, tag, keyNote)
      : cond(C.Registered, "Unknown", R.Unknown, "not evaluated: the node list was not read");
  const granted = input.leftOut
    ? cond(C.PolicyGranted, "False", R.LeftOutOfPolicy, input.leftOut)
    : policyGranted(spec, tailnet, tag);
  // Without the Tailnet the names (its baseDomain) are unknown, so certificates cannot be checked.
  const needsNames = spec.mode === "http" || (spec.mode === "kube-api" && spec.exposes.some((e) => e.hasTls));
  const tls =
    names || !needsNames
      ? tlsCondition(spec, {
          parent,
          secrets: input.tlsSecrets,
          certificates: certificatesOf(input.children),
          certificatesWatched: input.certificatesWatched === true,
          tailnet: { name: seen.settings?.name ?? "", certificates: seen.settings?.certificates },
          namesOf: (i) => (names ? [names.exposes[i].dnsName, ...names.exposes[i].dnsAliases] : []),
          publishedOf: publishedOfExpose(seen),
          now,
        })
      : {
          condition: cond(C.TLSReady, "Unknown", R.NoTailnet, `not evaluated: ${tailnet.ok ? "" : tailnet.message}`),
          nextExpiry: undefined,
        };
  const refused = refusedExposes(parent, spec, input.backendGrants);
  const backends = backendsCondition(spec, namespace, agentName(parent), input.scrapes, input.services, refused);
  const mine = tailnet.ok && tag && input.nodes?.ok ? nodesWithTag(input.nodes.value, tag) : undefined;
  // NodeIdentity never stops Ready on an agent: the data plane works, the alert reports it
  const replicas = decideReplicas(
    input.replicas,
    input.replicaPlan,
    input.replicaNodes,
    spec.replicas,
    input.nodes?.ok === true,
  );
  const identity = !tailnet.ok
    ? notEvaluated("NodeIdentity", tailnet)
    : cond(C.NodeIdentity, replicas.identity.status, replicas.identity.reason, replicas.identity.message);
  const dns = dnsServedCondition({
    tailnet: tailnet.ok ? tailnet.settings : tailnet,
    published: publishedNames(names, lostNames(seen)),
    scrapes: input.scrapes,
  });
  return { tagKnown, registered, granted, tls, backends, refused, mine, replicas, identity, dns };
}

type IngressConditions = ReturnType<typeof conditionsOfIngress>;

/** Ready: the first blocker's reason, or serving. */
function readyCondition(input: IngressDecideInput, seen: NamesSeen, c: IngressConditions): IngressCondition {
  const { spec, tailnet } = input;
  const { tag, names } = seen;
  const blockers: Blocker[] = [
    tailnet.ok
      ? { ok: true, reason: "Ready", message: "" }
      : { ok: false, reason: tailnet.reason, message: tailnet.message },
    { ok: c.tagKnown.status === "True", reason: "TagUnknown", message: c.tagKnown.message },
    ...namesBlockers(names, seen.held, seen.conflicts),
    blockerFrom(c.registered),
    c.mine && tag ? onlineBlocker(c.registered, c.mine, tag) : { ok: true, reason: "Ready", message: "" },
    blockerFrom(c.granted),
    blockerFrom(c.tls.condition),
    blockerFrom(c.backends.condition),
  ];
  const first = blockers.find((b) => !b.ok);
  return first
    ? cond(C.Ready, "False", first.reason, first.message)
    : cond(
        C.Ready,
        "True",
        R.Ready,
        `serving ${listNames(spec.exposes.map((e) => e.name))} on ${names?.dnsName ?? spec.hostname}${onlineNote(spec.replicas, c.mine)}`,
      );
}

/**
 * The agent's children once the Tailnet and the names are known; else the observed ones, as they are (a state
 * Secret as metadata only, replica.ts withoutStateData).
 */
function childrenOfIngress(input: IngressDecideInput, seen: NamesSeen, c: IngressConditions) {
  const { parent, spec, tailnet } = input;
  const { tag, names, flat } = seen;
  if (!(tailnet.ok && tag && names))
    return withoutStateData(input.children.filter((c) => !c.metadata.deletionTimestamp).map(reuseObserved));
  // an expose with a backend in another namespace that did not consent is left out of the agent's config (permitted.ts)
  const served = (_e: unknown, i: number) => !c.refused.has(spec.exposes[i].name);
  return ingressChildren(
    parent,
    input.config,
    { ...spec, exposes: spec.exposes.filter(served) },
    {
      tag,
      loginServer: tailnet.loginServer,
      names: names.exposes.filter(served),
      authKeySecret: input.authKey.secret,
      ca: tailnet.ca,
      ...(tailnet.proxyClass ? { proxyClass: tailnet.proxyClass } : {}),
      ...nodeHostnameOf(spec.hostname, parent.metadata.namespace ?? "", flat),
      replicas: input.replicas,
      ...(input.replicaPlan ? { replicaPlan: input.replicaPlan } : {}),
      released: input.replicaNodes?.released ?? new Set(),
      migrated: c.replicas.migrated,
      certificates: certificateChildren(parent, spec, {
        tailnet: tailnet.settings.name,
        certificates: tailnet.settings.certificates,
        watched: input.certificatesWatched === true,
        publishedOf: publishedOfExpose(seen),
      }),
    },
  );
}

/** The status fields: the names published (never one held or conflicting), reachability, nodes and keys. */
function statusFieldsOf(input: IngressDecideInput, seen: NamesSeen, c: IngressConditions): IngressStatusFields {
  const { spec } = input;
  const { tag, names } = seen;
  const lost = lostNames(seen);
  const published = (n: string) => !!names && names.invalid.length === 0 && !lost.has(n);
  return {
    ...(tag ? { tag } : {}),
    ...(names && published(names.dnsName) ? { dnsName: names.dnsName } : {}),
    exposes: spec.exposes
      .map((e, i) => {
        const n = names?.exposes[i];
        const reachable = c.backends.reachable.get(e.name);
        return {
          name: e.name,
          ...(n && published(n.dnsName) ? { dnsName: n.dnsName } : {}),
          dnsAliases: (n?.dnsAliases ?? []).filter(published),
          ...(reachable === undefined ? {} : { reachable }),
        };
      })
      .sort((a, b) => a.name.localeCompare(b.name)),
    ...(c.replicas.nodes.length ? { nodes: c.replicas.nodes } : {}),
    ...recordedIngressKeys(input, tag),
  };
}

export function decideIngress(input: IngressDecideInput): IngressDecision {
  const { spec, tailnet, now } = input;
  const seen = namesSeen(input);
  const c = conditionsOfIngress(input, seen);
  // one replica's StatefulSet takes a new template at a time (staged-rollout.ts); Ready's message says so
  const staged = stagedReplicaAnswer(childrenOfIngress(input, seen, c), input.replicas, spec.replicas);
  const ready = withRolloutNote(readyCondition(input, seen, c), staged.rollout);
  const waiting =
    c.tagKnown.status !== "True" ||
    c.registered.status !== "True" ||
    c.backends.condition.status !== "True" ||
    c.replicas.waiting;
  // Without a Tailnet there is nothing to poll: Metacontroller syncs again when it appears.
  const resyncAfterSeconds = resyncAfter(waiting && tailnet.ok, [rotationDue(input.authKey), c.tls.nextExpiry], now);
  return {
    children: withoutStateData(staged.children),
    conditions: [c.tagKnown, c.granted, c.registered, c.backends.condition, c.tls.condition, c.dns, c.identity, ready],
    fields: statusFieldsOf(input, seen, c),
    exposes: spec.exposes.map((e) => ({ name: e.name, reachable: c.backends.reachable.get(e.name) })),
    ...(input.authKey.expiresAt ? { authKeyExpiresAt: input.authKey.expiresAt } : {}),
    ...(resyncAfterSeconds === undefined ? {} : { resyncAfterSeconds }),
  };
}

/**
 * status.preAuthKeyIds: with a Tailnet, what the ingress minted so far plus the key in use (no key list is read
 * in sync, so only the cap prunes); without one, as the previous status had it (finalize needs them).
 */
function recordedIngressKeys(input: IngressDecideInput, tag: string | undefined): { preAuthKeyIds?: string[] } {
  if (input.tailnet.ok && tag) {
    const own = input.ownKeys ?? ingressOwnKeys(input.parent, input.children, tag);
    return { preAuthKeyIds: recordedKeyIds(own, input.authKey.keyId, undefined, undefined) };
  }
  const ids = (input.parent.status as { preAuthKeyIds?: unknown } | undefined)?.preAuthKeyIds;
  return Array.isArray(ids) ? { preAuthKeyIds: ids.filter((x): x is string => typeof x === "string") } : {};
}
