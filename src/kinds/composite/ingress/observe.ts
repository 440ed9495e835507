/**
 * observe for a TailnetIngress (I/O, never throws): the Tailnet and credentials from `related`,
 * the live policy and node list through the shared cached Headscale view, the agent pods' /status,
 * the related TLS Secrets (the exposes' own and their Certificates'), backend Services and TailnetIngresses, and
 * whether Metacontroller watches cert-manager Certificates (their type in the request's children). The connection (and its API
 * key) stays here; decide gets the Tailnet's settings only.
 */
import { API_VERSION } from "../../../api/schemas.js";
import type { Obs } from "../../../headscale/errors.js";
import type { HsNode, HsPreAuthKey } from "../../../headscale/types.js";
import type { HeadscaleView } from "../../../headscale/view.js";
import { type K8sObject, objectsOf } from "../../../k8s/objects.js";
import type { HookDeps, HookRequest } from "../../../pipeline/types.js";
import { observeReplicas } from "../../shared/agent-replicas.js";
import { observedKeys } from "../../shared/authkey.js";
import { CERTIFICATE_CHILD_KEY } from "../../shared/certificates.js";
import { GRANT_VERSION, GW_V1, readGrant, readRoute } from "../../shared/gateway-api-objects.js";
import { namesIn } from "../../shared/ingress-names.js";
import { listNames, nodeLabel } from "../../shared/node-names.js";
import { leftOutOfPolicy } from "../../shared/policy-left-out.js";
import { lookupProxyClass, type ProxyClassLookup, proxyClassMissingMessage } from "../../shared/proxy-class.js";
import { explicitTag, ownKeyIds, tagTakenBy } from "../../shared/tenancy.js";
import {
  type AgentWorkloadContext,
  agentPods,
  effectiveTag,
  resolveAgentWorkload,
  type TailnetSettings,
} from "../../shared/workload.js";
import { servedSecretOf } from "./certificate.js";
import type { IngressFacts, TailnetView } from "./facts.js";
import { namesToAsk } from "./names.js";
import { type GrantsSeen, REFERENCE_GRANT_CHILD_KEY } from "./permitted.js";
import type { IngressSpec } from "./spec.js";

/** What observe hands on: the facts for plan and decide, and the view act writes through (none without a Tailnet). */
export interface IngressObservation {
  facts: IngressFacts;
  view?: HeadscaleView;
}

/** Every observed child, flattened (Metacontroller's maps are keyed by type, then name). */
export function observedChildren(req: HookRequest): K8sObject[] {
  return Object.keys(req.children ?? {})
    .sort()
    .flatMap((type) =>
      Object.keys(req.children[type] ?? {})
        .sort()
        .map((key) => req.children[type][key])
        .filter((o): o is K8sObject => !!o?.metadata?.name),
    );
}

function inNamespace(req: HookRequest, apiVersion: string, kind: string): K8sObject[] {
  return objectsOf(req.related, apiVersion, kind).filter((o) => o.metadata.namespace === req.parent.metadata.namespace);
}

/** The Tailnet as decide may see it (no connection, no API key). resolveWorkload finds NoAPIKey's settings always. */
function tailnetView(workload: AgentWorkloadContext, proxyClass: ProxyClassLookup): TailnetView {
  if (workload.ok && proxyClass.kind === "missing") {
    return {
      ok: false,
      reason: "ProxyClassMissing",
      message: proxyClassMissingMessage(proxyClass.name),
      settings: workload.settings,
    };
  }
  if (workload.ok) {
    return {
      ok: true,
      settings: workload.settings,
      loginServer: workload.settings.url || workload.conn.url,
      ...(workload.conn.ca ? { ca: workload.conn.ca } : {}),
      ...(proxyClass.kind === "found" ? { proxyClass: proxyClass.spec } : {}),
    };
  }
  if (workload.reason !== "NoTailnet" && workload.settings) {
    return { ok: false, reason: workload.reason, message: workload.message, settings: workload.settings };
  }
  return { ok: false, reason: "NoTailnet", message: workload.message };
}

/**
 * One tag, one owner: an explicit tag carried by a node this ingress did not register (an admin's server)
 * is refused as TagInUse, before anything is minted or written.
 */
function tagOwner(
  req: HookRequest,
  tailnet: TailnetView,
  nodes: Obs<HsNode[]> | undefined,
  ownKeys: ReadonlySet<string> | undefined,
): TailnetView {
  if (!tailnet.ok || !nodes?.ok || !ownKeys || explicitTag(req.parent) === undefined) return tailnet;
  const tag = effectiveTag(req.parent, tailnet.settings.tagPrefix);
  const foreign = tagTakenBy(req.parent, tag, nodes.value, ownKeys);
  if (!foreign.length) return tailnet;
  return {
    ok: false,
    reason: "TagInUse",
    message: `${tag} is carried by ${listNames(foreign.map(nodeLabel))}, which this ingress did not register; a tag has one owner, so nothing is minted for it`,
    settings: tailnet.settings,
  };
}

/** The key ids the ingress minted, with the keys of an earlier version adopted (tenancy.ts ownKeyIds). */
function ownedKeys(req: HookRequest, settings: TailnetSettings, keys: readonly HsPreAuthKey[]): Set<string> {
  const tag = effectiveTag(req.parent, settings.tagPrefix);
  const secretIds = observedKeys(observedChildren(req)).map((k) => k.keyId);
  // resolveWorkload admitted the object: an explicit tag is granted to it
  return ownKeyIds(req.parent, tag, secretIds, keys, { ttlSeconds: settings.authKeyTTLSeconds });
}

/** The names the agents' resolvers are asked about (DNSServed): every name the ingress could publish. */
function askedNames(req: HookRequest, workload: ReturnType<typeof resolveAgentWorkload>): string[] | undefined {
  if (!workload.ok) return undefined;
  return namesToAsk(namesIn(req.parent, workload.settings.baseDomain, workload.settings.dnsFlatNamespaces));
}

export async function observeIngress(req: HookRequest, spec: IngressSpec, deps: HookDeps): Promise<IngressObservation> {
  const workload = resolveAgentWorkload(req, deps);
  const proxyClass = lookupProxyClass(req.parent, req.related);
  // A missing class holds the ingress as a missing Tailnet does: nothing is read from Headscale or written.
  const view = workload.ok && proxyClass.kind !== "missing" ? deps.views.view(workload.conn) : undefined;
  const [policy, nodes, keys, scrapes] = await Promise.all([
    view?.policy(),
    view?.nodes(),
    view?.preAuthKeys(),
    deps.scraper.scrape(agentPods(req), askedNames(req, workload)),
  ]);
  const ownKeys = workload.ok && keys?.ok ? ownedKeys(req, workload.settings, keys.value) : undefined;
  const tailnet = tagOwner(req, tailnetView(workload, proxyClass), nodes, ownKeys);
  const wantedSecrets = new Set(spec.exposes.flatMap((e) => servedSecretOf(req.parent, e) ?? []));
  const tlsSecrets = new Map(
    inNamespace(req, "v1", "Secret")
      .filter((s) => wantedSecrets.has(s.metadata.name))
      .map((s) => [s.metadata.name, s] as const),
  );
  const services = new Set(inNamespace(req, "v1", "Service").map((s) => s.metadata.name));
  return {
    facts: {
      parent: req.parent,
      config: deps.config,
      children: observedChildren(req),
      tailnet,
      policy,
      nodes,
      ...(keys ? { keys } : {}),
      replicas: observeReplicas(req, agentPods(req)),
      scrapes,
      tlsSecrets,
      certificatesWatched: CERTIFICATE_CHILD_KEY in (req.children ?? {}),
      services,
      ingresses: objectsOf(req.related, API_VERSION, "TailnetIngress"),
      backendGrants: backendGrantsOf(req),
      ...leftOutFact(req),
      ...(ownKeys ? { ownKeys } : {}),
      now: deps.now(),
    },
    view,
  };
}

/**
 * The ReferenceGrants and routes customize asked for (related.ts ingressRelated): served only with the gateway-api
 * component (permitted.ts REFERENCE_GRANT_CHILD_KEY). A type customize did not ask for reads as none: refused.
 */
function backendGrantsOf(req: HookRequest): GrantsSeen {
  return {
    served: REFERENCE_GRANT_CHILD_KEY in (req.children ?? {}),
    grants: objectsOf(req.related, GRANT_VERSION, "ReferenceGrant").map(readGrant),
    // the kind from the type key the object came under, never from the object
    routes: (["HTTPRoute", "GRPCRoute"] as const).flatMap((kind) =>
      objectsOf(req.related, GW_V1, kind).map((o) => readRoute({ ...o, kind })),
    ),
  };
}

/** `leftOut` when the Tailnet left this ingress's grant out of the policy (shared/policy-left-out.ts). */
function leftOutFact(req: HookRequest): { leftOut?: string } {
  const leftOut = leftOutOfPolicy(req.related, req.parent, "TailnetIngress");
  return leftOut ? { leftOut } : {};
}
