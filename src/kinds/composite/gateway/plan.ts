/**
 * The gateway's plan (pure): which Headscale writes the sync wants — the bootstrap key work (bootstrap.ts),
 * the approval of the gateway's own routes on each replica's bound node and the deletion of predecessors,
 * unbound nodes and removed replicas' nodes — judged by the fresh writer's verdict (fresh.ts: bootstrap key,
 * node identity, pod template). Route approval and stale-node deletion
 * are one function each that says both the condition and the write it wants, so the plan (before act) and
 * decide (after act) read the same rules.
 *
 * The node writes are planned against the bootstrap key as observed. When act mints a new key they wait
 * for the next sync, which plans them against the new one (act.ts holds them; decide says so).
 */
import { conditionsOf, type TypedCondition } from "../../../conditions/table.js";
import { GatewayCondition as C, GATEWAY_REASONS, GatewayReason as R } from "../../../conditions/tables/gateway.js";
import type { HsNode } from "../../../headscale/types.js";
import { type K8sObject, reuseObserved } from "../../../k8s/objects.js";
import { type AuthKeyPlan, observedKeys, REPLICA_KEY_FLAGS } from "../../shared/authkey.js";
import { replicaIndexOf } from "../../shared/replica.js";
import type { ReplicaPodFact } from "../../shared/replica-nodes.js";
import { planBootstrapKey } from "./bootstrap.js";
import { gatewayKeySecretName, gatewayLabels } from "./children.js";
import { exitWork } from "./exit.js";
import { checkBootstrapKey, checkIdentity, checkPodTemplate, type FreshProblem } from "./fresh.js";
import { analyzeNodes, describeNode, type NodeAnalysis } from "./nodes.js";
import type { GatewayFacts, GatewayObservation } from "./observe.js";
import type { GatewayRename } from "./renames.js";

const { cond } = conditionsOf(GATEWAY_REASONS);
export type GatewayConditionOf<T extends keyof typeof GATEWAY_REASONS & string> = TypedCondition<
  typeof GATEWAY_REASONS,
  T
>;

/** The bootstrap key as act left it (reused, minted, or kept after a failed mint). */
export interface BootstrapKey {
  secret?: K8sObject;
  keyId?: string;
  expiresAt?: Date;
  /** Why no fresh key could be made (Headscale's error; never contains the key). */
  error?: string;
}

/** A served gateway's facts with its bootstrap key: what the fresh writer's checks judge. */
export interface GatewayInputs extends GatewayFacts {
  key: BootstrapKey;
}

export interface GatewayApproval {
  nodeId: string;
  node: string;
  add: string[];
}

export interface GatewayWrites {
  approve?: GatewayApproval;
  /** replicas > 1: the approvals of the other current nodes (`approve` is the first node's). */
  moreApprovals?: GatewayApproval[];
  /** spec.exitNode: the exit pair on each current node that advertises it unapproved (exit.ts). */
  approveExit?: GatewayApproval[];
  deleteNodes: { id: string; node: string }[];
  /** Bound nodes renamed back to their replica's wanted name (identity.ts), after the deletions. */
  renameNodes?: GatewayRename[];
}

export interface GatewayKeyWork {
  auth: AuthKeyPlan;
  /** The key of the observed Secret: the node writes were planned with it. */
  observedKeyId?: string;
  /** Older keys of ours the observed Secret proves superseded: expired after the new one is published. */
  expire: string[];
  /** What a minted key looks like: reusable, not ephemeral, tagged exactly with the gateway tag, in the stable Secret. */
  mint: {
    tags: string[];
    reusable: true;
    ephemeral: false;
    ttlSeconds: number;
    now: Date;
    labels: Record<string, string>;
    stable: string;
  };
}

export interface GatewayPlan {
  /** Absent when nothing is served (no Tailnet, no credentials, no zone): nothing is written. */
  key?: GatewayKeyWork;
  writes: GatewayWrites;
  /** Seconds until the key plan should be looked at again (half-life). */
  recheckSeconds?: number;
}

export const NO_WRITES: GatewayWrites = { deleteNodes: [] };

/** The fresh writer's checks, in order; an observation that failed is a check that could not pass. */
export interface FreshVerdict {
  facts?: NodeAnalysis;
  problems: FreshProblem[];
  /** Some check failed on what it saw (not only because Headscale could not be read). */
  definite: boolean;
  /** Some check could not run: Headscale's key or node list was not read. */
  unobserved: boolean;
  /** Every check passed and the node's identity is unchanged: the derived zone may be written. */
  freshOk: boolean;
  /** freshOk and a current node exists: Headscale writes for it are allowed. */
  verified: boolean;
}

/** Every key id this gateway minted that it knows of: recorded in status, the legacy Secrets', the current one. */
export function ourKeyIdsOf(input: GatewayInputs): string[] {
  return [...new Set([...input.recordedKeyIds, ...(input.key.keyId ? [input.key.keyId] : [])])];
}

/** Replicas whose StatefulSet or pod is observed: a removed replica's node waits for them to go. */
function replicaActivity(input: GatewayInputs): { running: Set<number>; pods: ReplicaPodFact[] } {
  const running = new Set<number>();
  for (const s of input.observed.statefulSets) {
    const i = replicaIndexOf(s);
    if (i !== undefined) running.add(i);
  }
  const pods: ReplicaPodFact[] = [];
  for (const p of input.related.pods) {
    if (p.replica === undefined) continue;
    running.add(p.replica);
    if (!p.deleting) pods.push({ index: p.replica, ...(p.startTime ? { startedAt: p.startTime } : {}) });
  }
  return { running, pods };
}

export function freshVerdict(input: GatewayInputs): FreshVerdict {
  const hs = input.headscale;
  const facts = hs.nodes.ok
    ? analyzeNodes({
        nodes: hs.nodes.value,
        tag: input.tag,
        ourKeyIds: ourKeyIdsOf(input),
        replicas: input.spec.replicas,
        hostname: input.spec.hostname,
        facts: input.stateFacts,
        ...replicaActivity(input),
        record: input.record,
        ...(input.spec.acceptedNodeKey ? { acceptedNodeKey: input.spec.acceptedNodeKey } : {}),
        now: input.now,
        migrating: !!input.observed.deployment,
      })
    : undefined;
  const problems: FreshProblem[] = [];
  let definite = false;
  let unobserved = false;
  const add = (p: FreshProblem | undefined) => {
    if (p) problems.push(p);
    definite ||= !!p;
  };
  // What the Secret itself says (missing, expired) is known even when Headscale cannot be read.
  const keyProblem = checkBootstrapKey(input.key, hs.keys.ok ? hs.keys.value : undefined, input.tag, input.now);
  if (keyProblem || hs.keys.ok) add(keyProblem);
  else {
    unobserved = true;
    problems.push({ check: "bootstrap key", message: `cannot read Headscale's pre-auth keys: ${hs.keys.error}` });
  }
  if (facts) add(checkIdentity(facts.provenanceProblems));
  else {
    unobserved = true;
    problems.push({
      check: "node identity",
      message: `cannot list Headscale's nodes: ${hs.nodes.ok ? "" : hs.nodes.error}`,
    });
  }
  const legacy = input.observed.deployment ? [input.observed.deployment] : [];
  add(checkPodTemplate([...input.observed.statefulSets, ...legacy]));
  const freshOk = problems.length === 0 && !facts?.identityChanges.length;
  return { facts, problems, definite, unobserved, freshOk, verified: freshOk && !!facts?.current };
}

const list = (nodes: readonly HsNode[]) => nodes.map(describeNode).join(", ");

/**
 * RoutesInSync and the approval it wants. The gateway approves its own routes whatever the policy says, so a
 * Tailnet that left its contribution out of the policy (LeftOutOfPolicy) changes the condition, not the writes.
 */
export function routeWork(
  input: GatewayInputs,
  v: FreshVerdict,
): { condition: GatewayConditionOf<"RoutesInSync">; approve?: GatewayApproval; moreApprovals?: GatewayApproval[] } {
  const work = ownRouteWork(input, v);
  if (!input.leftOut || input.routeConflict) return work;
  return { ...work, condition: cond(C.RoutesInSync, "False", R.LeftOutOfPolicy, input.leftOut) };
}

/** RoutesInSync and the approval it wants: only the missing advertised routes, only on a verified node. */
function ownRouteWork(
  input: GatewayInputs,
  v: FreshVerdict,
): { condition: GatewayConditionOf<"RoutesInSync">; approve?: GatewayApproval; moreApprovals?: GatewayApproval[] } {
  const routes = input.spec.routes;
  const approved = (message: string) => ({ condition: cond(C.RoutesInSync, "True", R.Approved, message) });
  const notApproved = (message: string) => ({ condition: cond(C.RoutesInSync, "False", R.NotApproved, message) });
  if (routes.length === 0) return approved("spec.routes is empty: no routes to approve");
  if (input.routeConflict) {
    return { condition: cond(C.RoutesInSync, "False", R.OverlapsReserved, input.routeConflict) };
  }
  if (!input.headscale.nodes.ok) {
    const message = `cannot verify route approval: ${input.headscale.nodes.error}`;
    return { condition: cond(C.RoutesInSync, "Unknown", R.NotObserved, message) };
  }
  const node = v.facts?.current;
  if (!node) return notApproved("no registered gateway node yet");
  if (input.spec.replicas > 1) return replicatedRouteWork(input, v, v.facts?.currents ?? [node]);
  const who = describeNode(node);
  const notAdvertised = routes.filter((r) => !node.availableRoutes.includes(r));
  const missing = routes.filter((r) => !node.approvedRoutes.includes(r) && node.availableRoutes.includes(r));
  if (missing.length === 0 && notAdvertised.length === 0) return approved(`${who} has ${routes.join(", ")} approved`);
  if (missing.length === 0) return notApproved(`${who} does not advertise ${notAdvertised.join(", ")} (yet)`);
  const unadvertised = notAdvertised.length ? `; ${who} does not advertise ${notAdvertised.join(", ")} (yet)` : "";
  const want = `${missing.join(", ")}${unadvertised}`;
  if (!v.verified) {
    return notApproved(
      `not approving ${missing.join(", ")} on ${who} while Registered is not FreshRuntimeReady${unadvertised}`,
    );
  }
  const { name, policyMode, incompatible } = input.tailnet;
  if (policyMode === "DryRun") {
    return notApproved(
      `Tailnet ${name} is in DryRun: the operator approves no routes; not approved on ${who}: ${want}`,
    );
  }
  if (incompatible) {
    return notApproved(
      `Tailnet ${name} reports HeadscaleCompatible=False: the operator does not write to this server; not approved on ${who}: ${want}`,
    );
  }
  const done = `approved ${missing.join(", ")} on ${who}${unadvertised}`;
  const approve = { nodeId: node.id, node: who, add: missing };
  return { ...(notAdvertised.length ? notApproved(done) : approved(done)), approve };
}

/**
 * replicas > 1: the routes approved on every current node (each node's missing ones, one approve_routes per
 * node), so Headscale can fail over to any of them (it elects one primary per prefix among the online nodes
 * that have it approved). In sync while at least one node has every route advertised and approved; the
 * message names each node's state.
 */
function replicatedRouteWork(
  input: GatewayInputs,
  v: FreshVerdict,
  nodes: readonly HsNode[],
): { condition: GatewayConditionOf<"RoutesInSync">; approve?: GatewayApproval; moreApprovals?: GatewayApproval[] } {
  const routes = input.spec.routes;
  const { name, policyMode, incompatible } = input.tailnet;
  const held = !v.verified
    ? "while Registered is not FreshRuntimeReady"
    : policyMode === "DryRun"
      ? `: Tailnet ${name} is in DryRun`
      : incompatible
        ? `: Tailnet ${name} reports HeadscaleCompatible=False`
        : undefined;
  const approvals: GatewayApproval[] = [];
  const parts: string[] = [];
  let inSync = 0;
  for (const node of nodes) {
    const who = describeNode(node);
    const notAdvertised = routes.filter((r) => !node.availableRoutes.includes(r));
    const missing = routes.filter((r) => !node.approvedRoutes.includes(r) && node.availableRoutes.includes(r));
    const unadvertised = notAdvertised.length ? ` (does not advertise ${notAdvertised.join(", ")} yet)` : "";
    if (missing.length === 0) {
      if (!notAdvertised.length) inSync++;
      parts.push(notAdvertised.length ? `${who}${unadvertised}` : `${who} approved`);
    } else if (held) {
      parts.push(`not approving ${missing.join(", ")} on ${who} ${held}${unadvertised}`.replace(" :", ":"));
    } else {
      approvals.push({ nodeId: node.id, node: who, add: missing });
      if (!notAdvertised.length) inSync++;
      parts.push(`approved ${missing.join(", ")} on ${who}${unadvertised}`);
    }
  }
  const message = `${inSync} of ${nodes.length} nodes have ${routes.join(", ")} approved: ${parts.join("; ")}`;
  const condition = inSync
    ? cond(C.RoutesInSync, "True", R.Approved, message)
    : cond(C.RoutesInSync, "False", R.NotApproved, message);
  const [approve, ...more] = approvals;
  return { condition, ...(approve ? { approve } : {}), ...(more.length ? { moreApprovals: more } : {}) };
}

/** The nodes of removed replicas (a scale-down) whose pod is gone and which are offline: deleted, Keep or not. */
export function removedNodes(v: FreshVerdict): HsNode[] {
  return (v.facts?.plan.removed ?? []).flatMap((r) => (r.waiting ? [] : r.nodes));
}

/**
 * StaleNodes and the deletions it wants, only when node identity is verified: the predecessors of re-registered
 * replicas and the unbound nodes of ours, offline past the grace (staleNodes: Keep leaves them), and the nodes
 * of replicas a scale-down removed.
 */
export function staleWork(
  input: GatewayInputs,
  v: FreshVerdict,
): { condition: GatewayConditionOf<"StaleNodes">; deleteNodes: GatewayWrites["deleteNodes"] } {
  const only = (condition: GatewayConditionOf<"StaleNodes">) => ({ condition, deleteNodes: [] });
  if (!input.headscale.nodes.ok) {
    return only(cond(C.StaleNodes, "Unknown", R.NotObserved, `cannot list nodes: ${input.headscale.nodes.error}`));
  }
  const facts = v.facts;
  if (!facts?.current) return only(cond(C.StaleNodes, "False", R.None, "no node of this gateway is registered"));
  if (!v.verified) {
    return only(
      cond(C.StaleNodes, "Unknown", R.None, "not evaluated while the current node is not verified (see Registered)"),
    );
  }
  const removed = removedNodes(v);
  const del = (nodes: readonly HsNode[]) => nodes.map((n) => ({ id: n.id, node: describeNode(n) }));
  if (facts.stale.length === 0 && removed.length === 0) {
    if (input.spec.replicas > 1) {
      return only(cond(C.StaleNodes, "False", R.None, `only the current nodes: ${list(facts.currents)}`));
    }
    return only(cond(C.StaleNodes, "False", R.None, `only the current node: ${describeNode(facts.current)}`));
  }
  if (input.spec.staleNodes === "Keep" && facts.stale.length) {
    const also = removed.length ? `; deleted removed replicas' ${list(removed)}` : "";
    return {
      condition: cond(
        C.StaleNodes,
        "True",
        R.ExternallyManaged,
        `staleNodes is Keep; stale nodes left in place: ${list(facts.stale)}${also}`,
      ),
      deleteNodes: del(removed),
    };
  }
  const nodes = input.spec.staleNodes === "Keep" ? removed : [...facts.stale, ...removed];
  return { condition: cond(C.StaleNodes, "False", R.Deleted, `deleted stale ${list(nodes)}`), deleteNodes: del(nodes) };
}

/** The renames a verified gateway writes (none while any fresh-writer check fails or Headscale was not read). */
export function renameWork(v: FreshVerdict): GatewayRename[] {
  if (!v.verified || !v.facts) return [];
  return v.facts.plan.renames.map((r) => ({ id: r.node.id, from: r.node.givenName, name: r.name }));
}

/** The node writes the fresh writer's verdict allows for these facts. */
export function gatewayWrites(input: GatewayInputs, v: FreshVerdict = freshVerdict(input)): GatewayWrites {
  const { approve, moreApprovals } = routeWork(input, v);
  const { approvals: approveExit } = exitWork(input, v);
  const renameNodes = renameWork(v);
  return {
    ...(approve ? { approve } : {}),
    ...(moreApprovals ? { moreApprovals } : {}),
    ...(approveExit.length ? { approveExit } : {}),
    deleteNodes: staleWork(input, v).deleteNodes,
    ...(renameNodes.length ? { renameNodes } : {}),
  };
}

export function planGateway(o: GatewayObservation): GatewayPlan {
  if ("unserved" in o) return { writes: NO_WRITES };
  const [current] = observedKeys(o.secrets);
  const asObserved: GatewayInputs = {
    ...o,
    key: current ? { secret: reuseObserved(current.secret), keyId: current.keyId, expiresAt: current.expiresAt } : {},
  };
  const verdict = freshVerdict(asObserved);
  const keyPlan = planBootstrapKey({
    secrets: o.secrets,
    now: o.now,
    keys: o.headscale.keys,
    owned: new Set(ourKeyIdsOf(asObserved)),
  });
  return {
    key: {
      auth: keyPlan.plan,
      ...(current ? { observedKeyId: current.keyId } : {}),
      expire: keyPlan.expire,
      mint: {
        tags: [o.tag],
        ...REPLICA_KEY_FLAGS,
        ttlSeconds: o.spec.bootstrapKeyTTLSeconds,
        now: o.now,
        labels: gatewayLabels(o.parent),
        stable: gatewayKeySecretName(o.parent),
      },
    },
    writes: gatewayWrites(asObserved, verdict),
    ...(keyPlan.recheckSeconds !== undefined ? { recheckSeconds: keyPlan.recheckSeconds } : {}),
  };
}

/** What finalize does (finalize.ts planGatewayCleanup): release the object, or delete and expire ours first. */
export type GatewayCleanupPlan =
  | { release: true }
  | { release: false; deleteNodes: { id: string; node: string }[]; expireKeys: string[] }
  | { release: false; cannot: string };
