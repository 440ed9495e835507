/**
 * The agent kinds' (egress, ingress) side of one node per replica (issue 32), in the pipeline's stages: what a sync
 * observes of its replicas (observeReplicas: state facts, StatefulSets, pods, the status record, the legacy
 * Deployment), the plan (planAgentReplicas over replica-nodes.ts), the guarded Headscale writes (actReplicaNodes:
 * deletes and renames through the view) and the children (agentReplicaChildren: per replica SA, Role, RoleBinding and
 * state Secret, then the StatefulSet once those are observed; removed replicas keep their identity children until
 * their nodes are gone; the legacy Deployment and key Secrets are kept until every replica is bound), whose
 * StatefulSets then roll one replica at a time (stagedReplicaAnswer, the gateway's rule).
 */

import type { Obs } from "../../headscale/errors.js";
import type { HsNode } from "../../headscale/types.js";
import type { HeadscaleView } from "../../headscale/view.js";
import { commonLabels } from "../../k8s/labels.js";
import { findObject, type K8sObject, objectsOf, reuseObserved } from "../../k8s/objects.js";
import type { HookDeps, HookRequest } from "../../pipeline/types.js";
import { agentComponent, agentName } from "./agent-pod.js";
import { AUTHKEY_LABEL, stableAuthKeySecretName } from "./authkey.js";
import { nodeLabel } from "./node-names.js";
import { identityObserved, type ReplicaRef, replicaIdentityChildren, replicaIndexOf, replicaName } from "./replica.js";
import {
  type NodeIdentityReason,
  type NodeStatusItem,
  nodeIdentityVerdict,
  planReplicaNodes,
  type ReplicaNodesPlan,
  type ReplicaPodFact,
  recordedNodes,
  type StateFact,
  stateFacts,
  statusNodes,
  wantedOf,
} from "./replica-nodes.js";
import { type RolloutProgress, rollingMessage, rolloutProgress, stageRollout } from "./staged-rollout.js";
import { stampWorkload } from "./template-hash.js";

/** The annotation an administrator sets to accept a node key change (as on gateways, api.md). */
export const ACCEPT_NODE_KEY_ANNOTATION = "tailnet.internal/accept-node-key";

export interface ReplicaObservation {
  facts: StateFact[];
  /** Replica indexes whose StatefulSet or pod is observed. */
  running: Set<number>;
  pods: ReplicaPodFact[];
  record: NodeStatusItem[];
  statefulSets: Map<number, K8sObject>;
  /** The agent Deployment from before issue 32, while it exists (the upgrade keeps it until replicas are bound). */
  legacyDeployment?: K8sObject;
  /** Key Secrets named `<parent>-authkey-<id>` (before issue 32). */
  legacyKeySecrets: K8sObject[];
  acceptedNodeKey?: string;
  /** The observed ServiceAccounts, Roles, RoleBindings and Secrets (creation order: identityObserved). */
  identity: K8sObject[];
}

const RBAC = "rbac.authorization.k8s.io/v1";

/** Pure: what a sync sees of its replicas. */
export function observeReplicas(req: HookRequest, pods: readonly K8sObject[]): ReplicaObservation {
  const { parent } = req;
  const secrets = objectsOf(req.children, "v1", "Secret");
  const statefulSets = new Map<number, K8sObject>();
  for (const s of objectsOf(req.children, "apps/v1", "StatefulSet")) {
    const i = replicaIndexOf(s);
    if (i !== undefined && !s.metadata.deletionTimestamp) statefulSets.set(i, s);
  }
  const running = new Set(statefulSets.keys());
  const podFacts: ReplicaPodFact[] = [];
  for (const p of pods) {
    const i = replicaIndexOf(p);
    if (i === undefined) continue;
    running.add(i);
    const started = (p.status as { startTime?: string } | undefined)?.startTime;
    const at = started ? new Date(started) : undefined;
    podFacts.push({ index: i, ...(at && !Number.isNaN(at.getTime()) ? { startedAt: at } : {}) });
  }
  const legacy = findObject(req.children, "apps/v1", "Deployment", agentName(parent), parent.metadata.namespace);
  const stable = stableAuthKeySecretName(parent.metadata.name);
  const accepted = parent.metadata.annotations?.[ACCEPT_NODE_KEY_ANNOTATION];
  return {
    facts: stateFacts(secrets),
    running,
    pods: podFacts.sort((a, b) => a.index - b.index),
    record: recordedNodes(parent.status),
    statefulSets,
    ...(legacy && !legacy.metadata.deletionTimestamp ? { legacyDeployment: legacy } : {}),
    legacyKeySecrets: secrets.filter(
      (s) =>
        s.metadata.labels?.[AUTHKEY_LABEL] === "true" && s.metadata.name !== stable && !s.metadata.deletionTimestamp,
    ),
    ...(accepted ? { acceptedNodeKey: accepted } : {}),
    identity: [
      ...objectsOf(req.children, "v1", "ServiceAccount"),
      ...objectsOf(req.children, RBAC, "Role"),
      ...objectsOf(req.children, RBAC, "RoleBinding"),
      ...secrets,
    ],
  };
}

/** Pure: the replica plan of an agent whose Headscale side was read (nodes may have failed: then no writes). */
export function planAgentReplicas(
  obs: ReplicaObservation,
  input: {
    replicas: number;
    nodes: Obs<HsNode[]>;
    ownKeys: ReadonlySet<string>;
    tag: string;
    now: Date;
    hostname: string;
  },
): ReplicaNodesPlan {
  return planReplicaNodes({
    replicas: input.replicas,
    facts: obs.facts,
    running: obs.running,
    pods: obs.pods,
    nodes: input.nodes.ok ? input.nodes.value : undefined,
    ownKeys: input.ownKeys,
    tag: input.tag,
    record: obs.record,
    now: input.now,
    ...(obs.acceptedNodeKey ? { acceptedNodeKey: obs.acceptedNodeKey } : {}),
    wanted: wantedOf(input.hostname),
  });
}

export interface ReplicaNodesOutcome {
  /** The node list for decide: as read, minus the nodes deleted now. */
  nodes: Obs<HsNode[]>;
  deleted: Set<string>;
  /** Removed replicas whose nodes are all gone: their children go in this answer. */
  released: Set<number>;
  renamed: string[];
  errors: string[];
}

const notFound = (e: { classification?: string; status?: number }) =>
  e.classification === "notFound" || e.status === 404;

/** The planned deletes and renames, each guarded and through the view; outcomes returned, never thrown. */
export async function actReplicaNodes(
  view: HeadscaleView,
  nodes: Obs<HsNode[]>,
  plan: ReplicaNodesPlan,
): Promise<ReplicaNodesOutcome> {
  const deleted = new Set<string>();
  const errors: string[] = [];
  const renamed: string[] = [];
  const released = new Set<number>();
  if (!nodes.ok) return { nodes, deleted, released, renamed, errors };
  const remove = async (n: HsNode) => {
    const outcome = await view.deleteNode(n.id);
    if (outcome.ok || notFound(outcome.error)) deleted.add(n.id);
    else errors.push(`${nodeLabel(n)}: ${outcome.error.message}`);
  };
  for (const n of plan.deletes) await remove(n);
  for (const r of plan.removed) {
    if (r.waiting) continue;
    for (const n of r.nodes) await remove(n);
    if (r.nodes.every((n) => deleted.has(n.id))) released.add(r.index);
  }
  // a rename is planned only for a settled binding of ours whose predecessor is gone and whose wanted name no
  // node holds (replica-nodes.ts planRenames); a node deleted in this pass is never renamed
  for (const { node, name } of plan.renames) {
    if (deleted.has(node.id)) continue;
    const outcome = await view.renameNode(node.id, name);
    if (outcome.ok) renamed.push(`${nodeLabel(node)} → ${name}`);
    else errors.push(`rename ${nodeLabel(node)} to ${name}: ${outcome.error.message}`);
  }
  const value = deleted.size ? nodes.value.filter((n) => !deleted.has(n.id)) : nodes.value;
  return { nodes: { ...nodes, value }, deleted, released, renamed, errors };
}

export function logReplicaNodes(deps: Pick<HookDeps, "log">, who: string, o: ReplicaNodesOutcome): void {
  if (o.deleted.size) deps.log.info({ workload: who, nodes: [...o.deleted].sort() }, "deleted agent nodes");
  if (o.renamed.length) deps.log.info({ workload: who, renamed: o.renamed }, "renamed agent nodes");
  if (o.errors.length) deps.log.warn({ workload: who, errors: o.errors }, "agent node writes failed");
}

/** The replica of an agent object (its children's names and labels). */
export function agentReplica(parent: K8sObject, index: number): ReplicaRef {
  return {
    parent,
    index,
    name: replicaName(parent.metadata.name, "agent", index),
    labels: commonLabels(parent, agentComponent(parent)),
  };
}

export interface ReplicaChildrenInputs {
  replicas: number;
  /** Replica i's StatefulSet as rendered now (its template is stamped here, template-hash.ts). */
  statefulSet: (replica: ReplicaRef) => K8sObject;
  /** A key Secret exists: without one no pod starts (containerboot would wait for an interactive login). */
  keyReady: boolean;
  obs: ReplicaObservation;
  plan?: ReplicaNodesPlan;
  /** Removed replicas whose nodes are gone (act): their children go. */
  released: ReadonlySet<number>;
  /** Every replica is bound to a node: the legacy Deployment and key Secrets go. */
  migrated: boolean;
}

/** What a kind's children inputs carry of its replicas (egress and ingress alike). */
export interface AgentReplicaInputs {
  authKeySecret?: K8sObject;
  replicas: ReplicaObservation;
  replicaPlan?: ReplicaNodesPlan;
  released: ReadonlySet<number>;
  migrated: boolean;
}

/**
 * agentReplicaChildren from a kind's children inputs: without a key containerboot would start an interactive login,
 * so no StatefulSet until the key exists; one that already runs is kept exactly as observed.
 */
export function replicaChildrenOf(
  parent: K8sObject,
  count: number,
  inputs: AgentReplicaInputs,
  statefulSet: ReplicaChildrenInputs["statefulSet"],
): K8sObject[] {
  return agentReplicaChildren(parent, {
    replicas: count,
    keyReady: !!inputs.authKeySecret,
    obs: inputs.replicas,
    ...(inputs.replicaPlan ? { plan: inputs.replicaPlan } : {}),
    released: inputs.released,
    migrated: inputs.migrated,
    statefulSet,
  });
}

/** The per-replica children in a fixed order, plus whatever the upgrade still keeps. */
export function agentReplicaChildren(parent: K8sObject, inputs: ReplicaChildrenInputs): K8sObject[] {
  const { obs } = inputs;
  const out: K8sObject[] = [];
  for (let i = 0; i < inputs.replicas; i++) {
    const r = agentReplica(parent, i);
    out.push(...replicaIdentityChildren(r));
    const live = obs.statefulSets.get(i);
    if (inputs.keyReady && (live || identityObserved(r, obs.identity))) out.push(stampWorkload(inputs.statefulSet(r)));
    else if (live) out.push(reuseObserved(live));
  }
  // a removed replica keeps its identity children (not its StatefulSet) until its nodes are deleted
  const removed = new Set<number>(inputs.plan?.removed.map((r) => r.index) ?? []);
  for (const f of obs.facts) if (f.index >= inputs.replicas) removed.add(f.index);
  for (const i of [...removed].sort((a, b) => a - b)) {
    if (i < inputs.replicas || inputs.released.has(i)) continue;
    out.push(...replicaIdentityChildren(agentReplica(parent, i)));
  }
  if (!inputs.migrated) {
    if (obs.legacyDeployment) out.push(reuseObserved(obs.legacyDeployment));
    out.push(...obs.legacyKeySecrets.map(reuseObserved));
  }
  return out;
}

/**
 * Pure, the answer's step after agentReplicaChildren: the replicas' StatefulSets staged one replica at a time
 * (staged-rollout.ts, the gateway's rule), and how far the rollout got against what was rendered.
 */
export function stagedReplicaAnswer(
  children: readonly K8sObject[],
  obs: ReplicaObservation,
  replicas: number,
): { children: K8sObject[]; rollout: RolloutProgress } {
  const rendered = children.filter((c) => c.kind === "StatefulSet" && (replicaIndexOf(c) ?? replicas) < replicas);
  return {
    children: stageRollout(children, obs.statefulSets, { replicas }),
    rollout: rolloutProgress([...obs.statefulSets.values()], rendered),
  };
}

/**
 * An agent's Ready while a template change rolls: still True (the other replicas serve), its message followed by
 * the gateway's WorkloadCurrent wording, so `kubectl get` shows the rollout, how far it got and what it waits for.
 */
export function withRolloutNote<T extends { status: string; message: string }>(ready: T, rollout: RolloutProgress): T {
  const note = rollout.changing ? rollingMessage(rollout) : undefined;
  return ready.status === "True" && note ? { ...ready, message: `${ready.message}; ${note}` } : ready;
}

export interface ReplicaDecision {
  identity: { status: "True" | "False" | "Unknown"; reason: NodeIdentityReason | "NotObserved"; message: string };
  /** status.nodes */
  nodes: NodeStatusItem[];
  /** Every replica is bound to an online node: the legacy Deployment and key Secrets can go. */
  migrated: boolean;
  /** Something is awaited (a registration, a predecessor's grace, a removed replica): resync soon. */
  waiting: boolean;
}

/** Pure: NodeIdentity, status.nodes and the upgrade's progress from the plan and act's outcome. */
export function decideReplicas(
  obs: ReplicaObservation,
  plan: ReplicaNodesPlan | undefined,
  outcome: ReplicaNodesOutcome | undefined,
  replicas: number,
  nodesRead: boolean,
): ReplicaDecision {
  const legacy = !!obs.legacyDeployment || obs.legacyKeySecrets.length > 0;
  if (!plan || !nodesRead) {
    return {
      identity: { status: "Unknown", reason: "NotObserved", message: "Headscale's node list could not be read" },
      nodes: obs.record,
      migrated: !legacy,
      waiting: true,
    };
  }
  const migrated = !legacy || plan.bindings.every((b) => b.node?.online);
  const identity = nodeIdentityVerdict(plan, replicas, !migrated);
  const deleted = outcome?.deleted ?? new Set<string>();
  const pendingRemoval = plan.removed.some((r) => !outcome?.released.has(r.index));
  const pendingDelete = plan.deletes.some((n) => !deleted.has(n.id));
  return {
    identity,
    nodes: statusNodes(plan, deleted),
    migrated,
    waiting: identity.reason !== "Stable" || pendingRemoval || pendingDelete || plan.renames.length > 0,
  };
}
