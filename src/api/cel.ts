/**
 * CRD validation rules (`x-kubernetes-validations`, CEL) for what the API server can check by itself, each
 * with its twin in TypeScript: the kube-apiserver refuses a bad value at `kubectl apply`, and the operator's
 * hook-time validation (ajv, src/api/validate.ts) refuses the same values as InvalidSpec — for a CRD applied by
 * a server older than the rules, or objects stored before them. A twin may word its refusal more precisely
 * than the rule can (the expose's index, the network address meant), as the operator did before the rules.
 * test/real/kube/validation.test.ts checks both verdicts agree on the real kube-apiserver.
 *
 * The CIDR functions are Kubernetes' CEL library (k8s.io/apiserver pkg/cel/library/cidr.go, in every
 * kube-apiserver since 1.31; the pinned one is src/real-versions.json): `isCIDR` is Go's
 * netip.ParsePrefix without IPv4-mapped IPv6, `masked()` clears the host bits. Every string or list a rule
 * reads has a maxLength or maxItems, so the API server's cost estimate stays within its per-rule limit.
 */
import { parseCidr, parsePrefix, prefixHasHostBits } from "../net/cidr.js";

export interface CelRule {
  rule: string;
  message: string;
}

/** A twin's refusal: the field below the rule's node (e.g. `exposes[1].backend`) and what is wrong there. */
export interface Problem {
  field?: string;
  message?: string;
}
/** undefined: the value passes; a Problem ({} for the rule's own message at its node): it does not. */
type Check = (self: unknown) => Problem | undefined;

/** Each rule's TypeScript twin, by rule text: the ajv keyword looks them up (src/api/ajv.ts). */
const TWINS = new Map<string, Check>();

function rule(text: string, message: string, check: Check): CelRule {
  if (TWINS.has(text)) throw new Error(`CEL rule declared twice: ${text}`);
  TWINS.set(text, check);
  return { rule: text, message };
}

/** The twin of a rule; a rule without one is a programming error (thrown when a schema compiles). */
export function twinOf(text: string): Check {
  const check = TWINS.get(text);
  if (!check) throw new Error(`CEL rule without a TypeScript twin: ${text}`);
  return check;
}

const text = (v: unknown) => (typeof v === "string" ? v : "");
const record = (v: unknown) => (v && typeof v === "object" && !Array.isArray(v) ? (v as Record<string, unknown>) : {});
const list = (v: unknown) => (Array.isArray(v) ? v.map(record) : []);
const refuse = (ok: boolean, problem: Problem = {}): Problem | undefined => (ok ? undefined : problem);
/** parseCidr's words for a value CEL refuses: the network address meant, as Tailscale words it. */
const cidrWords = (self: unknown): Problem => {
  const r = parseCidr(text(self));
  return r.ok ? {} : { message: r.message };
};

/** CIDR syntax as the API server's CEL reads it (on a string: the rule's `self`). */
export const IS_CIDR = rule(
  "isCIDR(self)",
  "must be an IPv4 or IPv6 CIDR prefix, e.g. 192.168.10.0/24 or fd7a:115c::/48",
  (self) => {
    const p = parsePrefix(text(self));
    return refuse(p.ok && !p.mapped, p.ok ? {} : { message: p.message });
  },
);

/** No host bits: 192.168.10.1/24 is refused, 192.168.10.0/24 is what was meant. */
export const NO_HOST_BITS = rule(
  "!isCIDR(self) || cidr(self) == cidr(self).masked()",
  "must not have host bits set: write the network address (192.168.10.0/24, not 192.168.10.1/24)",
  (self) => {
    const p = parsePrefix(text(self));
    return refuse(!p.ok || p.mapped || !prefixHasHostBits(p), cidrWords(self));
  },
);

/** TailnetGateway routes: a default route is the exit node's business. */
export const NOT_DEFAULT_ROUTE = rule(
  "!isCIDR(self) || cidr(self).prefixLength() != 0",
  "a default route (0.0.0.0/0, ::/0) is not a subnet route: use spec.exitNode",
  (self) => {
    const p = parsePrefix(text(self));
    return refuse(!p.ok || p.mapped || p.bits !== 0);
  },
);

/** The rules of every CIDR list item, in the order the API server reports them. */
export const CIDR_RULES = [IS_CIDR, NO_HOST_BITS] as const;

/** TailnetAuthKey: the machines join either tagged or as a user. */
export const TAGS_XOR_USER = rule(
  "has(self.tags) != has(self.user)",
  "exactly one of spec.tags and spec.user",
  (self) => refuse("tags" in record(self) !== "user" in record(self)),
);

/** TailnetIngress: the mode, with the schema's default. */
const modeOf = (self: unknown) => text(record(self).mode) || "tcp";
const MODE = "(has(self.mode) ? self.mode : 'tcp')";
/** The first expose (with its index) that fails `ok`, as the twin's Problem. */
function firstExpose(
  self: unknown,
  ok: (e: Record<string, unknown>) => boolean,
  problem: (i: number, e: Record<string, unknown>) => Problem,
): Problem | undefined {
  const exposes = list(record(self).exposes);
  const i = exposes.findIndex((e) => !ok(e));
  return i < 0 ? undefined : problem(i, exposes[i]);
}

export const BACKEND_REQUIRED = rule(
  `${MODE} == 'kube-api' || self.exposes.all(e, has(e.backend))`,
  "modes tcp and http: every expose needs a backend",
  (self) =>
    modeOf(self) === "kube-api"
      ? undefined
      : firstExpose(
          self,
          (e) => "backend" in e,
          (i) => ({ field: `exposes[${i}].backend`, message: `required in mode ${modeOf(self)}` }),
        ),
);

/** What an http expose's tls holds (src/kinds/composite/ingress/spec.ts says the same). */
export const TLS_REQUIRED_WORDS =
  "required in mode http (secretName, issuerRef, or {} for the Tailnet's spec.certificates.issuerRef)";

/** An expose's tls names one source of its certificate: a Secret or a cert-manager issuer, not both. */
export const TLS_ONE_SOURCE = rule(
  "!(has(self.secretName) && has(self.issuerRef))",
  "secretName or issuerRef, not both",
  (self) => refuse(!("secretName" in record(self) && "issuerRef" in record(self))),
);

export const HTTP_TLS_REQUIRED = rule(
  `${MODE} != 'http' || self.exposes.all(e, has(e.tls))`,
  "mode http: every expose needs tls (the agent terminates TLS): a secretName, an issuerRef, or {} for the Tailnet's default issuer",
  (self) =>
    modeOf(self) !== "http"
      ? undefined
      : firstExpose(
          self,
          (e) => "tls" in e,
          (i) => ({ field: `exposes[${i}].tls`, message: TLS_REQUIRED_WORDS }),
        ),
);

export const PORT_REQUIRED = rule(
  `${MODE} == 'http' || self.exposes.all(e, has(e.port))`,
  "modes tcp and kube-api: every expose needs a port (mode http defaults it to 443)",
  (self) =>
    modeOf(self) === "http"
      ? undefined
      : firstExpose(
          self,
          (e) => "port" in e,
          (i) => ({ field: `exposes[${i}].port`, message: `required in mode ${modeOf(self)}` }),
        ),
);

export const KUBE_API_ONE_EXPOSE = rule(
  `${MODE} != 'kube-api' || size(self.exposes) == 1`,
  "mode kube-api serves the API server on one port: exactly one expose",
  (self) =>
    refuse(modeOf(self) !== "kube-api" || list(record(self).exposes).length === 1, {
      field: "exposes[1]",
      message: "mode kube-api serves the API server on one port (one expose)",
    }),
);

/** What mode kube-api refuses in an expose, and why, in the order the operator checks them. */
const NOT_IN_KUBE_API: [string, (e: Record<string, unknown>) => boolean, string][] = [
  ["backend", (e) => "backend" in e, "not allowed in mode kube-api (the backend is the cluster's API server)"],
  ["host", (e) => "host" in e, "not allowed in mode kube-api (the API server answers on spec.hostname)"],
  [
    "aliases",
    (e) => Array.isArray(e.aliases) && e.aliases.length > 0,
    "not allowed in mode kube-api (the API server answers on spec.hostname)",
  ],
];

export const KUBE_API_NO_BACKEND = rule(
  `${MODE} != 'kube-api' || self.exposes.all(e, !has(e.backend) && !has(e.host) && (!has(e.aliases) || size(e.aliases) == 0))`,
  "mode kube-api: an expose takes no backend, host or aliases (the API server answers on spec.hostname)",
  (self) =>
    modeOf(self) !== "kube-api"
      ? undefined
      : firstExpose(
          self,
          (e) => !NOT_IN_KUBE_API.some(([, has]) => has(e)),
          (i, e) => {
            const [field, , message] = NOT_IN_KUBE_API.find(([, has]) => has(e)) ?? NOT_IN_KUBE_API[0];
            return { field: `exposes[${i}].${field}`, message };
          },
        ),
);

/** Tailnet spec.headscale.apiKeyRotation, with the schema's defaults (90 days, 14 days). */
export const RENEW_BEFORE_EXPIRY = rule(
  "(has(self.renewBeforeSeconds) ? self.renewBeforeSeconds : 1209600) < (has(self.expirationSeconds) ? self.expirationSeconds : 7776000)",
  "renewBeforeSeconds must be less than expirationSeconds",
  (self) => {
    const r = record(self);
    const renew = typeof r.renewBeforeSeconds === "number" ? r.renewBeforeSeconds : 1209600;
    const expiration = typeof r.expirationSeconds === "number" ? r.expirationSeconds : 7776000;
    return refuse(renew < expiration);
  },
);

const NS_PER: Record<string, bigint> = {
  ns: 1n,
  us: 1_000n,
  µs: 1_000n,
  ms: 1_000_000n,
  s: 1_000_000_000n,
  m: 60_000_000_000n,
  h: 3_600_000_000_000n,
};
const MAX_DURATION_NS = (1n << 63n) - 1n;

/**
 * Nanoseconds of a duration as CEL's `duration()` reads it (cel-go: Go's time.ParseDuration), for the texts
 * the schema's DURATION_PATTERN admits; undefined where Go refuses (past 2^63-1 ns, or not a duration).
 */
export function goDurationNanos(s: string): bigint | undefined {
  const parts = [...s.matchAll(/([0-9]+)(?:\.([0-9]+))?(ns|us|µs|ms|s|m|h)/g)];
  if (!parts.length || parts.map((p) => p[0]).join("") !== s) return undefined;
  let total = 0n;
  for (const [, whole, fraction, unit] of parts) {
    const per = NS_PER[unit];
    let v = BigInt(whole) * per;
    if (fraction) v += BigInt(Math.floor(Number(`0.${fraction}`) * Number(per)));
    total += v;
    if (total > MAX_DURATION_NS) return undefined;
  }
  return total;
}

const ONE_MINUTE_NS = 60_000_000_000n;
const TOO_LONG = "is longer than a duration can be (at most 2562047h)";

/** TailnetAuthKey spec.expiry: a key shorter than a minute would expire before it is delivered. */
export const EXPIRY_AT_LEAST_A_MINUTE = rule(
  "!has(self.expiry) || duration(self.expiry) >= duration('1m')",
  "spec.expiry must be at least 1m",
  (self) => {
    const expiry = record(self).expiry;
    if (expiry === undefined) return undefined;
    const ns = goDurationNanos(text(expiry));
    if (ns === undefined) return { field: "expiry", message: TOO_LONG };
    return refuse(ns >= ONE_MINUTE_NS, { field: "expiry", message: "must be at least 60s" });
  },
);

/** TailnetAuthKey spec.renewBefore: within the key's life (expiry defaults to 168h, as in the schema). */
export const RENEW_BEFORE_WITHIN_EXPIRY = rule(
  "!has(self.renewBefore) || (duration(self.renewBefore) > duration('0s') && duration(self.renewBefore) < duration(has(self.expiry) ? self.expiry : '168h'))",
  "spec.renewBefore must be more than 0 and less than spec.expiry",
  (self) => {
    const r = record(self);
    if (r.renewBefore === undefined) return undefined;
    const renew = goDurationNanos(text(r.renewBefore));
    const expiry = goDurationNanos(r.expiry === undefined ? "168h" : text(r.expiry));
    const ok = renew !== undefined && expiry !== undefined && renew > 0n && renew < expiry;
    return refuse(ok, { field: "renewBefore", message: "must be more than 0 and less than spec.expiry" });
  },
);

/** TailnetIngress paths[]: a route goes to one backend or splits by weight (src/contract/paths.ts matchProblem). */
export const ONE_BACKEND_FORM = rule(
  "has(self.backend) != has(self.backends)",
  "backend or backends, exactly one",
  (self) => refuse((record(self).backend === undefined) !== (record(self).backends === undefined)),
);
