/**
 * The egress decision (pure): (parent, observed children, related, observations, now) →
 * desired children, conditions, status fields, resync and the metric values. No I/O, no clock.
 *
 * Ready order (docs/reference/reasons/egress.md): NoTailnet, NoAPIKey, TagUnknown, then the first
 * blocking condition of Registered, RoutesGranted, TargetsReachable, and last ServiceConflict —
 * a foreign Service only hides one target's in-cluster name, while the earlier blockers break
 * every target, so they are the better first answer.
 */
import { type Blocker, blockerFrom, type ConditionInput, cond, deriveReady } from "../../conditions/condition.js";
import { EgressCondition, EgressReason, TargetReason } from "../../conditions/reasons.js";
import type { OperatorConfig } from "../../config.js";
import type { HsNode, HsPolicy } from "../../headscale/types.js";
import type { Obs } from "../../headscale/view.js";
import type { K8sObject, ObjectMaps } from "../../k8s/objects.js";
import { findObject, objectsOf, reuseAllChildren } from "../../k8s/objects.js";
import { agentName, registeredCondition, tagKnownCondition } from "../shared/agent.js";
import { type AuthKeyOutcome, observedKeys } from "../shared/authkey.js";
import { effectiveTag, type TailnetSettings } from "../shared/workload.js";
import { egressChildren, egressReplicas, egressTargets } from "./children.js";
import { conflictingTargets, serviceConflictCondition } from "./conflicts.js";
import { type AgentObservation, evaluateTargets, ROUTE_MISSING, type TargetVerdict } from "./targets.js";

/** While something external is awaited (registration, a pod, a route, a dial). */
export const WAIT_RESYNC_SECONDS = 30;
const MAX_LISTED_TARGETS = 10;

export interface EgressObservations {
  policy: Obs<HsPolicy | null>;
  nodes: Obs<HsNode[]>;
  agents: AgentObservation;
  /** The pre-auth key after act: reused, freshly created, or missing with the reason. */
  authKey: AuthKeyOutcome;
}

export interface EgressDecisionInput {
  parent: K8sObject;
  children: ObjectMaps;
  related: ObjectMaps;
  config: OperatorConfig;
  settings: TailnetSettings;
  observations: EgressObservations;
  /** The Headscale CA from the Tailnet's credentials Secret, delivered to the agent pods. */
  ca?: string;
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

export interface EgressDecision {
  children: K8sObject[];
  conditions: ConditionInput[];
  fields: { tag?: string; targets?: EgressTargetStatus[] };
  resyncAfterSeconds?: number;
  metrics: EgressMetricValues;
}

function listed(items: readonly string[]): string {
  if (items.length <= MAX_LISTED_TARGETS) return items.join("; ");
  return `${items.slice(0, MAX_LISTED_TARGETS).join("; ")}; and ${items.length - MAX_LISTED_TARGETS} more`;
}

export function routesGrantedCondition(agents: AgentObservation, verdicts: readonly TargetVerdict[]): ConditionInput {
  const type = EgressCondition.RoutesGranted;
  if (!agents.ok) return cond(type, "Unknown", EgressReason.ProbeFailed, agents.message);
  const missing = verdicts.filter((v) => ROUTE_MISSING.has(v.route.reason));
  if (missing.length) {
    return cond(
      type,
      "False",
      EgressReason.RoutesMissing,
      listed(missing.map((v) => `${v.name} ${v.route.reason}: ${v.route.message}`)),
    );
  }
  const unknown = verdicts.filter((v) => v.route.reason === TargetReason.ProbeFailed);
  if (unknown.length) {
    return cond(type, "Unknown", EgressReason.ProbeFailed, listed(unknown.map((v) => `${v.name}: ${v.route.message}`)));
  }
  const n = verdicts.length;
  return cond(
    type,
    "True",
    EgressReason.RoutesGranted,
    `${n} ${n === 1 ? "target is" : "targets are"} in the agent's netmap`,
  );
}

export function targetsReachableCondition(
  agents: AgentObservation,
  verdicts: readonly TargetVerdict[],
): ConditionInput {
  const type = EgressCondition.TargetsReachable;
  if (!agents.ok) return cond(type, "Unknown", EgressReason.ProbeFailed, agents.message);
  const down = verdicts.flatMap((v) => (v.dial.state === "unreachable" ? [`${v.name}: ${v.dial.error}`] : []));
  if (down.length) return cond(type, "False", EgressReason.Unreachable, listed(down));
  const outside = verdicts.flatMap((v) => (v.dial.state === "outside" ? [`${v.name}: ${v.dial.message}`] : []));
  if (outside.length) return cond(type, "False", EgressReason.OutsideTailnet, listed(outside));
  const unknown = verdicts.flatMap((v) => (v.dial.state === "unknown" ? [`${v.name}: ${v.dial.message}`] : []));
  if (unknown.length) return cond(type, "Unknown", EgressReason.ProbeFailed, listed(unknown));
  const n = verdicts.length;
  return cond(
    type,
    "True",
    EgressReason.Reachable,
    `${n} ${n === 1 ? "target answers" : "targets answer"} the agent's probe`,
  );
}

/** The Ready staircase over already decided conditions (exported for the staircase test). */
export function egressReady(conditions: {
  tagKnown: ConditionInput;
  registered: ConditionInput;
  routesGranted: ConditionInput;
  targetsReachable: ConditionInput;
  serviceConflict: ConditionInput;
}): ConditionInput {
  const blockers: Blocker[] = [
    {
      ok: conditions.tagKnown.status === "True",
      reason: EgressReason.TagUnknown,
      message: conditions.tagKnown.message,
    },
    blockerFrom(conditions.registered),
    blockerFrom(conditions.routesGranted),
    blockerFrom(conditions.targetsReachable),
    blockerFrom(conditions.serviceConflict, "False"),
  ];
  const ready = deriveReady(blockers, EgressReason.Ready, "every target is reachable through the agent");
  return { ...ready, type: EgressCondition.Ready };
}

/** Seconds until the key's half-life (its rotation), when a key exists. */
function secondsToRotation(authKey: AuthKeyOutcome, now: Date): number | undefined {
  const [key] = authKey.secret ? observedKeys([authKey.secret]) : [];
  if (!key) return undefined;
  const half = key.createdAt.getTime() + (key.expiresAt.getTime() - key.createdAt.getTime()) / 2;
  return Math.ceil((half - now.getTime()) / 1000);
}

export function decideEgress(input: EgressDecisionInput): EgressDecision {
  const { parent, observations: obs, settings, now } = input;
  const tag = effectiveTag(parent, settings.tagPrefix);
  const targets = egressTargets(parent);
  const conflicting = conflictingTargets(parent, targets, input.related, input.children);
  const verdicts = evaluateTargets({
    targets,
    tag,
    nodes: obs.nodes,
    baseDomain: settings.baseDomain,
    agents: obs.agents,
  });

  const keyNote = obs.authKey.secret ? undefined : `no pre-auth key yet: ${obs.authKey.error ?? "not created"}`;
  const tagKnown = tagKnownCondition(obs.policy, tag);
  const registered = registeredCondition(obs.nodes, tag, keyNote);
  const routesGranted = routesGrantedCondition(obs.agents, verdicts);
  const targetsReachable = targetsReachableCondition(obs.agents, verdicts);
  const serviceConflict = serviceConflictCondition(parent, conflicting);
  const ready = egressReady({ tagKnown, registered, routesGranted, targetsReachable, serviceConflict });

  const children = egressChildren(parent, {
    config: input.config,
    targets,
    replicas: egressReplicas(parent),
    tag,
    loginServer: settings.url,
    authKeySecret: obs.authKey.secret,
    conflicting: new Set(conflicting),
    ca: input.ca,
    observedDeployment: findObject(
      input.children,
      "apps/v1",
      "Deployment",
      agentName(parent),
      parent.metadata.namespace,
    ),
  });

  const conflictSet = new Set(conflicting);
  const statusTargets: EgressTargetStatus[] = verdicts.map((v) => ({
    name: v.name,
    host: v.host,
    address: v.address,
    service: conflictSet.has(v.name) ? "" : v.name,
    state: v.reason === "" ? "Ready" : "NotReady",
    reason: v.reason,
  }));

  const waits: number[] = [];
  if (ready.status !== "True") waits.push(WAIT_RESYNC_SECONDS);
  const rotation = secondsToRotation(obs.authKey, now);
  if (rotation !== undefined) waits.push(rotation > 0 ? rotation : WAIT_RESYNC_SECONDS);
  const routesKnown = obs.agents.ok && verdicts.every((v) => v.route.reason !== TargetReason.ProbeFailed);

  return {
    children,
    conditions: [tagKnown, registered, routesGranted, targetsReachable, serviceConflict, ready],
    fields: { tag, targets: statusTargets },
    resyncAfterSeconds: waits.length ? Math.max(1, Math.min(...waits)) : undefined,
    metrics: {
      targets: verdicts.map((v) => ({ name: v.name, state: v.reason || "Ready" })),
      routesMissing: routesKnown ? verdicts.filter((v) => ROUTE_MISSING.has(v.route.reason)).length : undefined,
      // an expired key kept after a failed rotation has no expiresAt in the outcome: read its Secret,
      // so the expiry alert keeps firing exactly when it matters
      authKeyExpiresAt:
        obs.authKey.expiresAt ?? (obs.authKey.secret ? observedKeys([obs.authKey.secret])[0]?.expiresAt : undefined),
    },
  };
}

/**
 * No Tailnet, or no Headscale credentials yet: nothing can be observed, so every child is kept as
 * observed, the other conditions are Unknown with the same reason, and Ready names it.
 */
export function decideWithoutTailnet(input: {
  parent: K8sObject;
  children: ObjectMaps;
  related: ObjectMaps;
  reason: typeof EgressReason.NoTailnet | typeof EgressReason.NoAPIKey;
  message: string;
  settings?: TailnetSettings;
}): EgressDecision {
  const { parent, reason, message } = input;
  const targets = egressTargets(parent);
  const conflicting = conflictingTargets(parent, targets, input.related, input.children);
  const pending = `not evaluated: ${message}`;
  const unknown = (type: string) => cond(type, "Unknown", reason, pending);
  const explicitTag = (parent.spec as { tag?: unknown } | undefined)?.tag;
  const tag = input.settings
    ? effectiveTag(parent, input.settings.tagPrefix)
    : typeof explicitTag === "string" && explicitTag
      ? explicitTag
      : undefined;
  return {
    children: reuseAllChildren(input.children),
    conditions: [
      unknown(EgressCondition.TagKnown),
      unknown(EgressCondition.Registered),
      unknown(EgressCondition.RoutesGranted),
      unknown(EgressCondition.TargetsReachable),
      serviceConflictCondition(parent, conflicting),
      cond(EgressCondition.Ready, "False", reason, message),
    ],
    fields: tag ? { tag } : {},
    resyncAfterSeconds: WAIT_RESYNC_SECONDS,
    // the kept key still expires, and cannot be rotated now: its expiry alert must keep working
    metrics: { authKeyExpiresAt: observedKeys(objectsOf(input.children, "v1", "Secret"))[0]?.expiresAt },
  };
}
