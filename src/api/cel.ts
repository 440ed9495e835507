/**
 * CRD validation rules (`x-kubernetes-validations`, CEL) for what the API server can check by itself, each
 * with its twin in TypeScript: the kube-apiserver refuses a bad value at `kubectl apply`, and the operator's
 * hook-time validation (ajv, src/api/validate.ts) refuses the same value with the same message as
 * InvalidSpec — for a CRD applied by a server older than the rules, or objects stored before them.
 * test/real/kube/validation.test.ts checks both verdicts agree on the real kube-apiserver.
 *
 * The CIDR functions are Kubernetes' CEL library (k8s.io/apiserver pkg/cel/library/cidr.go, in every
 * kube-apiserver since 1.31; the pinned one is src/real-versions.json): `isCIDR` is Go's
 * netip.ParsePrefix without IPv4-mapped IPv6, `masked()` clears the host bits. Every string or list a rule
 * reads has a maxLength or maxItems, so the API server's cost estimate stays within its per-rule limit.
 */
import { parsePrefix, prefixHasHostBits } from "../net/cidr.js";
import type { Schema } from "./schemas/common.js";

export interface CelRule {
  rule: string;
  message: string;
}

type Check = (self: unknown) => boolean;

/** Each rule's TypeScript twin, by rule text: the ajv keyword looks them up (src/api/ajv.ts). */
const TWINS = new Map<string, Check>();

function rule(text: string, message: string, check: Check): CelRule {
  const known = TWINS.get(text);
  if (known && known !== check) throw new Error(`CEL rule declared twice with different twins: ${text}`);
  TWINS.set(text, check);
  return { rule: text, message };
}

/** The twin of a rule; a rule without one is a programming error (thrown when a schema compiles). */
export function twinOf(text: string): Check {
  const check = TWINS.get(text);
  if (!check) throw new Error(`CEL rule without a TypeScript twin: ${text}`);
  return check;
}

/** Adds rules to a schema node (its own rules first). */
export function withRules(schema: Schema, ...rules: CelRule[]): Schema {
  const own = (schema["x-kubernetes-validations"] as CelRule[] | undefined) ?? [];
  return { ...schema, "x-kubernetes-validations": [...own, ...rules] };
}

const text = (v: unknown) => (typeof v === "string" ? v : "");
const record = (v: unknown) => (v && typeof v === "object" && !Array.isArray(v) ? (v as Record<string, unknown>) : {});
const list = (v: unknown) => (Array.isArray(v) ? v.map(record) : []);

/** CIDR syntax as the API server's CEL reads it (on a string: the rule's `self`). */
export const IS_CIDR = rule(
  "isCIDR(self)",
  "must be an IPv4 or IPv6 CIDR prefix, e.g. 192.168.10.0/24 or fd7a:115c::/48",
  (self) => {
    const p = parsePrefix(text(self));
    return p.ok && !p.mapped;
  },
);

/** No host bits: 192.168.10.1/24 is refused, 192.168.10.0/24 is what was meant. */
export const NO_HOST_BITS = rule(
  "!isCIDR(self) || cidr(self) == cidr(self).masked()",
  "must not have host bits set: write the network address (192.168.10.0/24, not 192.168.10.1/24)",
  (self) => {
    const p = parsePrefix(text(self));
    return !p.ok || p.mapped || !prefixHasHostBits(p);
  },
);

/** TailnetGateway routes: a default route is the exit node's business. */
export const NOT_DEFAULT_ROUTE = rule(
  "!isCIDR(self) || cidr(self).prefixLength() != 0",
  "a default route (0.0.0.0/0, ::/0) is not a subnet route: use spec.exitNode",
  (self) => {
    const p = parsePrefix(text(self));
    return !p.ok || p.mapped || p.bits !== 0;
  },
);

/** The three rules of a CIDR list item, in the order the API server reports them. */
export const CIDR_RULES = [IS_CIDR, NO_HOST_BITS] as const;

/** TailnetAuthKey: the machines join either tagged or as a user. */
export const TAGS_XOR_USER = rule(
  "has(self.tags) != has(self.user)",
  "exactly one of spec.tags and spec.user",
  (self) => "tags" in record(self) !== "user" in record(self),
);

/** TailnetIngress: the mode, with the schema's default. */
const modeOf = (self: unknown) => text(record(self).mode) || "tcp";
const MODE = "(has(self.mode) ? self.mode : 'tcp')";

export const KUBE_API_ONE_EXPOSE = rule(
  `${MODE} != 'kube-api' || size(self.exposes) == 1`,
  "mode kube-api serves the API server on one port: exactly one expose",
  (self) => modeOf(self) !== "kube-api" || list(record(self).exposes).length === 1,
);

export const KUBE_API_NO_BACKEND = rule(
  `${MODE} != 'kube-api' || self.exposes.all(e, !has(e.backend) && !has(e.tls) && !has(e.host) && (!has(e.aliases) || size(e.aliases) == 0))`,
  "mode kube-api: an expose takes no backend, tls, host or aliases (the API server answers on spec.hostname)",
  (self) =>
    modeOf(self) !== "kube-api" ||
    list(record(self).exposes).every(
      (e) => !("backend" in e) && !("tls" in e) && !("host" in e) && !(Array.isArray(e.aliases) && e.aliases.length),
    ),
);

export const PORT_REQUIRED = rule(
  `${MODE} == 'http' || self.exposes.all(e, has(e.port))`,
  "modes tcp and kube-api: every expose needs a port (mode http defaults it to 443)",
  (self) => modeOf(self) === "http" || list(record(self).exposes).every((e) => "port" in e),
);

export const BACKEND_REQUIRED = rule(
  `${MODE} == 'kube-api' || self.exposes.all(e, has(e.backend))`,
  "modes tcp and http: every expose needs a backend",
  (self) => modeOf(self) === "kube-api" || list(record(self).exposes).every((e) => "backend" in e),
);

export const HTTP_TLS_REQUIRED = rule(
  `${MODE} != 'http' || self.exposes.all(e, has(e.tls))`,
  "mode http: every expose needs tls.secretName (the agent terminates TLS)",
  (self) => modeOf(self) !== "http" || list(record(self).exposes).every((e) => "tls" in e),
);

/** Tailnet spec.headscale.apiKeyRotation, with the schema's defaults (90 days, 14 days). */
export const RENEW_BEFORE_EXPIRY = rule(
  "(has(self.renewBeforeSeconds) ? self.renewBeforeSeconds : 1209600) < (has(self.expirationSeconds) ? self.expirationSeconds : 7776000)",
  "renewBeforeSeconds must be less than expirationSeconds",
  (self) => {
    const r = record(self);
    const renew = typeof r.renewBeforeSeconds === "number" ? r.renewBeforeSeconds : 1209600;
    const expiration = typeof r.expirationSeconds === "number" ? r.expirationSeconds : 7776000;
    return renew < expiration;
  },
);
