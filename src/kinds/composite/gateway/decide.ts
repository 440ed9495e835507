/**
 * The TailnetGateway decision (pure): the facts as act left them (the bootstrap key, the key list read after
 * a mint), the plan and the outcomes of its writes → desired children, conditions (Ready derived in api.md's
 * order), status fields and when to look again. Nothing here does I/O or reads the clock.
 * A gateway that is not served (no Tailnet, no credentials, no usable zone) keeps every child as observed.
 */
import { blockerFrom, type ConditionInput, deriveReady } from "../../../conditions/condition.js";
import { conditionsOf } from "../../../conditions/table.js";
import { GatewayCondition as C, GATEWAY_REASONS, GatewayReason as R } from "../../../conditions/tables/gateway.js";
import { jsonEqual } from "../../../k8s/json-equal.js";
import { type K8sObject, LAST_APPLIED, reuseObserved } from "../../../k8s/objects.js";
import type { DecideInput, Decision } from "../../../pipeline/run.js";
import { invalidSpecConditions, previousStatus } from "../../../pipeline/status.js";
import { withoutStateData } from "../../shared/replica.js";
import { type NodeStatusItem, statusNodes } from "../../shared/replica-nodes.js";
import { recordedKeyIds } from "../../shared/tenancy.js";
import type { GatewayOutcome, GatewayWriteOutcome } from "./act.js";
import {
  caConfigMap,
  corefileConfigMap,
  dnsService,
  gatewayDisruptionBudget,
  gatewayNetworkPolicy,
  zoneConfigMap,
} from "./children.js";
import { clusterDNSForward, dnsReady, serviceIP, serviceReady, workloadCurrent } from "./conditions.js";
import { exitWork } from "./exit.js";
import { freshBlockedMessage } from "./fresh.js";
import { nodeIdentity, withRenames } from "./identity.js";
import { describeNode, type StatusNode, statusNodeOf } from "./nodes.js";
import type { GatewayObservation, GatewayUnserved } from "./observe.js";
import {
  type FreshVerdict,
  freshVerdict,
  type GatewayConditionOf,
  type GatewayInputs,
  type GatewayPlan,
  ourKeyIdsOf,
  routeWork,
  staleWork,
} from "./plan.js";
import { renderedStatefulSets, replicaChildren, scaledToZero } from "./replicas.js";
import type { GatewaySpec } from "./spec.js";
import { renderCorefile } from "./workload.js";
import { derivedZone, renderZoneFile } from "./zone.js";

const { cond, types: TYPES } = conditionsOf(GATEWAY_REASONS);

/** The shortest resync asked for (the key plan's half-life may be seconds away). */
export const MIN_RESYNC_SECONDS = 5;
/** While no node is registered or Headscale could not be read. */
export const WAIT_RESYNC_SECONDS = 30;

export type GatewayDecideInput = GatewayInputs | GatewayUnserved;

export interface GatewayFields {
  tag?: string;
  /** Replica 0's node. */
  node?: StatusNode;
  /** Each replica's node (src/api/schemas/common.ts nodeStatusItem). */
  nodes?: NodeStatusItem[];
  /** The pre-auth keys this gateway minted that a node may still use (ownership outlives rotations). */
  preAuthKeyIds?: string[];
  dnsServiceIP?: string;
  [field: string]: unknown;
}

export interface GatewayDecision extends Decision {
  children: K8sObject[];
  conditions: ConditionInput[];
  fields: GatewayFields;
  /** The bootstrap key's expiry (the tailnet_authkey_expiry metric). */
  keyExpiresAt?: Date;
}

/** The decide stage (src/pipeline/run.ts DecideInput): the observation as act left it, the plan, the outcomes. */
export function decideGatewaySync({
  observed,
  plan,
  outcome,
}: DecideInput<GatewaySpec, GatewayObservation, GatewayPlan, GatewayOutcome>): GatewayDecision {
  return decideGateway(settled(observed, outcome), plan, outcome);
}

/** The decide input after act: the key as act left it and, after a mint, the key list read again. */
export function settled(o: GatewayObservation, outcome: GatewayOutcome): GatewayDecideInput {
  if ("unserved" in o) return o;
  const { conn: _conn, secrets: _secrets, ...facts } = o;
  const headscale = outcome.keys ? { ...facts.headscale, keys: outcome.keys } : facts.headscale;
  return { ...facts, key: outcome.key ?? {}, headscale };
}

/** Status fields of the previous sync worth keeping when nothing new can be learned. */
function keptFields(parent: K8sObject): GatewayFields {
  const { conditions: _c, observedGeneration: _g, ...rest } = previousStatus(parent);
  return rest;
}

const SUSPENDED = "spec.suspend is true: the gateway is scaled to zero (each replica keeps its state and node)";

/** Not served: every child stays as observed (scaled to zero when suspended) and nothing is evaluated. */
function unservedDecision(input: GatewayUnserved): GatewayDecision {
  const { parent, spec, unserved } = input;
  const withdrawn = spec.suspend;
  if (unserved.reason === "InvalidSpec") {
    const conditions = invalidSpecConditions(parent, C.Ready, TYPES, unserved.message);
    return { children: withoutStateData(input.children), conditions, fields: keptFields(parent), withdrawn };
  }
  const { reason, message } = unserved;
  const conditions: ConditionInput[] = TYPES.filter((t) => t !== C.Ready).map((t) =>
    cond(t, "Unknown", reason, `not evaluated: ${message}`),
  );
  conditions.push(
    spec.suspend ? cond(C.Ready, "False", R.Suspended, SUSPENDED) : cond(C.Ready, "False", reason, message),
  );
  const fields = keptFields(parent);
  if (unserved.tag) fields.tag = unserved.tag;
  const children = withoutStateData(spec.suspend ? scaledToZero(input.children) : input.children);
  return { children, conditions, fields, withdrawn };
}

function registered(input: GatewayInputs, v: FreshVerdict): GatewayConditionOf<"Registered"> {
  if (v.problems.length) {
    // A check that could not run (Headscale not observed) is not a refusal: NotObserved, so an outage
    // pages as Headscale API errors, not as TailnetGatewayFreshBlocked. The zone stays untouched either way.
    if (!v.definite) return cond(C.Registered, "Unknown", R.NotObserved, freshBlockedMessage(v.problems));
    return cond(C.Registered, "False", R.FreshBlocked, freshBlockedMessage(v.problems));
  }
  if (!v.facts?.current) {
    const key = input.key.keyId ? ` with bootstrap key ${input.key.keyId}` : "";
    return cond(C.Registered, "False", R.Provisioning, `waiting for ${input.spec.hostname} to register${key}`);
  }
  if (v.facts.identityChanges.length) {
    const parts = v.facts.identityChanges.map((b) => {
      const node = b.node as NonNullable<typeof b.node>;
      const secret = input.stateFacts.find((f) => f.index === b.index)?.name ?? "its state Secret";
      return `replica ${b.index}: ${describeNode(node)} changed its node key from ${b.record?.nodeKey} to ${node.nodeKey} while its state persisted; to keep this node with its new key, set the annotation tailnet.internal/accept-node-key: ${node.nodeKey}; to register a new node instead, delete Secret ${secret}`;
    });
    return cond(C.Registered, "False", R.IdentityChanged, parts.join("; "));
  }
  const n = v.facts.current;
  if (input.spec.replicas > 1) {
    const nodes = v.facts.currents;
    const online = nodes.filter((x) => x.online).length;
    const keys = [...new Set(nodes.map((x) => x.preAuthKey?.id ?? ""))].join(", ");
    return cond(
      C.Registered,
      "True",
      R.FreshRuntimeReady,
      `${nodes.length} of ${input.spec.replicas} replicas bound to their nodes (${online} online: ${nodes.map(describeNode).join(", ")}), registered with bootstrap key ${keys} as ${input.tag}; bootstrap key, node identity and pod templates verified`,
    );
  }
  return cond(
    C.Registered,
    "True",
    R.FreshRuntimeReady,
    `${describeNode(n)} registered with bootstrap key ${n.preAuthKey?.id} as ${input.tag}; bootstrap key, node identity and pod template verified`,
  );
}

/** RoutesInSync after act: held while a key was minted, the approval's failure, else what the rules say. */
function routesInSync(
  input: GatewayInputs,
  v: FreshVerdict,
  plan: GatewayPlan,
  out: GatewayWriteOutcome,
): GatewayConditionOf<"RoutesInSync"> {
  const work = routeWork(input, v);
  if (out.minted && work.approve) {
    const a = work.moreApprovals?.length
      ? { add: work.approve.add, node: [work.approve, ...work.moreApprovals].map((x) => x.node).join(", ") }
      : work.approve;
    return cond(
      C.RoutesInSync,
      "False",
      R.NotApproved,
      `approving ${a.add.join(", ")} on ${a.node} waits for the next sync: bootstrap key ${out.minted} was minted in this one`,
    );
  }
  const a = plan.writes.approve;
  if (a && plan.writes.moreApprovals?.length && out.approve && !out.approve.ok) {
    return cond(C.RoutesInSync, "False", R.NotApproved, `approving routes failed on ${out.approve.error}`);
  }
  if (a && out.approve && !out.approve.ok) {
    return cond(
      C.RoutesInSync,
      "False",
      R.NotApproved,
      `approving ${a.add.join(", ")} on ${a.node} failed: ${out.approve.error}`,
    );
  }
  return work.condition;
}

/** ExitNode after act: held while a key was minted, the approval's failure, else what the rules say. */
function exitNode(input: GatewayInputs, v: FreshVerdict, out: GatewayWriteOutcome): GatewayConditionOf<"ExitNode"> {
  const work = exitWork(input, v);
  const nodes = work.approvals.map((a) => a.node).join(", ");
  if (out.minted && work.approvals.length) {
    const message = `approving 0.0.0.0/0, ::/0 on ${nodes} waits for the next sync: bootstrap key ${out.minted} was minted in this one`;
    return cond(C.ExitNode, "False", R.NotApproved, message);
  }
  if (out.approveExit && !out.approveExit.ok) {
    return cond(C.ExitNode, "False", R.NotApproved, `approving 0.0.0.0/0, ::/0 failed on ${out.approveExit.error}`);
  }
  return work.condition;
}

/** StaleNodes after act: held while a key was minted, failed deletions named, else what the rules say. */
function staleNodes(input: GatewayInputs, v: FreshVerdict, out: GatewayWriteOutcome): GatewayConditionOf<"StaleNodes"> {
  const work = staleWork(input, v);
  if (out.minted && work.deleteNodes.length) {
    const nodes = work.deleteNodes.map((d) => d.node).join(", ");
    return cond(
      C.StaleNodes,
      "Unknown",
      R.None,
      `deleting stale ${nodes} waits for the next sync: bootstrap key ${out.minted} was minted in this one`,
    );
  }
  if (out.deleted.some((d) => d.error)) {
    const done = out.deleted.filter((d) => !d.error).map((d) => d.node);
    const failed = out.deleted.filter((d) => d.error).map((d) => `${d.node}: ${d.error}`);
    const prefix = done.length ? `deleted stale ${done.join(", ")}; ` : "";
    return cond(C.StaleNodes, "True", R.Deleted, `${prefix}could not delete stale ${failed.join("; ")} (retrying)`);
  }
  return work.condition;
}

/**
 * The DNS Service is replaced, never updated (OnDelete in compositecontrollers/gateway.yaml: its
 * 53/UDP + 53/TCP ports cannot go through Metacontroller's merge). While the observed one was
 * made from another spec (spec.serviceType changed, an older operator's ports) it is left out of
 * one answer, so Metacontroller deletes it, and the next answer creates the new one.
 */
function replacedService(input: GatewayInputs, desired: K8sObject): K8sObject[] {
  const observed = input.observed.service;
  if (!observed || observed.metadata.deletionTimestamp) return [desired];
  const want = desired.spec as { type?: string };
  const stale = observed.metadata.annotations?.[LAST_APPLIED]
    ? !jsonEqual(reuseObserved(observed).spec, want)
    : (observed.spec as { type?: string } | undefined)?.type !== want.type;
  return stale ? [] : [desired];
}

/** The derived zone's records and refused names (shared/zone-owners.ts). */
function zoneOf(input: GatewayInputs) {
  const { admission } = input.related;
  return derivedZone({
    tailnet: input.tailnet.name,
    zone: input.zone,
    baseDomain: input.tailnet.baseDomain,
    egresses: input.related.egresses,
    services: input.related.services,
    ...(admission ? { tenancy: admission.tenancy, related: admission.related } : {}),
  });
}

/** DNSReady, naming the names the zone leaves out (only while the zone is written: see gatewayChildren). */
const dnsReadyOf = (input: GatewayInputs, v: FreshVerdict) =>
  dnsReady({
    suspended: input.spec.suspend,
    pods: input.related.pods,
    workloads: input.observed.statefulSets,
    refused: v.freshOk ? zoneOf(input).refused : [],
  });

function gatewayChildren(
  input: GatewayInputs,
  v: FreshVerdict,
  rendered: readonly K8sObject[],
  deleted: ReadonlySet<string>,
): K8sObject[] {
  const { parent, spec } = input;
  const names = spec.names;
  const children: K8sObject[] = [
    ...replicaChildren(input, v, rendered, deleted),
    ...replacedService(input, dnsService(parent, names, spec.serviceType)),
    gatewayNetworkPolicy(parent, names, input.metricsPeers),
    corefileConfigMap(parent, names, renderCorefile(input)),
    ...(input.tailnet.ca ? [caConfigMap(parent, names, input.tailnet.ca)] : []),
    ...(spec.replicas > 1 ? [gatewayDisruptionBudget(parent, names)] : []),
  ];
  if (v.freshOk) {
    const { records } = zoneOf(input);
    const owner = `${parent.metadata.namespace}/${parent.metadata.name}`;
    const nameServer = `${names.service}.${parent.metadata.namespace}.svc.cluster.local`;
    children.push(zoneConfigMap(parent, names, renderZoneFile({ zone: input.zone, nameServer, owner, records })));
  } else if (input.observed.zone) {
    // The fresh writer is blocked: the derived zone keeps its last state, exactly as observed.
    children.push(reuseObserved(input.observed.zone));
  }
  if (input.key.secret) children.push(input.key.secret);
  return withoutStateData(children);
}

/**
 * status.node (replica 0's), status.nodes[] (every replica's) and status.preAuthKeyIds. A record moves on only
 * while the fresh writer's checks pass: a binding it refused (a continuity break, a node older than its state
 * Secret) is never recorded, so the refusal holds until an administrator resolves it.
 */
function nodeFields(input: GatewayInputs, v: FreshVerdict, outcome: GatewayWriteOutcome): GatewayFields {
  const deleted = new Set(outcome.deleted.filter((d) => !d.error).map((d) => d.id));
  const nodes = v.facts && v.freshOk ? withRenames(statusNodes(v.facts.plan, deleted), outcome.renamed) : input.record;
  const first = nodes.find((n) => n.replica === 0);
  const node = first ? statusNodeOf(first) : input.previousNode;
  const hs = input.headscale;
  const ids = recordedKeyIds(
    new Set(ourKeyIdsOf(input)),
    input.key.keyId,
    hs.nodes.ok ? hs.nodes.value : undefined,
    hs.keys.ok ? hs.keys.value : undefined,
  );
  return { ...(node ? { node } : {}), nodes, ...(ids.length ? { preAuthKeyIds: ids } : {}) };
}

export function decideGateway(
  input: GatewayDecideInput,
  plan: GatewayPlan,
  outcome: GatewayWriteOutcome,
): GatewayDecision {
  if ("unserved" in input) return unservedDecision(input);
  const { parent, spec } = input;
  const v = freshVerdict(input);
  const rendered = renderedStatefulSets(input);
  const deleted = new Set(outcome.deleted.filter((d) => !d.error).map((d) => d.id));
  const ip = serviceIP(input.observed.service);
  const conditions: ConditionInput[] = [
    registered(input, v),
    routesInSync(input, v, plan, outcome),
    exitNode(input, v, outcome),
    dnsReadyOf(input, v),
    staleNodes(input, v, outcome),
    clusterDNSForward({
      mode: spec.clusterDNSForward,
      zone: input.zone,
      serviceIP: ip,
      serviceName: `${parent.metadata.namespace}/${spec.names.service}`,
      coredns: input.related.coredns,
    }),
    workloadCurrent({ observed: input.observed.statefulSets, rendered }),
    serviceReady({ type: spec.serviceType, service: input.observed.service }),
    nodeIdentity(input, v, outcome),
  ];
  const byType = new Map(conditions.map((c) => [c.type, c]));
  const blocker = (t: string) => blockerFrom(byType.get(t) as ConditionInput);
  conditions.push(
    spec.suspend
      ? cond(C.Ready, "False", R.Suspended, SUSPENDED)
      : deriveReady(
          // ExitNode blocks only when spec.exitNode asks for one
          [
            C.Registered,
            C.RoutesInSync,
            ...(input.exitNode.state === "off" ? [] : [C.ExitNode]),
            C.DNSReady,
            C.WorkloadCurrent,
            C.ServiceReady,
          ].map(blocker),
          R.FreshRuntimeReady,
          byType.get(C.Registered)?.message ?? "",
        ),
  );

  // Look again: soon after a mint held node writes back; in 30 s while nothing registered or Headscale was
  // not read; and when the key plan wants to (half-life).
  const held =
    !!outcome.minted &&
    (!!routeWork(input, v).approve ||
      exitWork(input, v).approvals.length > 0 ||
      staleWork(input, v).deleteNodes.length > 0);
  const waiting = (!v.facts?.current || v.unobserved) && !spec.suspend;
  const waits = [
    held ? MIN_RESYNC_SECONDS : undefined,
    waiting ? WAIT_RESYNC_SECONDS : undefined,
    plan.recheckSeconds,
  ].filter((s): s is number => s !== undefined);
  return {
    children: gatewayChildren(input, v, rendered, deleted),
    conditions,
    fields: { tag: input.tag, ...nodeFields(input, v, outcome), ...(ip ? { dnsServiceIP: ip } : {}) },
    ...(waits.length ? { resyncAfterSeconds: Math.max(MIN_RESYNC_SECONDS, Math.min(...waits)) } : {}),
    withdrawn: spec.suspend,
    ...(input.key.expiresAt ? { keyExpiresAt: input.key.expiresAt } : {}),
  };
}
