/**
 * Observations of a gateway sync: the Headscale node and pre-auth key lists (through the shared,
 * cached view; a failure is an observation, never thrown) and the state of the gateway pods as the
 * related Pods show it.
 */

import type { HsNode, HsPreAuthKey } from "../../headscale/types.js";
import type { HeadscaleView } from "../../headscale/view.js";
import type { K8sObject } from "../../k8s/objects.js";

/** An observation as decide() consumes it: a value, or the error message that prevented it. */
export type Seen<T> = { ok: true; value: T } | { ok: false; error: string };

export interface HeadscaleFacts {
  nodes: Seen<HsNode[]>;
  keys: Seen<HsPreAuthKey[]>;
}

export async function observeHeadscale(view: HeadscaleView): Promise<HeadscaleFacts> {
  const [nodes, keys] = await Promise.all([view.nodes(), view.preAuthKeys()]);
  return {
    nodes: nodes.ok ? { ok: true, value: nodes.value } : { ok: false, error: nodes.error.message },
    keys: keys.ok ? { ok: true, value: keys.value } : { ok: false, error: keys.error.message },
  };
}

/** Re-reads the pre-auth keys after the operator created one, so check 1 sees Headscale's record of it. */
export async function reobserveKeys(view: HeadscaleView): Promise<HeadscaleFacts["keys"]> {
  view.invalidate("preAuthKeys");
  const keys = await view.preAuthKeys();
  return keys.ok ? { ok: true, value: keys.value } : { ok: false, error: keys.error.message };
}

export interface PodFact {
  name: string;
  deleting: boolean;
  startTime?: Date;
  /** Container name → ready, from status.containerStatuses; absent when the Pod reports none. */
  ready: Record<string, boolean>;
}

type Rec = Record<string, unknown>;
const rec = (v: unknown): Rec => (v && typeof v === "object" && !Array.isArray(v) ? (v as Rec) : {});

export function podFacts(pods: readonly K8sObject[]): PodFact[] {
  return pods.map((p) => {
    const status = rec(p.status);
    const ready: Record<string, boolean> = {};
    for (const c of Array.isArray(status.containerStatuses) ? status.containerStatuses.map(rec) : []) {
      if (typeof c.name === "string") ready[c.name] = c.ready === true;
    }
    const start = typeof status.startTime === "string" ? new Date(status.startTime) : undefined;
    return {
      name: p.metadata.name,
      deleting: !!p.metadata.deletionTimestamp,
      startTime: start && !Number.isNaN(start.getTime()) ? start : undefined,
      ready,
    };
  });
}
