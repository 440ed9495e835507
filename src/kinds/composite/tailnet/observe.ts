/**
 * What a Tailnet sync observes (I/O only; every failure is an observation, nothing throws): what its spec
 * names in `related` (inputs.ts), Headscale through the shared view cache (health, nodes, users, the live
 * policy, API keys), the render of the policy (pure, but the check needs it), the non-mutating
 * `POST /api/v1/policy/check` of that render, and a failed write of it still backing off.
 *
 * The check is memoised per connection and policy hash in the connection's soft state (soft-state.ts `checkVerdicts`):
 * a verdict (accepted, rejected, or the endpoint missing) for the same text is reused for CHECK_MEMO_MS, so a
 * steady Tailnet does not POST a check on every resync. Transport and server failures are never memoised.
 */
import { type Outcome, PROBE_POLICY } from "../../../headscale/capabilities.js";
import type { HeadscaleError } from "../../../headscale/errors.js";
import type { HsPolicy } from "../../../headscale/types.js";
import type { HeadscaleView } from "../../../headscale/view.js";
import { credentialsSecretName } from "../../../k8s/labels.js";
import { findObject } from "../../../k8s/objects.js";
import type { HookDeps, HookRequest } from "../../../pipeline/types.js";
import { prettyPolicyText } from "../../../policy/merge.js";
import { secretValue } from "../../shared/secrets.js";
import { CHECK_MEMO_MS, checkPolicy } from "./check.js";
import { apiKeySecretName } from "./children.js";
import { composeTailnetPolicy, dnsRecords, type TailnetRender } from "./compose.js";
import type { MemoSlot } from "./compose-memo.js";
import { type ConnectionInput, connectionFor, inputsOf, ownedInputs, type TailnetInputs } from "./inputs.js";
import { isolateRefused } from "./isolate.js";
import { isDatabaseDown401, NO_CALL, oneLine } from "./messages.js";
import type { HeadscaleObservations } from "./observed.js";
import { type ApiKeyUse, type RenewedKey, readRenewedKey } from "./rotation.js";
import { liveShared } from "./shared.js";
import type { SharedContext } from "./shared-render.js";
import { softStateOf } from "./soft-state.js";
import type { TailnetSpec } from "./spec.js";

/** A failed write of the same policy that is still backing off (soft-state.ts writeBackoff): repeated until retryAt. */
export interface PendingFailure {
  error: HeadscaleError;
  /** The policy read back right after the failed PUT. */
  readback?: Outcome<HsPolicy | null>;
  retryAt: Date;
}

export interface TailnetObservation {
  /** What the spec names in `related`; `connection` carries the API key this sync uses (see `apiKey`). */
  inputs: TailnetInputs;
  /** Which key that is: the spec's or the one the operator renewed, and whether the other was refused. */
  apiKey: ApiKeyUse;
  /** null: no API key, so no Headscale call was made. */
  hs: HeadscaleObservations | null;
  render: TailnetRender;
  /** POST /api/v1/policy/check of the candidate (of `{}` without one); undefined when not probed. */
  check?: Outcome<void>;
  pendingFailure?: PendingFailure;
}

export async function observeHeadscale(view: HeadscaleView): Promise<HeadscaleObservations> {
  const [health, nodes, users, policy, apiKeys] = await Promise.all([
    view.apiHealth(),
    view.nodes(),
    view.users(),
    view.policy(),
    view.apiKeys(),
  ]);
  return { health, nodes, users, policy, apiKeys };
}

/** The server's compose memo under the Tailnet's uid (none without a uid: then the render is computed fresh). */
export function memoSlot(req: HookRequest, deps: HookDeps): MemoSlot | undefined {
  const uid = req.parent.metadata.uid;
  return uid ? { memo: deps.composeMemo, tailnet: uid } : undefined;
}

/** The shared view of the Tailnet's connection; null without an API key (then no Headscale call is made). */
export function tailnetView(inputs: TailnetInputs, deps: HookDeps): HeadscaleView | null {
  return inputs.connection.ok ? deps.views.view(inputs.connection.conn) : null;
}

/** Memo key of the `{}` probe, used for compatibility when no policy rendered. */
const EMPTY_PROBE_KEY = "probe:{}";

/** Health failures after which a policy/check probe cannot tell anything new (and would only wait). */
function checkPointless(hs: HeadscaleObservations): Outcome<void> | undefined {
  const h = hs.health;
  return !h.ok && (h.error.kind === "transport" || h.error.kind === "unauthorized" || isDatabaseDown401(h.error))
    ? h
    : undefined;
}

/** Headscale refused the key itself (a plain 401 while /health passes), not a database outage. */
const refusedKey = (hs: HeadscaleObservations) => !hs.health.ok && hs.health.error.kind === "unauthorized";

type Candidate = { source: ApiKeyUse["source"]; connection: Extract<ConnectionInput, { ok: true }> };

/**
 * Observes Headscale with the preferred key — the renewed one while rotation is on, else the spec's — and,
 * when Headscale refuses it, with the other one; the first that is not refused is the key of this sync.
 */
async function observeWithKey(
  req: HookRequest,
  spec: TailnetSpec,
  deps: HookDeps,
): Promise<{ inputs: TailnetInputs; hs: HeadscaleObservations | null; apiKey: ApiKeyUse; view: HeadscaleView | null }> {
  const base = inputsOf(spec, req.related);
  const ns = deps.config.operatorNamespace;
  const renewed: RenewedKey | undefined = readRenewedKey(
    findObject(req.children, "v1", "Secret", apiKeySecretName(spec.name), ns),
  );
  const credentials = findObject(req.children, "v1", "Secret", credentialsSecretName(spec.name), ns);
  const renewedConn = renewed ? connectionFor(spec, req.related, renewed.apiKey) : undefined;
  const ordered: (Candidate | undefined)[] = [
    renewedConn?.ok ? { source: "renewed", connection: renewedConn } : undefined,
    base.connection.ok ? { source: "spec", connection: base.connection } : undefined,
  ];
  if (!spec.apiKeyRotation) ordered.reverse();
  const candidates = ordered.filter((c): c is Candidate => !!c);
  const unique = candidates.filter(
    (c, i) => candidates.findIndex((d) => d.connection.conn.apiKey === c.connection.conn.apiKey) === i,
  );
  const use = (c: Candidate | undefined, refused?: ApiKeyUse["refused"]): ApiKeyUse => ({
    source: c?.source ?? "spec",
    ...(renewed ? { renewed } : {}),
    ...(refused ? { refused } : {}),
    published: !!c && secretValue(credentials, "apiKey") === c.connection.conn.apiKey,
  });
  const [first, second] = unique;
  if (!first) return { inputs: base, hs: null, apiKey: use(undefined), view: null };
  const view = deps.views.view(first.connection.conn);
  const hs = await observeHeadscale(view);
  if (second && refusedKey(hs)) {
    const otherView = deps.views.view(second.connection.conn);
    const other = await observeHeadscale(otherView);
    // Only a key Headscale demonstrably accepts replaces the preferred one (a failed read proves nothing).
    if (other.health.ok) {
      const message = hs.health.ok ? "" : hs.health.error.message;
      return {
        inputs: { ...base, connection: second.connection },
        hs: other,
        apiKey: use(second, { source: first.source, message }),
        view: otherView,
      };
    }
  }
  return { inputs: { ...base, connection: first.connection }, hs, apiKey: use(first), view };
}

export async function observeTailnet(req: HookRequest, spec: TailnetSpec, deps: HookDeps): Promise<TailnetObservation> {
  const now = deps.now();
  const observed = await observeWithKey(req, spec, deps);
  const { hs, apiKey, view } = observed;
  // objects refused as TagInUse render nothing (without the node list, render says CannotVerify)
  const inputs = hs?.nodes.ok ? ownedInputs(observed.inputs, hs.nodes.value) : observed.inputs;
  const nodesUnavailable = !hs ? NO_CALL : hs.nodes.ok ? "" : oneLine(hs.nodes.error.message);
  const render = composeTailnetPolicy(
    inputs,
    hs?.nodes.ok ? hs.nodes.value : null,
    nodesUnavailable,
    memoSlot(req, deps),
    sharedContext(req, inputs, hs, deps, now),
  );
  if (!view || !hs) return { inputs, apiKey, hs, render };
  const check =
    checkPointless(hs) ??
    (render.ok
      ? await checkPolicy(view, render.candidate.hash, () => prettyPolicyText(render.candidate.policy), now)
      : await checkPolicy(view, EMPTY_PROBE_KEY, () => PROBE_POLICY, now));
  // Headscale refuses the render: leave out the objects it refuses it over, if that can be pinned (isolate.ts)
  const isolated =
    render.ok && !check.ok && check.error.classification === "policyInvalid"
      ? await isolateRefused(view, render.candidate, check, now)
      : undefined;
  const final: TailnetRender = isolated ? { ok: true, candidate: isolated.candidate } : render;
  const verdict = isolated ? isolated.check : check;
  const pendingFailure = final.ok ? backingOff(view, inputs.name, final.candidate.hash) : undefined;
  return { inputs, apiKey, hs, render: final, check: verdict, ...(pendingFailure ? { pendingFailure } : {}) };
}

/**
 * This cluster among the sections of the live policy (policy/sections.ts): its name (operator config
 * clusterName), the Tailnet's name and uid, the names it publishes (unknown without the node list while it has
 * ingresses: the live section's names stand) and the live policy's lines.
 */
function sharedContext(
  req: HookRequest,
  inputs: TailnetInputs,
  hs: HeadscaleObservations | null,
  deps: HookDeps,
  now: Date,
): SharedContext {
  const nodes = hs?.nodes.ok ? hs.nodes.value : inputs.ingresses.length === 0 ? [] : null;
  const names = nodes ? [...new Set(dnsRecords(inputs, nodes, memoSlot(req, deps)).map((r) => r.name))] : undefined;
  return {
    self: { cluster: deps.config.clusterName, tailnet: inputs.name, uid: req.parent.metadata.uid ?? "" },
    names,
    live: hs?.policy.ok ? liveShared(hs.policy.value) : undefined,
    now,
    ...(inputs.replaceLivePolicy ? { takeOver: true } : {}),
  };
}

/** A failed write of this policy whose backoff is remembered (decide repeats its condition until retryAt). */
export function backingOff(view: HeadscaleView, tailnet: string, hash: string): PendingFailure | undefined {
  const b = softStateOf(view).writeBackoff.get(tailnet);
  if (!b || b.hash !== hash) return undefined;
  return { error: b.error, ...(b.readback ? { readback: b.readback } : {}), retryAt: new Date(b.retryAt) };
}

export { CHECK_MEMO_MS, checkPolicy };
