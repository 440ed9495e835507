/**
 * Observations of a gateway sync (I/O only): the Tailnet and its credentials, the zone the gateway can serve,
 * the Headscale node and pre-auth key lists (through the shared, cached view; a failure is an observation,
 * never thrown), the children and related objects, and the state of the gateway pods as the related Pods show
 * it. Without a Tailnet, credentials or a zone nothing is read from Headscale: there is nothing to serve.
 */

import { API_VERSION } from "../../../api/schemas.js";
import type { NetworkPolicyPeer } from "../../../config.js";
import type { HsNode, HsPreAuthKey } from "../../../headscale/types.js";
import type { HeadscaleConnection, HeadscaleView } from "../../../headscale/view.js";
import { EGRESS_TARGET_LABEL, OWNER_UID_LABEL } from "../../../k8s/labels.js";
import {
  findObject,
  type K8sObject,
  type ObjectMaps,
  objectsOf,
  recordOf,
  reuseAllChildren,
} from "../../../k8s/objects.js";
import { previousStatus } from "../../../pipeline/status.js";
import type { HookDeps, HookRequest } from "../../../pipeline/types.js";
import { metricsPeers } from "../../shared/agent-network-policy.js";
import { observedKeys } from "../../shared/authkey.js";
import { leftOutIn } from "../../shared/policy-left-out.js";
import { lookupProxyClass, proxyClassMissingMessage } from "../../shared/proxy-class.js";
import { REPLICA_LABEL, replicaIndexOf } from "../../shared/replica.js";
import { type NodeStatusItem, recordedNodes, type StateFact, stateFacts } from "../../shared/replica-nodes.js";
import { reservedOverlap } from "../../shared/routes.js";
import type { Refusal, Tenancy } from "../../shared/tenancy.js";
import { agentPods, effectiveTag, resolveAgentWorkload, tailnetIncompatible } from "../../shared/workload.js";
import { gatewayKeySecretName } from "./children.js";
import { exitNodeState } from "./exit.js";
import { previousStatusNode, recordedKeyIdsOf, type StatusNode } from "./nodes.js";
import { type GatewaySpec, gatewayZone, readGatewaySpec, splitDNSDomains } from "./spec.js";
import type { RenderInput } from "./workload.js";

/** An observation as decide() consumes it: a value, or the error message that prevented it. */
export type Seen<T> = { ok: true; value: T } | { ok: false; error: string };

export interface HeadscaleFacts {
  nodes: Seen<HsNode[]>;
  keys: Seen<HsPreAuthKey[]>;
}

/** Everything a served gateway's sync observed, but the bootstrap key (that one is act's: it may be minted). */
export interface GatewayFacts extends RenderInput {
  /** OverlapsReserved: a route overlaps the Tailnet's reservedNetworks; no route is approved (shared/routes.ts). */
  routeConflict?: string;
  /** LeftOutOfPolicy: the Tailnet left this gateway's routes or exit grant out of the policy. */
  leftOut?: string;
  metricsPeers: NetworkPolicyPeer[];
  now: Date;
  observed: {
    /** The legacy gateway Deployment (before per-replica identity): kept until every replica is bound (§2.8). */
    deployment?: K8sObject;
    service?: K8sObject;
    zone?: K8sObject;
    /** Every replica's StatefulSet, by replica index. */
    statefulSets: K8sObject[];
    /** Every child as observed (a StatefulSet is answered only once its identity children are observed). */
    children: K8sObject[];
    /** Bootstrap key Secrets of the legacy shape (`<parent>-authkey-<id>`): kept while the Deployment is. */
    legacyKeySecrets: K8sObject[];
  };
  /** Per replica: its state Secret's device_id and creation (the only state data read, replica-nodes.ts). */
  stateFacts: StateFact[];
  /** status.nodes[] of the previous sync: each replica's recorded node. */
  record: NodeStatusItem[];
  /** Key ids the previous status names, and the legacy key Secrets' (ours; the stable Secret's is added). */
  recordedKeyIds: string[];
  related: {
    coredns?: K8sObject;
    egresses: K8sObject[];
    services: K8sObject[];
    pods: PodFact[];
    /** The Tailnet's tenancy and the Namespaces it judges: an egress it refuses claims no zone name. */
    admission?: { tenancy: Tenancy; related: ObjectMaps };
  };
  headscale: HeadscaleFacts;
  previousNode?: StatusNode;
}

/** Why nothing is served: no Tailnet, no credentials, or no usable zone. Every child is kept as observed. */
export interface GatewayUnserved {
  parent: K8sObject;
  spec: GatewaySpec;
  /** The children as observed (their reusable form). */
  children: K8sObject[];
  unserved:
    | {
        reason: "NoTailnet" | "NoAPIKey" | "ProxyClassMissing" | Refusal["reason"] | "TagInUse";
        message: string /** Known once the Tailnet is. */;
        tag?: string;
      }
    | { reason: "InvalidSpec"; message: string };
}

/** A served gateway: its facts, the connection act writes through and the stable bootstrap key Secret observed. */
export interface GatewaySeen extends GatewayFacts {
  conn: HeadscaleConnection;
  secrets: K8sObject[];
}

/** The stable key Secret (or none) and the legacy ones among the observed Secrets. */
export function keySecrets(parent: K8sObject, secrets: readonly K8sObject[]) {
  const stable = gatewayKeySecretName(parent);
  const keyed = observedKeys(secrets);
  return {
    stable: keyed.filter((k) => k.secret.metadata.name === stable).map((k) => k.secret),
    legacy: keyed.filter((k) => k.secret.metadata.name !== stable),
  };
}

function replicaChildrenFacts(req: HookRequest, ns: string) {
  const uid = req.parent.metadata.uid ?? "";
  const own = (o: K8sObject) =>
    o.metadata.namespace === ns && o.metadata.labels?.[OWNER_UID_LABEL] === uid && replicaIndexOf(o) !== undefined;
  const statefulSets = objectsOf(req.children, "apps/v1", "StatefulSet")
    .filter(own)
    .sort((a, b) => (replicaIndexOf(a) ?? 0) - (replicaIndexOf(b) ?? 0));
  const children = Object.values(req.children ?? {})
    .flatMap((g) => Object.values(g ?? {}))
    .filter((o): o is K8sObject => !!o?.metadata);
  return { statefulSets, children };
}

export type GatewayObservation = GatewaySeen | GatewayUnserved;

export async function observeGateway(req: HookRequest, spec: GatewaySpec, deps: HookDeps): Promise<GatewayObservation> {
  const parent = req.parent;
  const ctx = resolveAgentWorkload(req, deps);
  if (!ctx.ok) {
    const tag = ctx.settings ? { tag: effectiveTag(parent, ctx.settings.tagPrefix) } : {};
    return {
      parent,
      spec,
      children: reuseAllChildren(req.children),
      unserved: { reason: ctx.reason, message: ctx.message, ...tag },
    };
  }
  const proxyClass = lookupProxyClass(parent, req.related);
  if (proxyClass.kind === "missing")
    return {
      parent,
      spec,
      children: reuseAllChildren(req.children),
      unserved: {
        reason: "ProxyClassMissing",
        message: proxyClassMissingMessage(proxyClass.name),
        tag: effectiveTag(parent, ctx.settings.tagPrefix),
      },
    };
  const zone = gatewayZone(spec, ctx.settings);
  if (!zone.ok)
    return {
      parent,
      spec,
      children: reuseAllChildren(req.children),
      unserved: { reason: "InvalidSpec", message: zone.message },
    };
  const ns = parent.metadata.namespace ?? "";
  const names = spec.names;
  const deployment = findObject(req.children, "apps/v1", "Deployment", names.deployment, ns);
  const { replicaObjects, legacyKeySecrets, ...identity } = identityObservation(req, ns);
  return {
    parent,
    spec,
    tag: effectiveTag(parent, ctx.settings.tagPrefix),
    zone: zone.zone,
    images: deps.config.images,
    ...(proxyClass.kind === "found" ? { proxyClass: proxyClass.spec } : {}),
    noLogsNoSupport: deps.config.tailscale.noLogsNoSupport,
    exitNode: exitNodeState(
      spec,
      parent,
      ctx.settings.tenancy,
      req.related,
      replicaObjects.statefulSets[0] ?? deployment,
      {
        tailnet: ctx.settings.name,
        allowedIngressSources: ctx.settings.allowedIngressSources,
      },
    ),
    ...reservedRoutes(spec.routes, ctx.settings, `${ns}/${parent.metadata.name}`),
    ...leftOutFact(ctx.tailnet, parent),
    tailnet: {
      name: ctx.settings.name,
      loginServer: ctx.settings.url || ctx.conn.url,
      policyMode: ctx.settings.policyMode,
      baseDomain: ctx.settings.baseDomain,
      splitDomains: splitDNSDomains(ctx.tailnet),
      incompatible: tailnetIncompatible(ctx.tailnet),
      ...(ctx.conn.ca ? { ca: ctx.conn.ca } : {}),
    },
    metricsPeers: metricsPeers(deps.config),
    now: deps.now(),
    observed: {
      deployment,
      service: findObject(req.children, "v1", "Service", names.service, ns),
      zone: findObject(req.children, "v1", "ConfigMap", names.zone, ns),
      ...replicaObjects,
      legacyKeySecrets,
    },
    ...identity,
    related: {
      coredns: findObject(req.related, "v1", "ConfigMap", "coredns", "kube-system"),
      egresses: objectsOf(req.related, API_VERSION, "TailnetEgress"),
      services: objectsOf(req.related, "v1", "Service").filter(
        (s) => s.metadata.labels?.[EGRESS_TARGET_LABEL] === "true",
      ),
      pods: podFacts(agentPods(req)),
      admission: { tenancy: ctx.settings.tenancy, related: req.related },
    },
    headscale: await observeHeadscale(deps.views.view(ctx.conn)),
    conn: ctx.conn,
  };
}

/** The replicas' children, their state facts, the recorded nodes and keys, the key Secrets (stable and legacy). */
function identityObservation(req: HookRequest, ns: string) {
  const secrets = objectsOf(req.children, "v1", "Secret");
  const keys = keySecrets(req.parent, secrets);
  const status = previousStatus(req.parent);
  const previousNode = previousStatusNode(status);
  return {
    replicaObjects: replicaChildrenFacts(req, ns),
    legacyKeySecrets: keys.legacy.map((k) => k.secret),
    stateFacts: stateFacts(secrets),
    record: recordedNodes(status),
    recordedKeyIds: [...new Set([...recordedKeyIdsOf(status), ...keys.legacy.map((k) => k.keyId)])],
    ...(previousNode ? { previousNode } : {}),
    secrets: keys.stable,
  };
}

/** A spec the hook found invalid (gatewaySpecProblem, the schema): nothing is observed, every child kept. */
export function invalidObservation(req: HookRequest, message: string): GatewayUnserved {
  const parent = req.parent;
  const spec = readGatewaySpec(parent);
  return { parent, spec, children: reuseAllChildren(req.children), unserved: { reason: "InvalidSpec", message } };
}

export async function observeHeadscale(view: HeadscaleView): Promise<HeadscaleFacts> {
  const [nodes, keys] = await Promise.all([view.nodes(), view.preAuthKeys()]);
  return { nodes: seen(nodes), keys: seen(keys) };
}

export function seen<T>(o: { ok: true; value: T } | { ok: false; error: { message: string } }): Seen<T> {
  return o.ok ? { ok: true, value: o.value } : { ok: false, error: o.error.message };
}

export interface PodFact {
  name: string;
  /** The replica the pod runs (its REPLICA_LABEL); absent on a legacy Deployment's pod. */
  replica?: number;
  deleting: boolean;
  startTime?: Date;
  /** Container name → ready, from status.containerStatuses; absent when the Pod reports none. */
  ready: Record<string, boolean>;
}

export function podFacts(pods: readonly K8sObject[]): PodFact[] {
  return pods.map((p) => {
    const status = recordOf(p.status);
    const ready: Record<string, boolean> = {};
    for (const c of Array.isArray(status.containerStatuses) ? status.containerStatuses.map(recordOf) : []) {
      if (typeof c.name === "string") ready[c.name] = c.ready === true;
    }
    const start = typeof status.startTime === "string" ? new Date(status.startTime) : undefined;
    const replica = p.metadata.labels?.[REPLICA_LABEL] !== undefined ? replicaIndexOf(p) : undefined;
    return {
      name: p.metadata.name,
      ...(replica !== undefined ? { replica } : {}),
      deleting: !!p.metadata.deletionTimestamp,
      startTime: start && !Number.isNaN(start.getTime()) ? start : undefined,
      ready,
    };
  });
}

/** `routeConflict` when a route overlaps the Tailnet's reservedNetworks (the rule the Tailnet's render applies). */
function reservedRoutes(
  routes: readonly string[],
  settings: { name: string; reservedNetworks: readonly string[] },
  id: string,
): { routeConflict?: string } {
  const who = { kind: "TailnetGateway", id, tailnet: settings.name };
  const overlap = reservedOverlap(routes, settings.reservedNetworks, who);
  return overlap ? { routeConflict: `${overlap}; no route of this gateway is approved` } : {};
}

/** `leftOut` when the Tailnet's status lists this gateway (shared/policy-left-out.ts). */
function leftOutFact(tailnet: K8sObject, parent: K8sObject): { leftOut?: string } {
  const leftOut = leftOutIn(tailnet, parent, "TailnetGateway");
  return leftOut ? { leftOut } : {};
}
