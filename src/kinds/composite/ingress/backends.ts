/**
 * BackendsReachable (pure), from the agent pods' /status scrapes: each expose's backend as the agent
 * last probed it. A pod that was not scraped tells nothing (ProbeFailed, Unknown), never "reachable".
 */

import { IngressCondition as C, IngressReason as R } from "../../../conditions/tables/ingress.js";
import type { ScrapeResult } from "../../../pipeline/types.js";
import { listNames } from "../../shared/node-names.js";
import { cond, type IngressCondition } from "./conditions.js";
import type { BackendRefusal } from "./permitted.js";
import { type IngressSpec, KUBE_API_BACKEND } from "./spec.js";

const MAX_PARTS = 5;
/** "a; b; c" or "a; …; e; and 3 more": a message stays short however many exposes fail. */
const joinParts = (parts: readonly string[]) =>
  parts.length <= MAX_PARTS
    ? parts.join("; ")
    : `${parts.slice(0, MAX_PARTS).join("; ")}; and ${parts.length - MAX_PARTS} more`;

export interface BackendsOutcome {
  condition: IngressCondition<"BackendsReachable">;
  /** Per expose name: reachable as reported, or undefined when no scraped pod reported it. */
  reachable: Map<string, boolean | undefined>;
}

/**
 * One replica: an expose is reachable when every scraped pod that reports it says so (during a rollout
 * an old pod may still report an old configuration). Several replicas: when at least one pod reaches it
 * (a pod that cannot is not Ready, see the agent's /readyz; the message names it). Unreported by all
 * scraped pods, it is unknown.
 */
export function backendsCondition(
  spec: IngressSpec,
  namespace: string,
  agent: string,
  scrapes: readonly ScrapeResult[],
  services: ReadonlySet<string>,
  refused: ReadonlyMap<string, BackendRefusal> = new Map(),
): BackendsOutcome {
  if (refused.size === 0) return probedCondition(spec, namespace, agent, scrapes, services);
  // A refused expose is not in the agent's config (so never reported): the others are judged as probed, and the
  // refusal, which only the ingress's author can lift, is what the condition says.
  const served = { ...spec, exposes: spec.exposes.filter((e) => !refused.has(e.name)) };
  const { reachable } = probedCondition(served, namespace, agent, scrapes, services);
  for (const e of spec.exposes) if (refused.has(e.name)) reachable.set(e.name, false);
  const all = [...refused.values()];
  const reason = all.some((r) => r.reason === "BackendNotPermitted") ? R.BackendNotPermitted : R.GatewayAPIMissing;
  const notServed = `; ${refused.size === 1 ? "that expose is" : `those ${refused.size} exposes are`} not served`;
  return {
    condition: cond(C.BackendsReachable, "False", reason, `${joinParts(all.map((r) => r.message))}${notServed}`),
    reachable: new Map(spec.exposes.map((e) => [e.name, reachable.get(e.name)])),
  };
}

function probedCondition(
  spec: IngressSpec,
  namespace: string,
  agent: string,
  scrapes: readonly ScrapeResult[],
  services: ReadonlySet<string>,
): BackendsOutcome {
  const reachable = new Map<string, boolean | undefined>(spec.exposes.map((e) => [e.name, undefined]));
  if (scrapes.length === 0) {
    return {
      condition: cond(
        C.BackendsReachable,
        "Unknown",
        R.ProbeFailed,
        `no pod of agent ${namespace}/${agent} (StatefulSets ${agent}-<i>) is running yet, so no backend was probed`,
      ),
      reachable,
    };
  }
  const ok = scrapes.filter((s) => s.ok);
  if (ok.length === 0) {
    const failed = scrapes.map((s) => `${s.pod}: ${s.ok ? "" : s.error}`);
    return {
      condition: cond(
        C.BackendsReachable,
        "Unknown",
        R.ProbeFailed,
        `the agent could not be scraped (${joinParts(failed)}); check the agent pod and its NetworkPolicy (TCP 9080 from the operator namespace)`,
      ),
      reachable,
    };
  }
  const errors = new Map<string, string>();
  /** Replicas only: the pods that do not reach an expose another pod reaches, with their error. */
  const partial: string[] = [];
  for (const e of spec.exposes) {
    const reports = ok.flatMap((s) =>
      s.status.exposes.filter((x) => x.name === e.name).map((r) => ({ pod: s.pod, r })),
    );
    if (reports.length === 0) continue;
    const down = reports.filter(({ r }) => !r.backendReachable);
    const up = spec.replicas > 1 ? down.length < reports.length : down.length === 0;
    reachable.set(e.name, up);
    if (!up) errors.set(e.name, down[0].r.error);
    else for (const d of down) partial.push(`${e.name} from ${d.pod}${d.r.error ? ` (${d.r.error})` : ""}`);
  }
  const unreachable = spec.exposes.filter((e) => reachable.get(e.name) === false);
  if (unreachable.length > 0) {
    const parts = unreachable.map((e) => {
      if (spec.mode === "kube-api") {
        const why = errors.get(e.name) ? `: ${errors.get(e.name)}` : "";
        return `expose ${e.name} (the API server ${KUBE_API_BACKEND.host}:${KUBE_API_BACKEND.port})${why}`;
      }
      const service = `Service ${e.backend.namespace ?? namespace}/${e.backend.service}`;
      // only this namespace's Services are observed: another namespace's is not judged missing
      const missing = e.backend.namespace || services.has(e.backend.service) ? "" : `, and ${service} does not exist`;
      const why = errors.get(e.name) ? `: ${errors.get(e.name)}` : "";
      return `expose ${e.name} (${service} port ${e.backend.port})${why}${missing}`;
    });
    return {
      condition: cond(
        C.BackendsReachable,
        "False",
        R.Unreachable,
        `the agent cannot reach the backend of ${joinParts(parts)}`,
      ),
      reachable,
    };
  }
  const unknown = spec.exposes.filter((e) => reachable.get(e.name) === undefined).map((e) => e.name);
  if (unknown.length > 0) {
    return {
      condition: cond(
        C.BackendsReachable,
        "Unknown",
        R.ProbeFailed,
        `the agent does not report expose ${listNames(unknown)} yet (its pod still runs an older configuration)`,
      ),
      reachable,
    };
  }
  const n = spec.exposes.length;
  const all =
    n === 1 ? "the agent reaches the backend of the expose" : `the agent reaches the backends of all ${n} exposes`;
  const notFrom = partial.length ? `; not ${joinParts(partial)}: those pods are not Ready` : "";
  return { condition: cond(C.BackendsReachable, "True", R.Reachable, `${all}${notFrom}`), reachable };
}
