/**
 * What an egress sync reads (impure, never throws): its Tailnet and credentials (resolveWorkload), the key
 * Secrets among its children (parsed once), and, with a Tailnet, the live policy, the node list and the
 * pre-auth keys through the shared Headscale view (cached, single-flight), and /status of every running agent
 * pod, scraped in parallel with the scraper's short timeout. Every failure is an observation; without a
 * Tailnet or its credentials the observation says why and nothing else is read.
 */
import type { CommonReason } from "../../../conditions/tables/shared.js";
import type { Obs } from "../../../headscale/errors.js";
import type { HsNode, HsPolicy, HsPreAuthKey } from "../../../headscale/types.js";
import type { HeadscaleView } from "../../../headscale/view.js";
import { objectsOf } from "../../../k8s/objects.js";
import type { HookDeps, HookRequest } from "../../../pipeline/types.js";
import { observeReplicas, type ReplicaObservation } from "../../shared/agent-replicas.js";
import { type ObservedKey, observedKeys, stableAuthKeySecretName } from "../../shared/authkey.js";
import { listNames, nodeLabel } from "../../shared/node-names.js";
import { lookupProxyClass, type ProxyClassSpec, proxyClassMissingMessage } from "../../shared/proxy-class.js";
import { ownKeyIds, type TenancyReason, tagTakenBy } from "../../shared/tenancy.js";
import { agentPods, effectiveTag, resolveAgentWorkload, type TailnetSettings } from "../../shared/workload.js";
import type { EgressSpec } from "./spec.js";
import { type AgentObservation, agentObservation, scrapeablePods } from "./targets.js";

interface Observed {
  /** The clock of this sync (plans, keys and decide use the same instant). */
  now: Date;
  /** The stable key Secret `<parent>-authkey` among the children (observedKeys), rotated in place. */
  keySecrets: ObservedKey[];
  /** Its replicas: state Secrets' device_id, StatefulSets, pods, the status record, the legacy Deployment. */
  replicas: ReplicaObservation;
}

/** The Tailnet and its credentials resolved: Headscale and the agents were read. */
export interface EgressReads extends Observed {
  ok: true;
  settings: TailnetSettings;
  /** The Headscale CA from the Tailnet's credentials Secret, delivered to the agent pods. */
  ca?: string;
  /** The effective tag (spec.tag, else from the Tailnet's tagPrefix). */
  tag: string;
  /** The named TailnetProxyClass's settings (spec.proxyClassName), folded into the agent pods. */
  proxyClass?: ProxyClassSpec;
  /** Where act writes (never read by decide). */
  view: HeadscaleView;
  policy: Obs<HsPolicy | null>;
  nodes: Obs<HsNode[]>;
  /** Headscale's pre-auth keys (masked), to replace a revoked or single-use key early. */
  keys: Obs<HsPreAuthKey[]>;
  /** The pre-auth key ids this egress minted (tenancy.ts ownKeyIds): only their nodes and keys are its own. */
  ownKeys: ReadonlySet<string>;
  agents: AgentObservation;
}

/** No Tailnet, or no credentials yet: nothing could be read. */
export interface EgressUnobserved extends Observed {
  ok: false;
  reason: typeof CommonReason.NoTailnet | typeof CommonReason.NoAPIKey | "ProxyClassMissing" | TenancyReason;
  message: string;
  /** spec.tag, or the effective tag once the Tailnet (its tagPrefix) is known. */
  tag?: string;
}

export type EgressObservation = EgressReads | EgressUnobserved;

export async function observeEgress(req: HookRequest, spec: EgressSpec, deps: HookDeps): Promise<EgressObservation> {
  const now = deps.now();
  const allKeys = observedKeys(objectsOf(req.children, "v1", "Secret"));
  const stable = stableAuthKeySecretName(req.parent.metadata.name);
  const keySecrets = allKeys.filter((k) => k.secret.metadata.name === stable);
  const replicas = observeReplicas(req, agentPods(req));
  const ctx = resolveAgentWorkload(req, deps);
  if (!ctx.ok) {
    const tag = ctx.settings ? effectiveTag(req.parent, ctx.settings.tagPrefix) : spec.tag;
    return { ok: false, reason: ctx.reason, message: ctx.message, ...(tag ? { tag } : {}), now, keySecrets, replicas };
  }
  const proxyClass = lookupProxyClass(req.parent, req.related);
  if (proxyClass.kind === "missing") {
    const tag = effectiveTag(req.parent, ctx.settings.tagPrefix);
    return {
      ok: false,
      reason: "ProxyClassMissing",
      message: proxyClassMissingMessage(proxyClass.name),
      tag,
      now,
      keySecrets,
      replicas,
    };
  }
  const view = deps.views.view(ctx.conn);
  const pods = scrapeablePods(agentPods(req));
  const [policy, nodes, keys, scrapes] = await Promise.all([
    view.policy(),
    view.nodes(),
    view.preAuthKeys(),
    pods.length ? deps.scraper.scrape(pods) : Promise.resolve([]),
  ]);
  const tag = effectiveTag(req.parent, ctx.settings.tagPrefix);
  const ownKeys = ownKeyIds(
    req.parent,
    tag,
    // the legacy `<parent>-authkey-<id>` Secrets' keys stay the object's own through the upgrade
    allKeys.map((k) => k.keyId),
    keys.ok ? keys.value : undefined,
    // resolveWorkload admitted the object: an explicit tag is granted to it
    { ttlSeconds: ctx.settings.authKeyTTLSeconds },
  );
  // one tag, one owner: an explicit tag another node carries (an admin's server) is not this egress's
  const foreign = nodes.ok ? tagTakenBy(req.parent, tag, nodes.value, ownKeys) : [];
  if (foreign.length) {
    const message = `${tag} is carried by ${listNames(foreign.map(nodeLabel))}, which this egress did not register; a tag has one owner, so nothing is minted for it`;
    return { ok: false, reason: "TagInUse", message, tag, now, keySecrets, replicas };
  }
  return {
    ok: true,
    now,
    keySecrets,
    replicas,
    settings: ctx.settings,
    ...(ctx.conn.ca ? { ca: ctx.conn.ca } : {}),
    tag,
    ownKeys,
    ...(proxyClass.kind === "found" ? { proxyClass: proxyClass.spec } : {}),
    view,
    policy,
    nodes,
    keys,
    agents: agentObservation(pods, scrapes),
  };
}
