/**
 * The TailnetGateway decision (pure): observed children, related objects, Headscale facts and the
 * bootstrap key → desired children, conditions, status fields and the Headscale writes to make.
 * Nothing here does I/O or reads the clock; `finishConditions` folds the outcome of the writes
 * back in and derives Ready in api.md's order.
 */
import { blockerFrom, type ConditionInput, cond, deriveReady } from "../../conditions/condition.js";
import { GatewayCondition as C, GatewayReason as R } from "../../conditions/reasons.js";
import type { NetworkPolicyPeer, OperatorConfig } from "../../config.js";
import type { HsNode } from "../../headscale/types.js";
import { isRecord, type K8sObject, reuseObserved } from "../../k8s/objects.js";
import { configHash } from "../shared/agent.js";
import {
  caConfigMap,
  corefileConfigMap,
  dnsService,
  gatewayDeployment,
  gatewayNetworkPolicy,
  zoneConfigMap,
} from "./children.js";
import { clusterDNSForward, dnsReady, serviceIP, serviceReady, workloadCurrent } from "./conditions.js";
import { renderGatewayCorefile } from "./corefile.js";
import {
  checkBootstrapKey,
  checkPodTemplate,
  checkProvenance,
  type FreshProblem,
  freshBlockedMessage,
} from "./fresh.js";
import { analyzeNodes, describeNode, type NodeAnalysis, type StatusNode, statusNodeOf } from "./nodes.js";
import type { HeadscaleFacts, PodFact } from "./observe.js";
import { acceptedNodeKey, type GatewayNames, type GatewaySpec } from "./spec.js";
import { stampOf } from "./template.js";
import { derivedZoneRecords, renderZoneFile, ZONE_FILE_KEY } from "./zone.js";

export interface GatewayTailnet {
  name: string;
  loginServer: string;
  policyMode: "Apply" | "DryRun";
  baseDomain?: string;
  splitDomains: string[];
  /** The Tailnet reports HeadscaleCompatible=False: no route is approved on that server (as for a site). */
  incompatible?: boolean;
  /** The Headscale CA (caSecretRef, from the credentials Secret), delivered to the pod. */
  ca?: string;
}

/** What renders the gateway's workload; shared by the key planning (rollout check) and decide. */
export interface RenderInput {
  parent: K8sObject;
  spec: GatewaySpec;
  names: GatewayNames;
  tag: string;
  zone: string;
  tailnet: GatewayTailnet;
  images: OperatorConfig["images"];
  /** OperatorConfig.tailscale.noLogsNoSupport. */
  noLogsNoSupport: boolean;
}

export interface BootstrapKey {
  secret?: K8sObject;
  keyId?: string;
  expiresAt?: Date;
  error?: string;
}

export interface GatewayDecideInput extends RenderInput {
  metricsPeers: NetworkPolicyPeer[];
  now: Date;
  observed: { deployment?: K8sObject; service?: K8sObject; zone?: K8sObject };
  related: { coredns?: K8sObject; egresses: K8sObject[]; services: K8sObject[]; pods: PodFact[] };
  headscale: HeadscaleFacts;
  key: BootstrapKey;
  previousNode?: StatusNode;
}

export interface GatewayActions {
  approve?: { nodeId: string; node: string; add: string[] };
  deleteNodes: { id: string; node: string }[];
}

export interface GatewayDecision {
  children: K8sObject[];
  /** Every condition but Ready, in the order of the reasons page. */
  conditions: ConditionInput[];
  fields: { tag: string; node?: StatusNode; dnsServiceIP?: string };
  actions: GatewayActions;
  suspended: boolean;
  resyncAfterSeconds?: number;
}

export function renderCorefile(r: RenderInput): string {
  const owner = `${r.parent.metadata.namespace}/${r.parent.metadata.name}`;
  return renderGatewayCorefile({ owner, zone: r.zone, zoneFile: ZONE_FILE_KEY, splitDomains: r.tailnet.splitDomains });
}

export function renderDeployment(r: RenderInput, authKeySecret: string | undefined): K8sObject {
  return gatewayDeployment(r.parent, {
    names: r.names,
    replicas: r.spec.suspend ? 0 : 1,
    tag: r.tag,
    hostname: r.spec.hostname,
    routes: r.spec.routes,
    loginServer: r.tailnet.loginServer,
    authKeySecret,
    images: r.images,
    configHash: r.tailnet.ca ? configHash(renderCorefile(r), r.tailnet.ca) : configHash(renderCorefile(r)),
    ca: !!r.tailnet.ca,
    noLogsNoSupport: r.noLogsNoSupport,
  });
}

export function renderedStamp(deployment: K8sObject): string {
  return stampOf(isRecord(deployment.spec) ? deployment.spec.template : undefined) ?? "";
}

const list = (nodes: readonly HsNode[]) => nodes.map(describeNode).join(", ");

function registered(
  input: GatewayDecideInput,
  facts: NodeAnalysis | undefined,
  problems: FreshProblem[],
  unknown: boolean,
) {
  if (problems.length) {
    // A check that could not run (Headscale not observed) is not a refusal: NotObserved, so an outage
    // pages as Headscale API errors, not as TailnetGatewayFreshBlocked. The zone stays untouched either way.
    if (unknown) return cond(C.Registered, "Unknown", R.NotObserved, freshBlockedMessage(problems));
    return cond(C.Registered, "False", R.FreshBlocked, freshBlockedMessage(problems));
  }
  if (!facts?.current) {
    const key = input.key.keyId ? ` with bootstrap key ${input.key.keyId}` : "";
    return cond(C.Registered, "False", R.Provisioning, `waiting for ${input.spec.hostname} to register${key}`);
  }
  if (facts.identityChange) {
    const { node, previousKey } = facts.identityChange;
    return cond(
      C.Registered,
      "False",
      R.IdentityChanged,
      `${describeNode(node)} changed its node key from ${previousKey} to ${node.nodeKey}; the gateway re-registers with a fresh bootstrap key from the operator; to keep this node with its new key instead, set the annotation tailnet.internal/accept-node-key: ${node.nodeKey}`,
    );
  }
  const n = facts.current;
  return cond(
    C.Registered,
    "True",
    R.FreshRuntimeReady,
    `${describeNode(n)} registered with bootstrap key ${n.preAuthKey?.id} as ${input.tag}; bootstrap key and pod template verified`,
  );
}

function routesInSync(
  input: GatewayDecideInput,
  facts: NodeAnalysis | undefined,
  verified: boolean,
  actions: GatewayActions,
) {
  const routes = input.spec.routes;
  if (routes.length === 0)
    return cond(C.RoutesInSync, "True", R.Approved, "spec.routes is empty: no routes to approve");
  if (!input.headscale.nodes.ok) {
    return cond(
      C.RoutesInSync,
      "Unknown",
      R.NotObserved,
      `cannot verify route approval: ${input.headscale.nodes.error}`,
    );
  }
  const node = facts?.current;
  if (!node) return cond(C.RoutesInSync, "False", R.NotApproved, "no registered gateway node yet");
  const who = describeNode(node);
  const notAdvertised = routes.filter((r) => !node.availableRoutes.includes(r));
  const missing = routes.filter((r) => !node.approvedRoutes.includes(r) && node.availableRoutes.includes(r));
  if (missing.length === 0 && notAdvertised.length === 0) {
    return cond(C.RoutesInSync, "True", R.Approved, `${who} has ${routes.join(", ")} approved`);
  }
  const unadvertised = notAdvertised.length ? `; ${who} does not advertise ${notAdvertised.join(", ")} (yet)` : "";
  if (missing.length === 0) {
    return cond(C.RoutesInSync, "False", R.NotApproved, `${who} does not advertise ${notAdvertised.join(", ")} (yet)`);
  }
  if (!verified) {
    return cond(
      C.RoutesInSync,
      "False",
      R.NotApproved,
      `not approving ${missing.join(", ")} on ${who} while Registered is not FreshRuntimeReady${unadvertised}`,
    );
  }
  if (input.tailnet.policyMode === "DryRun") {
    return cond(
      C.RoutesInSync,
      "False",
      R.NotApproved,
      `Tailnet ${input.tailnet.name} is in DryRun: the operator approves no routes; not approved on ${who}: ${missing.join(", ")}${unadvertised}`,
    );
  }
  if (input.tailnet.incompatible) {
    return cond(
      C.RoutesInSync,
      "False",
      R.NotApproved,
      `Tailnet ${input.tailnet.name} reports HeadscaleCompatible=False: the operator does not write to this server; not approved on ${who}: ${missing.join(", ")}${unadvertised}`,
    );
  }
  actions.approve = { nodeId: node.id, node: who, add: missing };
  const status = notAdvertised.length ? "False" : "True";
  const reason = notAdvertised.length ? R.NotApproved : R.Approved;
  return cond(C.RoutesInSync, status, reason, `approved ${missing.join(", ")} on ${who}${unadvertised}`);
}

function staleNodes(
  input: GatewayDecideInput,
  facts: NodeAnalysis | undefined,
  verified: boolean,
  actions: GatewayActions,
) {
  if (!input.headscale.nodes.ok) {
    return cond(C.StaleNodes, "Unknown", R.NotObserved, `cannot list nodes: ${input.headscale.nodes.error}`);
  }
  if (!facts?.current) return cond(C.StaleNodes, "False", R.None, "no node of this gateway is registered");
  if (!verified) {
    return cond(
      C.StaleNodes,
      "Unknown",
      R.None,
      "not evaluated while the current node is not verified (see Registered)",
    );
  }
  if (facts.stale.length === 0)
    return cond(C.StaleNodes, "False", R.None, `only the current node: ${describeNode(facts.current)}`);
  if (input.spec.staleNodes === "Keep") {
    return cond(
      C.StaleNodes,
      "True",
      R.ExternallyManaged,
      `staleNodes is Keep; stale nodes left in place: ${list(facts.stale)}`,
    );
  }
  actions.deleteNodes = facts.stale.map((n) => ({ id: n.id, node: describeNode(n) }));
  return cond(C.StaleNodes, "False", R.Deleted, `deleted stale ${list(facts.stale)}`);
}

/**
 * The Deployment to return: the rendered one once a bootstrap key exists. Without a key
 * containerboot would start an interactive login and log a registration URL, so none is run yet;
 * one that already runs is kept as observed (scaled to zero when suspended).
 */
function keyedDeployment(input: GatewayDecideInput, rendered: K8sObject): K8sObject[] {
  if (input.key.secret) return [rendered];
  const observed = input.observed.deployment;
  if (!observed) return [];
  const kept = reuseObserved(observed);
  return [input.spec.suspend ? { ...kept, spec: { ...(kept.spec as object), replicas: 0 } } : kept];
}

export function decideGateway(input: GatewayDecideInput): GatewayDecision {
  const { headscale: hs, now } = input;
  const actions: GatewayActions = { deleteNodes: [] };
  const facts = hs.nodes.ok
    ? analyzeNodes({
        nodes: hs.nodes.value,
        tag: input.tag,
        secretKeyId: input.key.keyId,
        previous: input.previousNode,
        acceptedNodeKey: acceptedNodeKey(input.parent),
      })
    : undefined;

  // The fresh writer's checks, in order; an observation that failed is a check that could not pass.
  const problems: FreshProblem[] = [];
  let definite = false;
  const add = (p: FreshProblem | undefined) => {
    if (p) problems.push(p);
    definite ||= !!p;
  };
  // What the Secret itself says (missing, expired) is known even when Headscale cannot be read.
  const keyProblem = checkBootstrapKey(input.key, hs.keys.ok ? hs.keys.value : undefined, input.tag, now);
  if (keyProblem || hs.keys.ok) add(keyProblem);
  else problems.push({ check: "bootstrap key", message: `cannot read Headscale's pre-auth keys: ${hs.keys.error}` });
  if (facts) add(checkProvenance(facts.provenanceProblems));
  else
    problems.push({
      check: "node provenance",
      message: `cannot list Headscale's nodes: ${hs.nodes.ok ? "" : hs.nodes.error}`,
    });
  add(checkPodTemplate(input.observed.deployment));

  const freshOk = problems.length === 0 && !facts?.identityChange;
  const verified = freshOk && !!facts?.current;

  const deployment = renderDeployment(input, input.key.secret?.metadata.name);
  const owner = `${input.parent.metadata.namespace}/${input.parent.metadata.name}`;
  const children: K8sObject[] = [
    ...keyedDeployment(input, deployment),
    dnsService(input.parent, input.names, input.spec.serviceType),
    gatewayNetworkPolicy(input.parent, input.names, input.metricsPeers),
    corefileConfigMap(input.parent, input.names, renderCorefile(input)),
    ...(input.tailnet.ca ? [caConfigMap(input.parent, input.names, input.tailnet.ca)] : []),
  ];
  if (freshOk) {
    const records = derivedZoneRecords({
      tailnet: input.tailnet.name,
      zone: input.zone,
      baseDomain: input.tailnet.baseDomain,
      egresses: input.related.egresses,
      services: input.related.services,
    });
    const nameServer = `${input.names.service}.${input.parent.metadata.namespace}.svc.cluster.local`;
    children.push(
      zoneConfigMap(input.parent, input.names, renderZoneFile({ zone: input.zone, nameServer, owner, records })),
    );
  } else if (input.observed.zone) {
    // The fresh writer is blocked: the derived zone keeps its last state, exactly as observed.
    children.push(reuseObserved(input.observed.zone));
  }
  if (input.key.secret) children.push(input.key.secret);

  const ip = serviceIP(input.observed.service);
  const conditions = [
    registered(input, facts, problems, !definite),
    routesInSync(input, facts, verified, actions),
    dnsReady({ suspended: input.spec.suspend, pods: input.related.pods, deployment: input.observed.deployment }),
    staleNodes(input, facts, verified, actions),
    clusterDNSForward({
      mode: input.spec.clusterDNSForward,
      zone: input.zone,
      serviceIP: ip,
      serviceName: `${input.parent.metadata.namespace}/${input.names.service}`,
      coredns: input.related.coredns,
    }),
    workloadCurrent({ deployment: input.observed.deployment, renderedStamp: renderedStamp(deployment) }),
    serviceReady({ type: input.spec.serviceType, service: input.observed.service }),
  ];
  const node = verified && facts?.current ? statusNodeOf(facts.current) : input.previousNode;
  const waiting = !facts?.current || problems.some((p) => p.message.startsWith("cannot "));
  return {
    children,
    conditions,
    fields: { tag: input.tag, ...(node ? { node } : {}), ...(ip ? { dnsServiceIP: ip } : {}) },
    actions,
    suspended: input.spec.suspend,
    resyncAfterSeconds: waiting && !input.spec.suspend ? 30 : undefined,
  };
}

export interface ActOutcomes {
  approve?: { ok: true } | { ok: false; error: string };
  deleted: { id: string; node: string; error?: string }[];
}

/** Folds the Headscale writes' outcomes into the conditions and derives Ready (api.md order). */
export function finishConditions(decision: GatewayDecision, outcomes: ActOutcomes): ConditionInput[] {
  const conditions = decision.conditions.map((c) => {
    if (c.type === C.RoutesInSync && decision.actions.approve && outcomes.approve && !outcomes.approve.ok) {
      const a = decision.actions.approve;
      return cond(
        C.RoutesInSync,
        "False",
        R.NotApproved,
        `approving ${a.add.join(", ")} on ${a.node} failed: ${outcomes.approve.error}`,
      );
    }
    if (c.type === C.StaleNodes && outcomes.deleted.some((d) => d.error)) {
      const done = outcomes.deleted.filter((d) => !d.error).map((d) => d.node);
      const failed = outcomes.deleted.filter((d) => d.error).map((d) => `${d.node}: ${d.error}`);
      const prefix = done.length ? `deleted stale ${done.join(", ")}; ` : "";
      return cond(C.StaleNodes, "True", R.Deleted, `${prefix}could not delete stale ${failed.join("; ")} (retrying)`);
    }
    return c;
  });
  const byType = new Map(conditions.map((c) => [c.type, c]));
  const ready = decision.suspended
    ? cond(C.Ready, "False", R.Suspended, "spec.suspend is true: the gateway is scaled to zero")
    : deriveReady(
        [C.Registered, C.RoutesInSync, C.DNSReady, C.WorkloadCurrent, C.ServiceReady].map((t) =>
          blockerFrom(byType.get(t) as ConditionInput),
        ),
        R.FreshRuntimeReady,
        byType.get(C.Registered)?.message ?? "",
      );
  return [...conditions, ready];
}
