/**
 * The Tailnet's conditions except PolicyApplied (pure, one function each, in the order of the
 * reasons page). A failed or missing observation is Unknown (CannotVerify / ProbeFailed), never a
 * guess; the message names the operation that failed or the field to fix.
 */
import type { ConditionInput } from "../../../conditions/condition.js";
import { conditionsOf } from "../../../conditions/table.js";
import { TailnetCondition as C, TailnetReason as R, TAILNET_REASONS } from "../../../conditions/tables/tailnet.js";
import { type Capabilities, detectCapabilities, type Outcome } from "../../../headscale/capabilities.js";
import type { HeadscaleError, Obs } from "../../../headscale/errors.js";
import type { HsUser } from "../../../headscale/types.js";
import type { TailnetRender } from "./compose.js";
import type { TailnetInputs } from "./inputs.js";
import { isDatabaseDown401, NO_CALL, oneLine, SUPPORTED } from "./messages.js";
import type { HeadscaleObservations } from "./observed.js";

/** The Tailnet's typed conditions: `cond` compiles only for a (type, status, reason) TAILNET_REASONS allows. */
export const tailnetConditions = conditionsOf(TAILNET_REASONS);
const { cond } = tailnetConditions;

export { isDatabaseDown401, NO_CALL, oneLine, SUPPORTED };

const GATEWAY_ERRORS = new Set([502, 503, 504]);

export function apiReachable(hs: HeadscaleObservations | null, caMissing?: string): ConditionInput {
  const type = C.ApiReachable;
  if (!hs) return cond(type, "Unknown", R.CannotVerify, NO_CALL);
  const { health } = hs;
  if (health.ok) {
    return health.value.databaseConnectivity
      ? cond(type, "True", R.Reachable, "GET /api/v1/health: Headscale and its database answer")
      : cond(type, "False", R.Unhealthy, "GET /api/v1/health: Headscale answers but reports no database connectivity");
  }
  const e = health.error;
  if (e.kind === "transport" || (e.kind === "http" && GATEWAY_ERRORS.has(e.status ?? 0))) {
    return cond(type, "False", R.Unreachable, caMissing ? `${e.message} (${caMissing})` : e.message);
  }
  if (e.kind === "unauthorized") {
    return cond(type, "True", R.Reachable, "Headscale answers; it refused the API key (see ApiKeyValid)");
  }
  if (isDatabaseDown401(e)) {
    return cond(
      type,
      "False",
      R.Unhealthy,
      'Headscale\'s database is down: GET /health answers 500 {"status":"fail"}, and Headscale answers 401 to every API call until the database is back',
    );
  }
  if (e.kind === "http" && e.status === 404) {
    return cond(
      type,
      "True",
      R.Reachable,
      `Headscale answers but has no GET /api/v1/health (older than 0.27); ${SUPPORTED}`,
    );
  }
  return cond(type, "False", R.Unhealthy, oneLine(e.message));
}

function errors(hs: HeadscaleObservations): HeadscaleError[] {
  return [hs.health, hs.nodes, hs.users, hs.policy, hs.apiKeys].flatMap((o) => (o.ok ? [] : [o.error]));
}

export function apiKeyValid(inputs: TailnetInputs, hs: HeadscaleObservations | null): ConditionInput {
  const type = C.ApiKeyValid;
  if (!inputs.connection.ok) return cond(type, "False", R.NoAPIKey, inputs.connection.message);
  if (!hs) return cond(type, "Unknown", R.Error, NO_CALL);
  const failed = errors(hs);
  // Checked first: while the database flaps, a 401 seen a moment earlier is no verdict on the key either.
  const dbDown = failed.find(isDatabaseDown401);
  if (dbDown) {
    return cond(
      type,
      "Unknown",
      R.Error,
      "cannot verify the API key: Headscale's database is down (GET /health fails), and Headscale answers 401 to every API call while it cannot look a key up; the key is not at fault, keep it (see ApiReachable)",
    );
  }
  const rejected = failed.find((e) => e.kind === "unauthorized");
  if (rejected) {
    return cond(
      type,
      "False",
      R.Rejected,
      `${rejected.message}: Headscale does not accept the API key in spec.headscale.apiKeySecretRef (unknown or expired); create one with "headscale apikeys create --expiration 90d" and update the Secret`,
    );
  }
  // Headscale authenticates before routing: a database error from /api/v1/health passed the key check.
  const healthPassedAuth =
    !hs.health.ok && hs.health.error.classification === "databaseDown" && hs.health.error.status !== 401;
  if (failed.length < 5 || healthPassedAuth) return cond(type, "True", R.Valid, "Headscale accepts the API key");
  return cond(type, "Unknown", R.Error, `cannot verify the API key: ${oneLine(failed[0].message)}`);
}

/** Capabilities from the cached observations plus the check of our own policy (no extra `{}` probe). */
export function capabilitiesOf(hs: HeadscaleObservations, check: Outcome<void> | undefined): Capabilities {
  return detectCapabilities({ nodes: hs.nodes, policy: hs.policy, policyCheck: check });
}

function nodeShapeProblem(caps: Capabilities): string | undefined {
  if (caps.nodeTags === false && caps.nodeApprovedRoutes === false) {
    return "Headscale nodes carry neither tags nor approvedRoutes (older than 0.26)";
  }
  if (caps.nodeTags === false) return "Headscale nodes carry no tags field (older than 0.28)";
  if (caps.nodeApprovedRoutes === false) return "Headscale nodes carry no approvedRoutes field (older than 0.26)";
  return undefined;
}

const failure = <T>(o: Obs<T>) => (o.ok ? undefined : o.error);

export function headscaleCompatible(
  hs: HeadscaleObservations | null,
  check: Outcome<void> | undefined,
): ConditionInput {
  const type = C.HeadscaleCompatible;
  if (!hs) return cond(type, "Unknown", R.CannotVerify, NO_CALL);
  const caps = capabilitiesOf(hs, check);
  const shape = nodeShapeProblem(caps);
  if (shape) return cond(type, "False", R.Incompatible, `${shape}; ${SUPPORTED}`);
  if (caps.policyCheck === false && check && !check.ok) {
    return cond(
      type,
      "False",
      R.Incompatible,
      `POST /api/v1/policy/check answered ${check.error.status} (Headscale older than 0.29); ${SUPPORTED}`,
    );
  }
  if (caps.policyMode === "file") {
    return cond(
      type,
      "False",
      R.Incompatible,
      "Headscale runs with policy.mode file; the operator needs policy.mode database to write the policy",
    );
  }
  const missing = failure(hs.nodes) ?? failure(hs.policy);
  if (missing) return cond(type, "Unknown", R.CannotVerify, `cannot verify: ${oneLine(missing.message)}`);
  if (caps.policyCheck !== true) {
    const why = check && !check.ok ? oneLine(check.error.message) : "not probed";
    return cond(type, "Unknown", R.ProbeFailed, `the policy/check probe failed: ${why}`);
  }
  const nodes = hs.nodes.ok ? hs.nodes.value.length : 0;
  return cond(
    type,
    "True",
    R.Compatible,
    `database policy mode, POST /api/v1/policy/check answered${nodes > 0 ? ", nodes carry tags and approvedRoutes" : "; no nodes yet to check their shape"}`,
  );
}

export function policyMode(hs: HeadscaleObservations | null): ConditionInput {
  const type = C.PolicyMode;
  if (!hs) return cond(type, "Unknown", R.CannotVerify, NO_CALL);
  const mode = detectCapabilities({ policy: hs.policy }).policyMode;
  if (mode === "database") return cond(type, "True", R.Database, "Headscale stores the policy in its database");
  if (mode === "file") {
    return cond(
      type,
      "False",
      R.File,
      "Headscale reads the policy from a file: the operator cannot write it; set policy.mode: database in Headscale's config",
    );
  }
  const e = failure(hs.policy);
  return cond(type, "Unknown", R.CannotVerify, `cannot read the live policy: ${e ? oneLine(e.message) : "unknown"}`);
}

/** Headscale has no DNS API: the message spells out the config lines (NOTES §5). */
export function splitDNS(inputs: TailnetInputs): ConditionInput {
  const type = C.SplitDNS;
  const domains = inputs.splitDNSDomains;
  if (domains.length === 0) {
    return cond(type, "True", R.NotConfigured, "spec.dns.splitDNS is not set: nothing to configure in Headscale");
  }
  const ips = inputs.dnsServiceIPs.length > 0 ? inputs.dnsServiceIPs : ["<DNS Service IP of a TailnetGateway>"];
  const lines = domains.map((d) => `"${d}": [${ips.map((ip) => `"${ip}"`).join(", ")}]`).join(", ");
  const gatewayNote =
    inputs.dnsServiceIPs.length > 0 ? "" : `; no TailnetGateway of Tailnet ${inputs.name} has a DNS Service IP yet`;
  return cond(
    type,
    "Unknown",
    R.CannotVerify,
    `manual configuration required: Headscale has no DNS API; add under dns.nameservers.split in Headscale's config and restart it: ${lines}${gatewayNote}`,
  );
}

/** Names held by two or more users, sorted, with their ids. */
export function duplicateUsers(users: readonly HsUser[]): { name: string; ids: string[] }[] {
  const byName = new Map<string, string[]>();
  for (const u of users) byName.set(u.name, [...(byName.get(u.name) ?? []), u.id]);
  return [...byName]
    .filter(([, ids]) => ids.length > 1)
    .map(([name, ids]) => ({ name, ids: ids.sort((a, b) => a.length - b.length || (a < b ? -1 : 1)) }))
    .sort((a, b) => (a.name < b.name ? -1 : 1));
}

export function usersUnique(hs: HeadscaleObservations | null): ConditionInput {
  const type = C.UsersUnique;
  if (!hs) return cond(type, "Unknown", R.CannotVerify, NO_CALL);
  if (!hs.users.ok)
    return cond(type, "Unknown", R.CannotVerify, `cannot list users: ${oneLine(hs.users.error.message)}`);
  const dups = duplicateUsers(hs.users.value);
  if (dups.length === 0) return cond(type, "True", R.Unique, "every Headscale user name is unique");
  const list = dups.map((d) => `${d.name} (ids ${d.ids.join(", ")})`).join(", ");
  return cond(
    type,
    "False",
    R.Duplicate,
    `Headscale user names held by more than one user: ${list}; every policy write is refused until one of each is removed`,
  );
}

/** `fresh`: no base policy is configured, so an empty render means nothing was asked for yet. */
export function policyRendered(render: TailnetRender, check: Outcome<void> | undefined, fresh = false): ConditionInput {
  const type = C.PolicyRendered;
  if (!render.ok) {
    if (render.reason === "CannotVerify") return cond(type, "Unknown", R.CannotVerify, render.message);
    if (render.reason === "PolicyEmpty" && fresh) {
      return cond(
        type,
        "False",
        R.PolicyEmpty,
        "nothing to render yet: no base policy (spec.policy.baseConfigMapRef) and no TailnetEgress, TailnetIngress, TailnetSite or TailnetGateway of this Tailnet generates a rule (an empty policy would lock everyone out, so none is written)",
      );
    }
    return cond(type, "False", R[render.reason], render.message);
  }
  const { hash, generated, invalid } = render.candidate;
  if (check && !check.ok && check.error.classification === "policyInvalid") {
    return cond(
      type,
      "False",
      R.BaseInvalid,
      `Headscale rejects the rendered policy ${hash} (POST /api/v1/policy/check): ${oneLine(check.error.detail)}`,
    );
  }
  const left =
    invalid.length > 0
      ? `; left out (Headscale would reject them): ${invalid
          .slice(0, 5)
          .map((i) => `${i.namespace}/${i.name} ${i.field} ${JSON.stringify(i.value)}`)
          .join(", ")}${invalid.length > 5 ? `, and ${invalid.length - 5} more` : ""}`
      : "";
  return cond(
    type,
    "True",
    R.Rendered,
    `rendered ${hash}: generated ${generated.tags} tags, ${generated.grants} grants, ${generated.routes} routes${left}`,
  );
}
