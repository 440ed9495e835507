/**
 * The egress decision (pure): (spec, observed children, related, the tailnet as read after act, now) →
 * desired children, conditions, status fields, resync and the metric values. No I/O, no clock.
 *
 * Ready order (docs/reference/reasons/egress.md): NoTailnet, NoAPIKey, TagUnknown, then the first
 * blocking condition of Registered, RoutesGranted, TargetsReachable, and last ServiceConflict —
 * a foreign Service only hides one target's in-cluster name, while the earlier blockers break
 * every target, so they are the better first answer.
 */
import { conditionsOf } from "../../../conditions/table.js";
import {
  EgressCondition as C,
  EGRESS_REASONS,
  EgressReason as R,
  TargetReason,
} from "../../../conditions/tables/egress.js";
import type { OperatorConfig } from "../../../config.js";
import type { Obs } from "../../../headscale/errors.js";
import type { HsNode, HsPolicy, HsPreAuthKey } from "../../../headscale/types.js";
import type { K8sObject, ObjectMaps } from "../../../k8s/objects.js";
import { reuseAllChildren } from "../../../k8s/objects.js";
import type { DecideInput, Decision } from "../../../pipeline/run.js";
import { registeredCondition, tagKnownCondition } from "../../shared/agent-conditions.js";
import type { ReplicaObservation } from "../../shared/agent-replicas.js";
import { decideReplicas, stagedReplicaAnswer, withRolloutNote } from "../../shared/agent-replicas.js";
import type { AuthKeyOutcome, ObservedKey } from "../../shared/authkey.js";
import { ownersIn, refusedTargets } from "../../shared/node-owners.js";
import { leftOutOfPolicy } from "../../shared/policy-left-out.js";
import type { ProxyClassSpec } from "../../shared/proxy-class.js";
import { withoutStateData } from "../../shared/replica.js";
import { type NodeStatusItem, recordedNodes } from "../../shared/replica-nodes.js";
import { tailnetRefName } from "../../shared/tailnet-ref.js";
import { recordedKeyIds, type TenancyReason } from "../../shared/tenancy.js";
import type { TailnetSettings } from "../../shared/workload.js";
import type { EgressOutcome } from "./act.js";
import { egressChildren } from "./children.js";
import { type EgressCond, egressReady, routesGrantedCondition, targetsReachableCondition } from "./conditions.js";
import { conflictingTargets, serviceConflictCondition } from "./conflicts.js";
import type { EgressObservation } from "./observe.js";
import type { EgressPlan } from "./plan.js";
import type { EgressSpec } from "./spec.js";
import { type AgentObservation, evaluateTargets, ROUTE_MISSING, type TargetVerdict } from "./targets.js";

const { cond } = conditionsOf(EGRESS_REASONS);

/** While something external is awaited (registration, a pod, a route, a dial). */
export const WAIT_RESYNC_SECONDS = 30;

/** The tailnet side as decide sees it: read (the node list after act), or why nothing could be. */
export type EgressTailnet =
  | {
      ok: true;
      settings: TailnetSettings;
      /** The Headscale CA from the Tailnet's credentials Secret, delivered to the agent pods. */
      ca?: string;
      tag: string;
      /** The named TailnetProxyClass's settings. */
      proxyClass?: ProxyClassSpec;
      policy: Obs<HsPolicy | null>;
      nodes: Obs<HsNode[]>;
      /** Headscale's key list as read (prunes status.preAuthKeyIds). */
      keys?: Obs<HsPreAuthKey[]>;
      /** The key ids this egress minted (tenancy.ts ownKeyIds). */
      ownKeys: ReadonlySet<string>;
      agents: AgentObservation;
      /** The pre-auth key after act: reused, freshly created, or missing with the reason. */
      authKey: AuthKeyOutcome;
      /** The replicas as observed, planned and written (agent-replicas.ts). */
      replicas: Pick<EgressPlan, "replicas"> & Pick<EgressOutcome, "replicaNodes"> & { observed: ReplicaObservation };
    }
  | {
      ok: false;
      reason: "NoTailnet" | "NoAPIKey" | "ProxyClassMissing" | TenancyReason;
      message: string;
      /** spec.tag, or the effective tag once the Tailnet is known. */
      tag?: string;
    };

export interface EgressDecideInput {
  parent: K8sObject;
  children: ObjectMaps;
  related: ObjectMaps;
  config: OperatorConfig;
  spec: EgressSpec;
  /** The key Secrets among the children, parsed once (observedKeys, newest first). */
  keySecrets: readonly ObservedKey[];
  tailnet: EgressTailnet;
  now: Date;
}

export interface EgressTargetStatus {
  name: string;
  host: string;
  address: string;
  service: string;
  state: "Ready" | "NotReady";
  reason: string;
}

/** What the egress metrics are set from (the same observations as status). */
export interface EgressMetricValues {
  /** state per target: "Ready" or its reason; undefined = not evaluated (series withdrawn). */
  targets?: { name: string; state: string }[];
  /** Targets with NotAdvertised/NotApproved/NoGrant; undefined when routes are not known. */
  routesMissing?: number;
  authKeyExpiresAt?: Date;
}

export interface EgressDecision extends Decision {
  conditions: EgressCond[];
  fields: { tag?: string; targets?: EgressTargetStatus[]; preAuthKeyIds?: string[]; nodes?: NodeStatusItem[] };
  metrics: EgressMetricValues;
}

/** The times of the key in use: its parsed Secret, or a key minted in this sync (created now). */
function keyInUse(
  authKey: AuthKeyOutcome,
  keySecrets: readonly ObservedKey[],
  now: Date,
): { createdAt: Date; expiresAt: Date } | undefined {
  const name = authKey.secret?.metadata.name;
  if (name === undefined) return undefined;
  // the stable Secret keeps its name across rotations: the observed one is the key in use only if it holds it
  const observed = keySecrets.find(
    (k) => k.secret.metadata.name === name && (authKey.keyId === undefined || k.keyId === authKey.keyId),
  );
  if (observed) return observed;
  return authKey.expiresAt ? { createdAt: now, expiresAt: authKey.expiresAt } : undefined;
}

/** The decide stage (src/pipeline/run.ts DecideInput): the sync in the egress's words, decided. */
export function decideEgressSync(input: DecideInput<EgressSpec, EgressObservation, EgressPlan, EgressOutcome>) {
  return decideEgress(egressDecideInput(input));
}

export function egressDecideInput({
  req,
  spec,
  observed,
  plan,
  outcome,
  config,
}: DecideInput<EgressSpec, EgressObservation, EgressPlan, EgressOutcome>): EgressDecideInput {
  const base = { parent: req.parent, children: req.children, related: req.related, config, spec };
  const { now, keySecrets } = observed;
  if (!observed.ok) {
    const { reason, message, tag } = observed;
    return { ...base, keySecrets, now, tailnet: { ok: false, reason, message, ...(tag ? { tag } : {}) } };
  }
  const { settings, ca, tag, policy, agents, proxyClass, keys, ownKeys } = observed;
  const nodes = outcome.nodes ?? observed.nodes;
  const tailnet = {
    ok: true as const,
    settings,
    ...(ca ? { ca } : {}),
    ...(proxyClass ? { proxyClass } : {}),
    tag,
    policy,
    nodes,
    keys,
    ownKeys,
    agents,
  };
  const replicas = {
    observed: observed.replicas,
    ...(plan.replicas ? { replicas: plan.replicas } : {}),
    ...(outcome.replicaNodes ? { replicaNodes: outcome.replicaNodes } : {}),
  };
  return { ...base, keySecrets, now, tailnet: { ...tailnet, authKey: outcome.authKey, replicas } };
}

export function decideEgress(input: EgressDecideInput): EgressDecision {
  const { parent, spec, tailnet, now } = input;
  const conflicting = conflictingTargets(parent, spec.targets, input.related, input.children);
  const serviceConflict = serviceConflictCondition(parent, conflicting);
  if (!tailnet.ok) return decideUnobserved(input, tailnet, serviceConflict);
  const { tag, settings, authKey } = tailnet;
  const verdicts = evaluateTargets({
    targets: spec.targets,
    tag,
    nodes: tailnet.nodes,
    baseDomain: settings.baseDomain,
    agents: tailnet.agents,
    refused: tailnet.nodes.ok
      ? refusedTargets(
          parent,
          tag,
          spec.targets,
          tailnet.nodes.value,
          ownersIn(input.related, tailnetRefName(parent)),
          { tagPrefix: settings.tagPrefix, ttlSeconds: settings.authKeyTTLSeconds, baseDomain: settings.baseDomain },
        )
      : undefined,
  });

  const keyNote = authKey.secret ? undefined : `no pre-auth key yet: ${authKey.error ?? "not created"}`;
  const tagKnown = tagKnownCondition(tailnet.policy, tag);
  const registered = registeredCondition(tailnet.nodes, tag, keyNote);
  // the Tailnet left (part of) this egress's grants out of the policy: that is why routes are missing
  const leftOut = leftOutOfPolicy(input.related, parent, "TailnetEgress");
  const routesGranted = leftOut
    ? cond(C.RoutesGranted, "False", R.LeftOutOfPolicy, leftOut)
    : routesGrantedCondition(tailnet.agents, verdicts);
  const targetsReachable = targetsReachableCondition(tailnet.agents, verdicts);
  const ready = egressReady({ tagKnown, registered, routesGranted, targetsReachable, serviceConflict });
  // NodeIdentity never stops Ready on an agent: the data plane works, the alert reports it
  const rep = tailnet.replicas;
  const replicas = decideReplicas(rep.observed, rep.replicas, rep.replicaNodes, spec.replicas, tailnet.nodes.ok);
  const nodeIdentity = cond(
    C.NodeIdentity,
    replicas.identity.status,
    replicas.identity.reason,
    replicas.identity.message,
  );

  const conflictSet = new Set(conflicting);
  const rendered = egressChildren(parent, {
    config: input.config,
    spec,
    tag,
    loginServer: settings.url,
    authKeySecret: authKey.secret,
    conflicting: conflictSet,
    ca: tailnet.ca,
    proxyClass: tailnet.proxyClass,
    replicas: rep.observed,
    ...(rep.replicas ? { replicaPlan: rep.replicas } : {}),
    released: rep.replicaNodes?.released ?? new Set(),
    migrated: replicas.migrated,
  });
  // one replica's StatefulSet takes a new template at a time (staged-rollout.ts); Ready's message says so
  const staged = stagedReplicaAnswer(rendered, rep.observed, spec.replicas);
  const noted = withRolloutNote(ready, staged.rollout);

  const key = keyInUse(authKey, input.keySecrets, now);
  return {
    // a state Secret leaves as metadata only, whichever path built it (replica.ts)
    children: withoutStateData(staged.children),
    conditions: [tagKnown, registered, routesGranted, targetsReachable, serviceConflict, nodeIdentity, noted],
    fields: {
      tag,
      targets: statusTargets(verdicts, conflictSet),
      ...(replicas.nodes.length ? { nodes: replicas.nodes } : {}),
      preAuthKeyIds: recordedKeyIds(
        tailnet.ownKeys,
        authKey.keyId,
        tailnet.nodes.ok ? tailnet.nodes.value : undefined,
        tailnet.keys?.ok ? tailnet.keys.value : undefined,
      ),
    },
    resyncAfterSeconds: resyncAfter(ready.status !== "True" || replicas.waiting, key, now),
    metrics: {
      targets: verdicts.map((v) => ({ name: v.name, state: v.reason || "Ready" })),
      routesMissing: routesMissing(tailnet.agents, verdicts),
      // an expired key kept after a failed rotation has no expiresAt in the outcome: its Secret's,
      // so the expiry alert keeps firing exactly when it matters
      authKeyExpiresAt: authKey.expiresAt ?? key?.expiresAt,
    },
  };
}

/** status.targets: each target's verdict; a target whose Service name is held by another gets no service. */
function statusTargets(verdicts: readonly TargetVerdict[], conflicting: ReadonlySet<string>): EgressTargetStatus[] {
  return verdicts.map((v) => ({
    name: v.name,
    host: v.host,
    address: v.address,
    service: conflicting.has(v.name) ? "" : v.name,
    state: v.reason === "" ? "Ready" : "NotReady",
    reason: v.reason,
  }));
}

/** 30 s while not Ready or a replica's node is awaited; otherwise (and at most) until the key's half-life. */
function resyncAfter(waiting: boolean, key: { createdAt: Date; expiresAt: Date } | undefined, now: Date) {
  const waits: number[] = [];
  if (waiting) waits.push(WAIT_RESYNC_SECONDS);
  if (key) {
    const half = key.createdAt.getTime() + (key.expiresAt.getTime() - key.createdAt.getTime()) / 2;
    const rotation = Math.ceil((half - now.getTime()) / 1000);
    waits.push(rotation > 0 ? rotation : WAIT_RESYNC_SECONDS);
  }
  return waits.length ? Math.max(1, Math.min(...waits)) : undefined;
}

/** Targets with NotAdvertised/NotApproved/NoGrant; undefined while a route is not known (nothing claimed). */
function routesMissing(agents: AgentObservation, verdicts: readonly TargetVerdict[]): number | undefined {
  const known = agents.ok && verdicts.every((v) => v.route.reason !== TargetReason.ProbeFailed);
  return known ? verdicts.filter((v) => ROUTE_MISSING.has(v.route.reason)).length : undefined;
}

/**
 * No Tailnet, or no Headscale credentials yet: nothing could be observed, so every child is kept as
 * observed, the other conditions are Unknown with the same reason, and Ready names it.
 */
function decideUnobserved(
  input: EgressDecideInput,
  tailnet: Extract<EgressTailnet, { ok: false }>,
  serviceConflict: EgressCond<"ServiceConflict">,
): EgressDecision {
  const { reason, message, tag } = tailnet;
  const pending = `not evaluated: ${message}`;
  return {
    // kept as observed, except a state Secret's data, which never travels back (replica.ts)
    children: withoutStateData(reuseAllChildren(input.children)),
    conditions: [
      cond(C.TagKnown, "Unknown", reason, pending),
      cond(C.Registered, "Unknown", reason, pending),
      cond(C.RoutesGranted, "Unknown", reason, pending),
      cond(C.TargetsReachable, "Unknown", reason, pending),
      serviceConflict,
      cond(C.NodeIdentity, "Unknown", reason, pending),
      cond(C.Ready, "False", reason, message),
    ],
    // the minted keys stay recorded while nothing is evaluated: finalize needs them
    fields: { ...(tag ? { tag } : {}), ...recordedFields(input.parent) },
    resyncAfterSeconds: WAIT_RESYNC_SECONDS,
    // the kept key still expires, and cannot be rotated now: its expiry alert must keep working
    metrics: { authKeyExpiresAt: input.keySecrets[0]?.expiresAt },
  };
}

/** status.preAuthKeyIds and nodes as the previous status had them (kept unchanged while nothing is observed). */
function recordedFields(parent: K8sObject): { preAuthKeyIds?: string[]; nodes?: NodeStatusItem[] } {
  const ids = (parent.status as { preAuthKeyIds?: unknown } | undefined)?.preAuthKeyIds;
  const nodes = recordedNodes(parent.status);
  return {
    ...(Array.isArray(ids) ? { preAuthKeyIds: ids.filter((x): x is string => typeof x === "string") } : {}),
    ...(nodes.length ? { nodes } : {}),
  };
}
