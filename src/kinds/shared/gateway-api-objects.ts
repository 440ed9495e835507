/**
 * Gateway API objects read once (pure), in the words the binding needs (kubernetes-sigs/gateway-api apis/v1
 * gateway_types.go, httproute_types.go, grpcroute_types.go, shared_types.go; apis/v1beta1
 * referencegrant_types.go), with the API's defaults applied. What the agent cannot serve exactly as written —
 * a filter, a regular expression, a query match, a timeout — is named as `unsupported` (the route's
 * `Accepted: False, UnsupportedValue`), never served differently.
 */
import { HEADER_NAME, HEADER_VALUE, MAX_HEADER_VALUE, RULE_METHODS, rulePathProblem } from "../../contract/paths.js";
import type { K8sObject } from "../../k8s/objects.js";
import { recordOf } from "../../k8s/objects.js";
import type { LabelSelector } from "./tenancy.js";

export const GW_GROUP = "gateway.networking.k8s.io";
export const GW_V1 = `${GW_GROUP}/v1`;
export const GRANT_VERSION = `${GW_GROUP}/v1beta1`;
/** GatewayClass.spec.controllerName of the class this operator implements (DOMAIN/PATH). */
export const CONTROLLER_NAME = "tailnet.internal/gateway-controller";

export type RouteKind = "HTTPRoute" | "GRPCRoute";
export const ROUTE_KINDS: readonly RouteKind[] = ["HTTPRoute", "GRPCRoute"];

export interface ParentRef {
  group: string;
  kind: string;
  namespace: string;
  name: string;
  sectionName?: string;
  port?: number;
  /** As written in the route's spec: status.parents[].parentRef repeats it. */
  raw: Record<string, unknown>;
}

export interface CertificateRef {
  group: string;
  kind: string;
  namespace: string;
  name: string;
}

export interface Listener {
  index: number;
  name: string;
  hostname?: string;
  port: number;
  protocol: string;
  tlsMode: string;
  certificateRefs: CertificateRef[];
  from: "Same" | "All" | "Selector" | string;
  selector?: LabelSelector;
  /** allowedRoutes.kinds as written; undefined: the protocol's default (HTTPRoute, GRPCRoute for HTTPS). */
  kinds?: { group: string; kind: string }[];
}

export interface RouteMatch {
  path: string;
  pathType: "Exact" | "Prefix";
  method?: string;
  headers: { name: string; value: string }[];
}

export interface RouteBackend {
  group: string;
  kind: string;
  namespace: string;
  name: string;
  port?: number;
  weight: number;
}

export interface RouteRule {
  matches: RouteMatch[];
  backends: RouteBackend[];
}

export interface Route {
  kind: RouteKind;
  namespace: string;
  name: string;
  created: string;
  hostnames: string[];
  parentRefs: ParentRef[];
  rules: RouteRule[];
  /** The first field the agent cannot honour as written (Accepted False, UnsupportedValue). */
  unsupported?: string;
}

const arr = (v: unknown): unknown[] => (Array.isArray(v) ? v : []);
const str = (v: unknown): string | undefined => (typeof v === "string" && v !== "" ? v : undefined);
const int = (v: unknown): number | undefined => (Number.isInteger(v) ? (v as number) : undefined);
const cut = (s: string) => s.slice(0, 100);
const HEADER_NAME_RE = new RegExp(HEADER_NAME);
const HEADER_VALUE_RE = new RegExp(HEADER_VALUE);

export function readListeners(gateway: K8sObject): Listener[] {
  const ns = gateway.metadata.namespace ?? "default";
  return arr(recordOf(gateway.spec).listeners).map((raw, index) => {
    const l = recordOf(raw);
    const tls = recordOf(l.tls);
    const allowed = recordOf(l.allowedRoutes);
    const namespaces = recordOf(allowed.namespaces);
    const kinds = Array.isArray(allowed.kinds)
      ? allowed.kinds.map((k) => ({ group: str(recordOf(k).group) ?? GW_GROUP, kind: str(recordOf(k).kind) ?? "" }))
      : undefined;
    return {
      index,
      name: str(l.name) ?? `listener-${index}`,
      ...(str(l.hostname) ? { hostname: (l.hostname as string).toLowerCase() } : {}),
      port: int(l.port) ?? 0,
      protocol: str(l.protocol) ?? "",
      tlsMode: str(tls.mode) ?? "Terminate",
      certificateRefs: arr(tls.certificateRefs).map((c) => {
        const r = recordOf(c);
        return {
          group: str(r.group) ?? "",
          kind: str(r.kind) ?? "Secret",
          namespace: str(r.namespace) ?? ns,
          name: str(r.name) ?? "",
        };
      }),
      from: str(namespaces.from) ?? "Same",
      ...(namespaces.selector !== undefined ? { selector: recordOf(namespaces.selector) as LabelSelector } : {}),
      ...(kinds ? { kinds } : {}),
    };
  });
}

function readParentRefs(route: K8sObject): ParentRef[] {
  const ns = route.metadata.namespace ?? "default";
  return arr(recordOf(route.spec).parentRefs).map((raw) => {
    const p = recordOf(raw);
    return {
      group: str(p.group) ?? GW_GROUP,
      kind: str(p.kind) ?? "Gateway",
      namespace: str(p.namespace) ?? ns,
      name: str(p.name) ?? "",
      ...(str(p.sectionName) ? { sectionName: p.sectionName as string } : {}),
      ...(int(p.port) !== undefined ? { port: p.port as number } : {}),
      raw: p,
    };
  });
}

type Read<T> = T | { unsupported: string };
const bad = (v: unknown): v is { unsupported: string } => !!v && typeof v === "object" && "unsupported" in v;

function readHeaders(raw: unknown, field: string): Read<{ name: string; value: string }[]> {
  const out: { name: string; value: string }[] = [];
  for (const [i, h] of arr(raw).entries()) {
    const r = recordOf(h);
    const f = `${field}.headers[${i}]`;
    if ((str(r.type) ?? "Exact") !== "Exact") return { unsupported: `${f}.type: only Exact header matches` };
    const name = str(r.name) ?? "";
    const value = typeof r.value === "string" ? r.value : "";
    if (!HEADER_NAME_RE.test(name)) return { unsupported: `${f}.name: "${cut(name)}" is not a header name` };
    if (value.length > MAX_HEADER_VALUE || !HEADER_VALUE_RE.test(value))
      return { unsupported: `${f}.value: visible ASCII, no leading or trailing space` };
    // Gateway API: of entries with an equivalent name only the first is considered.
    if (!out.some((o) => o.name.toLowerCase() === name.toLowerCase())) out.push({ name, value });
  }
  return out;
}

function readBackends(raw: unknown, field: string, ns: string): Read<RouteBackend[]> {
  const out: RouteBackend[] = [];
  for (const [i, b] of arr(raw).entries()) {
    const r = recordOf(b);
    if (arr(r.filters).length) return { unsupported: `${field}[${i}].filters: backend filters are not supported` };
    out.push({
      group: str(r.group) ?? "",
      kind: str(r.kind) ?? "Service",
      namespace: str(r.namespace) ?? ns,
      name: str(r.name) ?? "",
      ...(int(r.port) !== undefined ? { port: r.port as number } : {}),
      weight: int(r.weight) ?? 1,
    });
  }
  return out;
}

const UNSUPPORTED_RULE_FIELDS = ["filters", "timeouts", "retry", "sessionPersistence"];

function pathOk(path: string, field: string): { unsupported: string } | undefined {
  const problem = rulePathProblem(path);
  return problem ? { unsupported: `${field}: "${cut(path)}" ${problem}` } : undefined;
}

function readHttpMatch(raw: unknown, field: string): Read<RouteMatch> {
  const m = recordOf(raw);
  const p = recordOf(m.path);
  const type = str(p.type) ?? "PathPrefix";
  if (type !== "PathPrefix" && type !== "Exact") return { unsupported: `${field}.path.type: ${cut(type)}` };
  const path = str(p.value) ?? "/";
  const wrong = pathOk(path, `${field}.path.value`);
  if (wrong) return wrong;
  if (arr(m.queryParams).length) return { unsupported: `${field}.queryParams: query matches are not supported` };
  const method = str(m.method);
  if (method !== undefined && !(RULE_METHODS as readonly string[]).includes(method)) {
    return { unsupported: `${field}.method: ${cut(method)}` };
  }
  const headers = readHeaders(m.headers, field);
  if (bad(headers)) return headers;
  return { path, pathType: type === "Exact" ? "Exact" : "Prefix", ...(method ? { method } : {}), headers };
}

/** A gRPC method match as a path: `/<service>/<method>` exactly, or `/<service>` by element (all its methods). */
function readGrpcMatch(raw: unknown, field: string): Read<RouteMatch> {
  const m = recordOf(raw);
  const method = recordOf(m.method);
  if ((str(method.type) ?? "Exact") !== "Exact") return { unsupported: `${field}.method.type: only Exact` };
  const service = str(method.service);
  const name = str(method.method);
  if (name && !service) return { unsupported: `${field}.method: a method without its service` };
  const path = service ? (name ? `/${service}/${name}` : `/${service}`) : "/";
  const wrong = pathOk(path, `${field}.method`);
  if (wrong) return wrong;
  const headers = readHeaders(m.headers, field);
  if (bad(headers)) return headers;
  return { path, pathType: name ? "Exact" : "Prefix", headers };
}

export function readRoute(route: K8sObject): Route {
  const kind: RouteKind = route.kind === "GRPCRoute" ? "GRPCRoute" : "HTTPRoute";
  const ns = route.metadata.namespace ?? "default";
  const spec = recordOf(route.spec);
  const base = {
    kind,
    namespace: ns,
    name: route.metadata.name,
    created: route.metadata.creationTimestamp ?? "",
    hostnames: arr(spec.hostnames)
      .filter((h): h is string => typeof h === "string")
      .map((h) => h.toLowerCase()),
    parentRefs: readParentRefs(route),
  };
  const rules: RouteRule[] = [];
  for (const [i, rawRule] of arr(spec.rules).entries()) {
    const r = recordOf(rawRule);
    const field = `spec.rules[${i}]`;
    const extra = UNSUPPORTED_RULE_FIELDS.find((f) => r[f] !== undefined && !(Array.isArray(r[f]) && !r[f].length));
    if (extra) return { ...base, rules: [], unsupported: `${field}.${extra}: not supported by the tailnet agent` };
    const rawMatches = arr(r.matches).length ? arr(r.matches) : [{}];
    const matches: RouteMatch[] = [];
    for (const [j, raw] of rawMatches.entries()) {
      const read = (kind === "GRPCRoute" ? readGrpcMatch : readHttpMatch)(raw, `${field}.matches[${j}]`);
      if (bad(read)) return { ...base, rules: [], unsupported: read.unsupported };
      matches.push(read);
    }
    const backends = readBackends(r.backendRefs, `${field}.backendRefs`, ns);
    if (bad(backends)) return { ...base, rules: [], unsupported: backends.unsupported };
    rules.push({ matches, backends });
  }
  return { ...base, rules };
}

/** A ReferenceGrant's from and to, as read (apis/v1beta1 referencegrant_types.go). */
export interface Grant {
  namespace: string;
  from: { group: string; kind: string; namespace: string }[];
  to: { group: string; kind: string; name?: string }[];
}

export function readGrant(o: K8sObject): Grant {
  const spec = recordOf(o.spec);
  return {
    namespace: o.metadata.namespace ?? "default",
    from: arr(spec.from).map((f) => {
      const r = recordOf(f);
      return { group: str(r.group) ?? "", kind: str(r.kind) ?? "", namespace: str(r.namespace) ?? "" };
    }),
    to: arr(spec.to).map((t) => {
      const r = recordOf(t);
      return { group: str(r.group) ?? "", kind: str(r.kind) ?? "", ...(str(r.name) ? { name: r.name as string } : {}) };
    }),
  };
}

/**
 * Whether a reference from an object (group, kind, namespace) to another namespace's object is granted: a
 * ReferenceGrant in the target's namespace lists the referrer's group, kind and namespace in `from` and the
 * target's group and kind (and name, when it names one) in `to`. A reference within one namespace needs none.
 */
export function granted(
  grants: readonly Grant[],
  from: { group: string; kind: string; namespace: string },
  to: { group: string; kind: string; namespace: string; name: string },
): boolean {
  if (from.namespace === to.namespace) return true;
  return grants.some(
    (g) =>
      g.namespace === to.namespace &&
      g.from.some((f) => f.group === from.group && f.kind === from.kind && f.namespace === from.namespace) &&
      g.to.some((t) => t.group === to.group && t.kind === to.kind && (t.name === undefined || t.name === to.name)),
  );
}
