import type { Outcome } from "../../../../src/headscale/capabilities.js";
import type { Obs } from "../../../../src/headscale/errors.js";
import type { HsPolicy } from "../../../../src/headscale/types.js";
import type { K8sObject } from "../../../../src/k8s/objects.js";
import type { TailnetOutcome, WriteOutcome } from "../../../../src/kinds/composite/tailnet/act.js";
import { composeTailnetPolicy } from "../../../../src/kinds/composite/tailnet/compose.js";
import {
  decideTailnet,
  type TailnetDecideInput,
  type TailnetDecision,
} from "../../../../src/kinds/composite/tailnet/decide.js";
import { connectionFor, readInputs } from "../../../../src/kinds/composite/tailnet/inputs.js";
import type { PendingFailure, TailnetObservation } from "../../../../src/kinds/composite/tailnet/observe.js";
import type { HeadscaleObservations } from "../../../../src/kinds/composite/tailnet/observed.js";
import { planTailnet, type TailnetPlanInput } from "../../../../src/kinds/composite/tailnet/plan.js";
import type { ApiKeyUse, RotationOutcome } from "../../../../src/kinds/composite/tailnet/rotation.js";
import { candidateText, liveShared } from "../../../../src/kinds/composite/tailnet/shared.js";
import { readTailnetSpec } from "../../../../src/kinds/composite/tailnet/spec.js";
import { liveHash } from "../../../../src/kinds/composite/tailnet/write.js";
import { toMaps } from "../../../fixtures/hooks.js";
import { checkOk, healthyHs, healthyRelated, NOW, ok, tailnet, tailnetSpec } from "./fixtures.js";

export interface Given {
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
  /** Which API key the sync uses (default: the spec's, already in the credentials Secret). */
  apiKey?: ApiKeyUse;
  /** What act reports for the planned API key renewal step (default: nothing was planned or done). */
  rotation?: RotationOutcome;
  /** What the PUT answers when the plan writes (default success). */
  write?: WriteOutcome;
  /** What the re-read just before the PUT finds (default: the observed live policy). */
  reread?: Obs<HsPolicy | null>;
  now?: Date;
  /** Render among the live policy's cluster sections as this cluster (policy/sections.ts); absent: alone. */
  shared?: { cluster?: string; uid?: string; names?: string[] };
  /** Every write attempt was undone by another writer before its read-back (act.ts WriteContended). */
  contended?: number;
}

export function observation(g: Given = {}): TailnetObservation {
  const parent = tailnet(g.spec ?? tailnetSpec(), g.status);
  const related = toMaps(g.related ?? healthyRelated());
  const specInputs = readInputs(parent, related);
  // As observe: the renewed key, when it is the one in use, is the connection's key.
  const renewedKey = g.apiKey?.source === "renewed" ? g.apiKey.renewed?.apiKey : undefined;
  const inputs = renewedKey
    ? { ...specInputs, connection: connectionFor(readTailnetSpec(parent), related, renewedKey) }
    : specInputs;
  let hs = inputs.connection.ok ? (g.hs ?? healthyHs()) : null;
  const shared = g.shared
    ? {
        self: { cluster: g.shared.cluster ?? "a", tailnet: inputs.name, uid: g.shared.uid ?? "uid-a" },
        names: g.shared.names ?? [],
        live: hs?.policy.ok ? liveShared(hs.policy.value) : undefined,
        now: g.now ?? NOW,
      }
    : undefined;
  const render = composeTailnetPolicy(
    inputs,
    hs?.nodes.ok ? hs.nodes.value : null,
    hs && !hs.nodes.ok ? hs.nodes.error.message : "no API key",
    undefined,
    shared,
  );
  if (hs && g.liveIsRendered && render.ok) {
    const c = render.candidate;
    const text = c.shared ? candidateText(c.hash, c.policy, c.shared.meta) : c.canonical;
    hs = { ...hs, policy: ok({ policy: text, updatedAt: "2026-11-28T00:00:00Z" }) };
  }
  const apiKey = g.apiKey ?? { source: "spec" as const, published: true };
  if (!hs) return { inputs, apiKey, hs, render };
  // As observe: no probe is made when Headscale cannot be reached or refuses the key.
  const pointless = !hs.health.ok && ["transport", "unauthorized"].includes(hs.health.error.kind);
  const check = pointless && !hs.health.ok ? hs.health : (g.check ?? checkOk);
  return { inputs, apiKey, hs, render, check, ...(g.pendingFailure ? { pendingFailure: g.pendingFailure } : {}) };
}

export function planInput(g: Given = {}): TailnetPlanInput {
  return {
    parent: tailnet(g.spec ?? tailnetSpec(), g.status),
    observed: observation(g),
    operatorNamespace: "tailnet-system",
    now: g.now ?? NOW,
  };
}

/** What act reports for `plan` in this world: nothing without a write; else the re-plan and the PUT. */
function outcomeOf(g: Given, base: TailnetPlanInput, planned: ReturnType<typeof planTailnet>): TailnetOutcome {
  const hs = base.observed.hs;
  if (!planned.write || !hs) return {};
  const policy = g.reread ?? hs.policy;
  const fresh = { ...base, observed: { ...base.observed, hs: { ...hs, policy } } };
  const plan = planTailnet(fresh);
  const replan = { policy, plan };
  if (!plan.write) return { replan };
  const from = liveHash(hs) ?? null;
  const to = policy.ok ? (liveHash(fresh.observed.hs) ?? null) : from;
  if (to !== from) return { replan, superseded: { from, to } };
  if (g.contended) return { replan, contended: { attempts: g.contended, write: plan.write } };
  const result = g.write ?? { ok: true };
  return { replan, written: { write: plan.write, result, ...(result.ok ? {} : { retryAfterSeconds: 30 }) } };
}

/** The real decide input of this world. */
export function input(g: Given = {}): TailnetDecideInput {
  const base = planInput(g);
  const plan = planTailnet(base);
  const outcome = outcomeOf(g, base, plan);
  return {
    ...base,
    children: toMaps(g.children ?? []),
    plan,
    outcome: g.rotation ? { ...outcome, rotation: g.rotation } : outcome,
  };
}

export const decided = (g: Given = {}): TailnetDecision => decideTailnet(input(g));

export const reasons = (d: TailnetDecision): Record<string, string> =>
  Object.fromEntries(d.conditions.map((c) => [c.type, c.reason]));

export const conditionOf = (d: TailnetDecision, type: string) => {
  const c = d.conditions.find((x) => x.type === type);
  if (!c) throw new Error(`no condition ${type}`);
  return c;
};
