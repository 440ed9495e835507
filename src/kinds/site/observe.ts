/**
 * Observe for a TailnetSite: the related Tailnet and sites, and — when the Tailnet and its
 * credentials exist — the node list through the shared, cached Headscale view. A failed read is an
 * observation (decide reports NotObserved), never thrown.
 */
import { API_VERSION } from "../../api/schemas.js";
import type { HeadscaleView } from "../../headscale/view.js";
import { objectsOf } from "../../k8s/objects.js";
import { resolveWorkload } from "../shared/workload.js";
import type { HookDeps, HookRequest } from "../types.js";
import type { NodesObservation, SiteInput } from "./decide.js";

export interface SiteObservation {
  input: SiteInput;
  /** The view to write through; undefined when Headscale was not queried. */
  view?: HeadscaleView;
}

export async function observeSite(req: HookRequest, deps: HookDeps): Promise<SiteObservation> {
  const workload = resolveWorkload(req, deps);
  const sites = objectsOf(req.related, API_VERSION, "TailnetSite");
  if (!workload.ok) return { input: { parent: req.parent, sites, tailnet: workload } };
  const view = deps.views.view(workload.conn);
  const obs = await view.nodes();
  const nodes: NodesObservation = obs.ok ? { ok: true, value: obs.value } : { ok: false, message: obs.error.message };
  // The connection (and its API key) stays here: decide gets the Tailnet and its settings only.
  const tailnet = { ok: true as const, tailnet: workload.tailnet, settings: workload.settings };
  return { input: { parent: req.parent, sites, tailnet, nodes }, view };
}
