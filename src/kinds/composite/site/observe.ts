/**
 * Observe for a TailnetSite: the related Tailnet and sites, and — when the Tailnet and its
 * credentials exist — the node list through the shared, cached Headscale view. A failed read is an
 * observation (decide reports NotObserved), never thrown.
 */
import { API_VERSION } from "../../../api/schemas.js";
import type { CommonReason } from "../../../conditions/tables/shared.js";
import type { HsNode } from "../../../headscale/types.js";
import type { HeadscaleView } from "../../../headscale/view.js";
import type { K8sObject } from "../../../k8s/objects.js";
import { objectsOf } from "../../../k8s/objects.js";
import type { HookDeps, HookRequest } from "../../../pipeline/types.js";
import { resolveWorkload, type TailnetSettings } from "../../shared/workload.js";

export type NodesObservation = { ok: true; value: readonly HsNode[] } | { ok: false; message: string };

/** resolveWorkload's answer, without the connection (plan and decide need no credentials). */
export type SiteTailnet =
  | { ok: true; tailnet: K8sObject; settings: TailnetSettings }
  | {
      ok: false;
      reason: typeof CommonReason.NoTailnet | typeof CommonReason.NoAPIKey | "NamespaceNotAllowed";
      message: string;
      settings?: TailnetSettings;
    };

export interface SiteObservation {
  /** Every TailnetSite (related), the parent included or not. */
  sites: readonly K8sObject[];
  tailnet: SiteTailnet;
  /** Undefined when Headscale was not queried (no Tailnet or no API key). */
  nodes?: NodesObservation;
  /** The view to write through; undefined when Headscale was not queried. */
  view?: HeadscaleView;
}

export async function observeSite(req: HookRequest, deps: HookDeps): Promise<SiteObservation> {
  const workload = resolveWorkload(req, deps);
  const sites = objectsOf(req.related, API_VERSION, "TailnetSite");
  if (!workload.ok) {
    // a site has no spec.tag, so the only tenancy refusal it meets is its namespace's
    const reason = workload.reason === "TagNotGranted" ? "NamespaceNotAllowed" : workload.reason;
    return { sites, tailnet: { ...workload, reason } };
  }
  const view = deps.views.view(workload.conn);
  const obs = await view.nodes();
  const nodes: NodesObservation = obs.ok ? { ok: true, value: obs.value } : { ok: false, message: obs.error.message };
  // The connection (and its API key) stays here: plan and decide get the Tailnet and its settings only.
  const tailnet = { ok: true as const, tailnet: workload.tailnet, settings: workload.settings };
  return { sites, tailnet, nodes, view };
}
