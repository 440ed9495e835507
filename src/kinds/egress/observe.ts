/**
 * What an egress sync reads (impure, never throws): the live policy, the node list and the pre-auth
 * keys through the shared Headscale view (cached, single-flight), and /status of every running agent pod, scraped
 * in parallel with the scraper's short timeout. Every failure is an observation.
 */
import type { HsNode, HsPolicy, HsPreAuthKey } from "../../headscale/types.js";
import type { HeadscaleView, Obs } from "../../headscale/view.js";
import { agentPods } from "../shared/workload.js";
import type { HookDeps, HookRequest } from "../types.js";
import { type AgentObservation, agentObservation, scrapeablePods } from "./targets.js";

export interface EgressReads {
  policy: Obs<HsPolicy | null>;
  nodes: Obs<HsNode[]>;
  /** Headscale's pre-auth keys (masked), to replace a revoked or single-use key early. */
  keys: Obs<HsPreAuthKey[]>;
  agents: AgentObservation;
}

export async function observeEgress(req: HookRequest, deps: HookDeps, view: HeadscaleView): Promise<EgressReads> {
  const pods = scrapeablePods(agentPods(req));
  const [policy, nodes, keys, scrapes] = await Promise.all([
    view.policy(),
    view.nodes(),
    view.preAuthKeys(),
    pods.length ? deps.scraper.scrape(pods) : Promise.resolve([]),
  ]);
  return { policy, nodes, keys, agents: agentObservation(pods, scrapes) };
}
