/**
 * The TailnetGateway kind: resolve the Tailnet → observe Headscale → plan and ensure the bootstrap
 * key → decide (pure) → act (guarded Headscale writes) → status. A suspended gateway is scaled to
 * zero and withdrawn from the resource metrics, so no resource alert fires for it.
 */
import { API_VERSION } from "../../api/schemas.js";
import { type ConditionInput, cond } from "../../conditions/condition.js";
import { GatewayCondition as C, GatewayReason as R } from "../../conditions/reasons.js";
import { EGRESS_TARGET_LABEL } from "../../k8s/labels.js";
import { findObject, isRecord, type K8sObject, objectsOf, reuseAllChildren } from "../../k8s/objects.js";
import { withdrawResource } from "../../metrics/resource.js";
import { assembleStatus, invalidSpecResult, previousStatus, resourceId } from "../common.js";
import { gatewayRelated } from "../related.js";
import { metricsPeers } from "../shared/agent.js";
import { ensureAuthKey, observedKeys } from "../shared/authkey.js";
import {
  agentPods,
  effectiveTag,
  resolveWorkload,
  tailnetIncompatible,
  type WorkloadContext,
} from "../shared/workload.js";
import type { FinalizeResult, HookDeps, HookRequest, KindModule, SyncResult } from "../types.js";
import { actGateway, cleanupGateway } from "./act.js";
import { planBootstrapKey } from "./bootstrap.js";
import { gatewayLabels } from "./children.js";
import { decideGateway, finishConditions, type RenderInput, renderDeployment, renderedStamp } from "./decide.js";
import { analyzeNodes, previousStatusNode } from "./nodes.js";
import { observeHeadscale, podFacts, reobserveKeys } from "./observe.js";
import { acceptedNodeKey, gatewayNames, gatewaySpec, splitDNSDomains } from "./spec.js";
import { stampOf } from "./template.js";
import { isDnsName } from "./zone.js";

const TYPES = Object.values(C);
const MIN_RESYNC_SECONDS = 5;

function metricId(parent: K8sObject) {
  return { kind: parent.kind, namespace: parent.metadata.namespace ?? "", name: parent.metadata.name };
}

/** Status fields of the previous sync worth keeping when nothing new can be learned. */
function keptFields(req: HookRequest): Record<string, unknown> {
  const { conditions: _c, observedGeneration: _g, ...rest } = previousStatus(req.parent);
  return rest;
}

/** No Tailnet or no credentials: nothing can be observed, so every child stays as it is. */
function unresolved(req: HookRequest, deps: HookDeps, ctx: Extract<WorkloadContext, { ok: false }>): SyncResult {
  const suspended = gatewaySpec(req.parent).suspend;
  const conditions: ConditionInput[] = TYPES.filter((t) => t !== C.Ready).map((t) =>
    cond(t, "Unknown", ctx.reason, `not evaluated: ${ctx.message}`),
  );
  conditions.push(
    suspended
      ? cond(C.Ready, "False", R.Suspended, "spec.suspend is true: the gateway is scaled to zero")
      : cond(C.Ready, "False", ctx.reason, ctx.message),
  );
  const children = reuseAllChildren(req.children).map((c) =>
    suspended && c.kind === "Deployment" ? { ...c, spec: { ...(c.spec as object), replicas: 0 } } : c,
  );
  const fields = keptFields(req);
  if (ctx.settings) fields.tag = effectiveTag(req.parent, ctx.settings.tagPrefix);
  if (suspended) withdrawResource(deps.metrics, resourceId(req.parent));
  return { status: assembleStatus(req, deps, conditions, fields, { publish: !suspended }), children };
}

async function sync(req: HookRequest, deps: HookDeps): Promise<SyncResult> {
  const now = deps.now();
  const parent = req.parent;
  const ns = parent.metadata.namespace ?? "";
  const spec = gatewaySpec(parent);
  const names = gatewayNames(parent);
  const ctx = resolveWorkload(req, deps);
  if (!ctx.ok) return unresolved(req, deps, ctx);
  const tag = effectiveTag(parent, ctx.settings.tagPrefix);
  const zone = spec.zone ?? ctx.settings.baseDomain;
  if (!zone || !isDnsName(zone)) {
    const message = zone
      ? `spec.dns.zone: "${zone}" is not a DNS name`
      : `spec.dns.zone: required because Tailnet "${ctx.settings.name}" has no spec.dns.baseDomain`;
    return invalid(req, message, deps);
  }
  const render: RenderInput = {
    parent,
    spec,
    names,
    tag,
    zone,
    images: deps.config.images,
    noLogsNoSupport: deps.config.tailscale.noLogsNoSupport,
    tailnet: {
      name: ctx.settings.name,
      loginServer: ctx.settings.url || ctx.conn.url,
      policyMode: ctx.settings.policyMode,
      baseDomain: ctx.settings.baseDomain,
      splitDomains: splitDNSDomains(ctx.tailnet),
      incompatible: tailnetIncompatible(ctx.tailnet),
      ...(ctx.conn.ca ? { ca: ctx.conn.ca } : {}),
    },
  };

  const view = deps.views.view(ctx.conn);
  let headscale = await observeHeadscale(view);
  const secrets = objectsOf(req.children, "v1", "Secret");
  const deployment = findObject(req.children, "apps/v1", "Deployment", names.deployment, ns);
  const pods = podFacts(agentPods(req));
  const previousNode = previousStatusNode(previousStatus(parent));
  const accepted = acceptedNodeKey(parent);

  const [observedKey] = observedKeys(secrets);
  const before = headscale.nodes.ok
    ? analyzeNodes({
        nodes: headscale.nodes.value,
        tag,
        secretKeyId: observedKey?.keyId,
        previous: previousNode,
        acceptedNodeKey: accepted,
      })
    : undefined;
  const liveStamp = deployment ? stampOf(isRecord(deployment.spec) ? deployment.spec.template : undefined) : undefined;
  const keyPlan = planBootstrapKey({
    children: secrets,
    now,
    keys: headscale.keys,
    nodes: headscale.nodes,
    suspended: spec.suspend,
    identityChanged: !!before?.identityChange,
    rolloutPending:
      !!deployment && liveStamp !== renderedStamp(renderDeployment(render, observedKey?.secret.metadata.name)),
    pods,
  });
  const ensured = await ensureAuthKey(keyPlan.plan, view.client, parent, {
    tags: [tag],
    reusable: false,
    ephemeral: false,
    ttlSeconds: spec.bootstrapKeyTTLSeconds,
    now,
    labels: gatewayLabels(parent),
  });
  // An expired key that could not be replaced is still returned (never drop a child): name it.
  const kept = ensured.secret && !ensured.keyId ? observedKey : undefined;
  const key = kept ? { ...ensured, keyId: kept.keyId, expiresAt: kept.expiresAt } : ensured;
  if (key.keyId && key.keyId !== observedKey?.keyId) {
    const why = keyPlan.early ?? (keyPlan.plan.action === "create" ? keyPlan.plan.why : "");
    deps.log.info({ gateway: `${ns}/${parent.metadata.name}`, keyId: key.keyId, why }, "gateway bootstrap key created");
    headscale = { ...headscale, keys: await reobserveKeys(view) };
  }
  if (key.expiresAt) deps.metrics.authKeyExpiry.set(metricId(parent), Math.floor(key.expiresAt.getTime() / 1000));

  const decision = decideGateway({
    ...render,
    metricsPeers: metricsPeers(deps.config),
    now,
    observed: {
      deployment,
      service: findObject(req.children, "v1", "Service", names.service, ns),
      zone: findObject(req.children, "v1", "ConfigMap", names.zone, ns),
    },
    related: {
      coredns: findObject(req.related, "v1", "ConfigMap", "coredns", "kube-system"),
      egresses: objectsOf(req.related, API_VERSION, "TailnetEgress"),
      services: objectsOf(req.related, "v1", "Service").filter(
        (s) => s.metadata.labels?.[EGRESS_TARGET_LABEL] === "true",
      ),
      pods,
    },
    headscale,
    key,
    previousNode,
  });
  const outcomes = await actGateway(view, decision.actions);
  for (const d of outcomes.deleted) {
    if (!d.error)
      deps.log.info({ gateway: `${ns}/${parent.metadata.name}`, node: d.node }, "deleted stale gateway node");
  }
  const conditions = finishConditions(decision, outcomes);
  if (spec.suspend) withdrawResource(deps.metrics, resourceId(parent));
  const status = assembleStatus(req, deps, conditions, decision.fields, { publish: !spec.suspend });
  const waits = [decision.resyncAfterSeconds, keyPlan.recheckSeconds].filter((s): s is number => s !== undefined);
  const result: SyncResult = { status, children: decision.children };
  if (waits.length) result.resyncAfterSeconds = Math.max(MIN_RESYNC_SECONDS, Math.min(...waits));
  return result;
}

async function finalize(req: HookRequest, deps: HookDeps): Promise<FinalizeResult> {
  const parent = req.parent;
  withdrawResource(deps.metrics, resourceId(parent));
  deps.metrics.authKeyExpiry.remove(metricId(parent));
  const prev = previousStatus(parent);
  const prevConditions = (Array.isArray(prev.conditions) ? prev.conditions : []).filter(
    (c): c is ConditionInput => isRecord(c) && typeof c.type === "string",
  );
  const status = assembleStatus(
    req,
    deps,
    prevConditions.map((c) => cond(c.type, c.status, c.reason, c.message)),
    keptFields(req),
    { publish: false },
  );
  const ctx = resolveWorkload(req, deps);
  // Without a Tailnet or its credentials Headscale cannot be reached: holding the object forever
  // would not clean anything up, so it is released.
  if (!ctx.ok) return { status, children: [], finalized: true };
  const secretKeyIds = observedKeys(objectsOf(req.children, "v1", "Secret")).map((k) => k.keyId);
  const recorded = previousStatusNode(prev)?.preAuthKeyId;
  const result = await cleanupGateway(deps.views.view(ctx.conn), {
    tag: effectiveTag(parent, ctx.settings.tagPrefix),
    ourKeyIds: [...new Set([...secretKeyIds, ...(recorded ? [recorded] : [])])],
    secretKeyIds,
    now: deps.now(),
  });
  if (!result.ok) {
    deps.log.warn(
      { gateway: `${parent.metadata.namespace}/${parent.metadata.name}`, error: result.error },
      "gateway cleanup failed; retrying",
    );
    return { status, children: reuseAllChildren(req.children), finalized: false, resyncAfterSeconds: 30 };
  }
  return { status, children: [], finalized: true };
}

/** InvalidSpec keeps every child; a suspended gateway stays out of the resource metrics even then. */
function invalid(req: HookRequest, message: string, deps: HookDeps): SyncResult {
  const result = invalidSpecResult(req, deps, C.Ready, TYPES, message);
  if (gatewaySpec(req.parent).suspend) withdrawResource(deps.metrics, resourceId(req.parent));
  return result;
}

export const gatewayModule: KindModule = {
  hookKind: "gateway",
  customize: (r, d) => gatewayRelated(r.parent, d.config),
  sync,
  finalize,
  invalid,
};
