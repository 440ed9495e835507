/**
 * A Tailnet "world" for decide tests: spec, related objects, Headscale observations and the
 * policy/check outcome, turned into a DecideInput exactly as the sync hook does it (observe →
 * render → check → decide → fold the write).
 */
import type { Outcome } from "../../../src/headscale/capabilities.js";
import type { K8sObject } from "../../../src/k8s/objects.js";
import {
  type DecideInput,
  decide,
  foldWrite,
  type PendingFailure,
  type TailnetDecision,
  type WriteOutcome,
} from "../../../src/kinds/tailnet/decide.js";
import { readInputs } from "../../../src/kinds/tailnet/inputs.js";
import type { HeadscaleObservations } from "../../../src/kinds/tailnet/observe.js";
import { renderTailnetPolicy } from "../../../src/kinds/tailnet/render.js";
import { toMaps } from "../../fixtures/hooks.js";
import { checkOk, healthyHs, healthyRelated, NOW, ok, tailnet, tailnetSpec } from "./fixtures.js";

export interface World {
  spec?: Record<string, unknown>;
  related?: K8sObject[];
  /** Headscale observations when a connection exists (default healthy). */
  hs?: HeadscaleObservations;
  /** Outcome of policy/check (default accepted). */
  check?: Outcome<void>;
  /** The live policy is exactly the render. */
  liveIsRendered?: boolean;
  status?: Record<string, unknown>;
  children?: K8sObject[];
  pendingFailure?: PendingFailure;
  /** Outcome of the write when one is due (default success). */
  write?: WriteOutcome;
  now?: Date;
}

export interface Played {
  input: DecideInput;
  /** Before the write was folded in. */
  planned: TailnetDecision;
  decision: TailnetDecision;
}

export function play(w: World = {}): Played {
  const parent = tailnet(w.spec ?? tailnetSpec(), w.status);
  const inputs = readInputs(parent, toMaps(w.related ?? healthyRelated()));
  let hs = inputs.connection.ok ? (w.hs ?? healthyHs()) : null;
  const render = renderTailnetPolicy(
    inputs,
    hs?.nodes.ok ? hs.nodes.value : null,
    hs && !hs.nodes.ok ? hs.nodes.error.message : "no API key",
  );
  if (hs && w.liveIsRendered && render.ok) {
    hs = { ...hs, policy: ok({ policy: render.candidate.canonical, updatedAt: "2026-11-28T00:00:00Z" }) };
  }
  // As the sync hook: no probe is made when Headscale cannot be reached or refuses the key.
  const pointless = hs && !hs.health.ok && ["transport", "unauthorized"].includes(hs.health.error.kind);
  const check = hs ? (pointless && hs && !hs.health.ok ? hs.health : (w.check ?? checkOk)) : undefined;
  const input: DecideInput = {
    parent,
    children: toMaps(w.children ?? []),
    inputs,
    render,
    observed: { hs, check, pendingFailure: w.pendingFailure },
    operatorNamespace: "tailnet-system",
    now: w.now ?? NOW,
  };
  const planned = decide(input);
  const decision = planned.write ? foldWrite(planned, w.write ?? { ok: true }, input.now) : planned;
  return { input, planned, decision };
}

export const reasons = (d: TailnetDecision): Record<string, string> =>
  Object.fromEntries(d.conditions.map((c) => [c.type, c.reason]));

export const conditionOf = (d: TailnetDecision, type: string) => {
  const c = d.conditions.find((x) => x.type === type);
  if (!c) throw new Error(`no condition ${type}`);
  return c;
};
