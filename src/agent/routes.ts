// Per-request routing of an http expose (pure): which backend a request target goes to, with the path
// semantics of a Kubernetes Ingress (k8s.io/api networking/v1 types.go, HTTPIngressPath.PathType):
// - Exact: the path equals the rule's path, byte for byte (case-sensitive, `/foo` is not `/foo/`).
// - Prefix: by path element — the rule's elements (split on `/`, a trailing slash ignored) are the first
//   elements of the request path: `/foo` matches `/foo`, `/foo/` and `/foo/bar`, never `/foobar`.
// - The longest matching rule path wins; at the same length Exact beats Prefix. No rule: the default backend.
// ImplementationSpecific is read as Prefix by whoever builds the config (the agent knows only these two).
// A rule may also match a method and exact header values (Gateway API HTTPRouteMatch, apis/v1/httproute_types.go
// in kubernetes-sigs/gateway-api): at the same path, a rule with a method wins, then the one with more header
// matches, then config order (the operator orders rules as the Gateway API orders routes). Headers are read as
// the strict parser framed and kept them (the agent's own identity and forwarding headers are never matched);
// a header sent twice is its values joined with ", " (RFC 9110 §5.3). A rule's `backends` split its requests
// by weight: weight 0 is never chosen, all zero answers 500 (HTTPBackendRef.weight). No rule and no fallback
// (a Gateway's host): 404.
//
// Matching is on the raw bytes of the path as the strict parser (http1.ts) framed them, before `?`: nothing is
// decoded or normalised. So that a backend behind us that does decode or normalise cannot see a different path
// than the one we routed, a routed expose refuses (400) every target a parser could read as another path:
// dot segments, empty segments, a backslash, `;` path parameters, and percent-encoded ASCII (`%2F`, `%2e`,
// `%61`...; docs/security.md, "Paths").
import type { AgentExpose, AgentPath } from "../contract/agent-config.js";
import { hasBadSegment } from "../contract/paths.js";
import { HttpFramingError } from "./http1.js";

export type PathType = "Exact" | "Prefix";

export interface PathRule<B> {
  path: string;
  pathType: PathType;
  /** The rule's backend; unused when `backends` is set. */
  backend: B;
  /** Only requests with this method (case-sensitive, as framed). */
  method?: string;
  /** Only requests carrying each of these headers with exactly this value (names case-insensitive). */
  headers?: readonly { name: string; value: string }[];
  /**
   * When set, the request's backend is one of these, picked by weight. An entry without a backend is the share
   * of a reference the operator could not resolve: its requests are answered 500 (HTTPRouteRule.BackendRefs).
   */
  backends?: readonly { backend?: B; weight: number }[];
}

/** What of a request head beyond its target a rule can match: the method, and the field lines as framed. */
export interface RequestFacts {
  method: string;
  /** `name: value` lines (names as sent), without the request line. */
  fieldLines: readonly string[];
}

/** A rule whose weights are all zero (Gateway API: "the route rule MUST return a 500"). */
const ALL_ZERO = "every backend of the matching rule has weight 0";

/**
 * A percent-encoding a decoding backend (or proxy: nginx decodes before matching locations) would read as a
 * character a rule path could hold, or as a delimiter: every ASCII byte but space. Malformed ones too. Left
 * are `%20` and bytes >= 0x80 (UTF-8), which no rule path contains decoded, so no decoder can route them to one.
 */
const AMBIGUOUS_PERCENT = /%(?![89a-fA-F][0-9a-fA-F]|20)/;

/**
 * The path of a request target (everything before `?`), or 400 when a routed expose cannot route it
 * unambiguously. `*` (OPTIONS) has no path: it goes to the default backend.
 */
export function requestPath(target: string): string | undefined {
  if (target === "*") return undefined;
  // http1.ts admits only origin-form (and `*`); this is the second line, for a caller that did not.
  if (!target.startsWith("/")) throw new HttpFramingError(400, "request target not in origin-form");
  const q = target.indexOf("?");
  const path = q < 0 ? target : target.slice(0, q);
  if (path.includes("\\") || path.includes(";")) throw new HttpFramingError(400, "\\ or ; in a routed path");
  if (AMBIGUOUS_PERCENT.test(path)) throw new HttpFramingError(400, "percent-encoded ASCII in a routed path");
  if (hasBadSegment(path)) throw new HttpFramingError(400, "empty, . or .. segment in a routed path");
  return path;
}

/** The path's elements: split on `/`, a trailing slash (and the leading one) dropped. */
const elements = (path: string): string[] =>
  path.split("/").filter((e, i, all) => i > 0 && !(e === "" && i === all.length - 1));

interface Compiled<B> {
  rule: PathRule<B>;
  /** Exact: the path; Prefix: its elements. */
  elements: string[];
  /** Precedence: the rule path's length (a Prefix rule's trailing slash not counted). */
  length: number;
  /** Header matches with lower-case names. */
  headers: { name: string; value: string }[];
  /** Weighted backends: cumulative weights (the last is the total), zero weights left out. */
  picks?: { backend?: B; upTo: number }[];
}

/**
 * A router over a host's rules; `route(target, request)` is the matching rule's backend or `fallback`. Without
 * a fallback (undefined), a request no rule matches is answered 404. `random` picks among weighted backends
 * (a number in [0, 1), Math.random by default; tests pass a seeded one).
 */
export class PathRouter<B> {
  private readonly rules: Compiled<B>[];

  constructor(
    rules: readonly PathRule<B>[],
    private readonly fallback: B | undefined,
    private readonly random: () => number = Math.random,
  ) {
    this.rules = rules
      .map((rule) => {
        const els = elements(rule.path);
        const length = rule.pathType === "Exact" ? rule.path.length : els.join("/").length + 1;
        const headers = (rule.headers ?? []).map((h) => ({ name: h.name.toLowerCase(), value: h.value }));
        return { rule, elements: els, length, headers, ...(rule.backends ? { picks: cumulative(rule.backends) } : {}) };
      })
      // Longest first; at equal length Exact first; then a method, then more headers; then config order (stable).
      .sort(
        (a, b) =>
          b.length - a.length ||
          exactFirst(a.rule) - exactFirst(b.rule) ||
          (a.rule.method ? 0 : 1) - (b.rule.method ? 0 : 1) ||
          b.headers.length - a.headers.length,
      );
  }

  /**
   * The backend of one request; throws HttpFramingError: 400 for a target it must refuse, 404 when nothing
   * matches and there is no fallback, 500 when the matching rule's weights are all zero. Without `request`
   * (a caller that routes by path only), rules with a method or header matches never match.
   */
  route(target: string, request?: RequestFacts): B {
    const path = requestPath(target);
    if (path === undefined) return this.orNotFound();
    let els: string[] | undefined;
    let fields: Map<string, string> | undefined;
    for (const c of this.rules) {
      if (c.rule.pathType === "Exact") {
        if (path !== c.rule.path) continue;
      } else {
        els ??= elements(path);
        if (!isPrefix(c.elements, els)) continue;
      }
      if (c.rule.method !== undefined && c.rule.method !== request?.method) continue;
      if (c.headers.length) {
        if (!request) continue;
        fields ??= fieldMap(request.fieldLines);
        if (!c.headers.every((h) => fields?.get(h.name) === h.value)) continue;
      }
      const backend = c.picks ? this.pick(c.picks) : c.rule.backend;
      if (backend === undefined) throw new HttpFramingError(500, "the matching rule's backend is not resolved");
      return backend;
    }
    return this.orNotFound();
  }

  private orNotFound(): B {
    if (this.fallback === undefined) throw new HttpFramingError(404, "no route matches");
    return this.fallback;
  }

  private pick(picks: readonly { backend?: B; upTo: number }[]): B | undefined {
    const total = picks.at(-1)?.upTo ?? 0;
    if (total === 0) throw new HttpFramingError(500, ALL_ZERO);
    const r = Math.floor(this.random() * total);
    // Few backends (at most 16): a linear scan.
    for (const p of picks) if (r < p.upTo) return p.backend;
    return picks[picks.length - 1].backend;
  }
}

function cumulative<B>(backends: readonly { backend?: B; weight: number }[]): { backend?: B; upTo: number }[] {
  let sum = 0;
  const out: { backend?: B; upTo: number }[] = [];
  for (const b of backends) {
    if (b.weight <= 0) continue;
    sum += b.weight;
    out.push({ backend: b.backend, upTo: sum });
  }
  return out;
}

/** The head's fields by lower-case name; a repeated field is its values joined with ", " (RFC 9110 §5.3). */
function fieldMap(lines: readonly string[]): Map<string, string> {
  const out = new Map<string, string>();
  for (const line of lines) {
    const colon = line.indexOf(":");
    if (colon <= 0) continue;
    const name = line.slice(0, colon).toLowerCase();
    const value = trimOws(line, colon + 1);
    const had = out.get(name);
    out.set(name, had === undefined ? value : `${had}, ${value}`);
  }
  return out;
}

/** The value after `from`, without SP/HTAB around it (a loop: a regex with `[ \t]+$` is quadratic on spaces). */
function trimOws(line: string, from: number): string {
  let start = from;
  let end = line.length;
  const ows = (c: number) => c === 0x20 || c === 0x09;
  while (start < end && ows(line.charCodeAt(start))) start++;
  while (end > start && ows(line.charCodeAt(end - 1))) end--;
  return line.slice(start, end);
}

const exactFirst = (r: PathRule<unknown>) => (r.pathType === "Exact" ? 0 : 1);

function isPrefix(prefix: readonly string[], of: readonly string[]): boolean {
  if (prefix.length > of.length) return false;
  for (let i = 0; i < prefix.length; i++) if (prefix[i] !== of[i]) return false;
  return true;
}

/** A backend as routed: where, and (a GRPCRoute's) how to speak to it, for the HTTP/2 pipe (issue 35). */
type HostPortOf = AgentExpose["backend"] & { protocol?: "http1" | "h2c" };

/**
 * The router of an http expose with paths (undefined without): its rules as the agent config carries them. One
 * object per host:port, so that requests of two rules for the same Service keep the backend connection (the
 * framer switches backends by identity).
 */
export function exposeRouter(expose: AgentExpose): PathRouter<HostPortOf> | undefined {
  if (!expose.paths?.length) return undefined;
  const interned = new Map<string, HostPortOf>();
  const one = (b: HostPortOf): HostPortOf => {
    const key = `${b.host}:${b.port}:${b.protocol ?? ""}`;
    const had = interned.get(key);
    if (had) return had;
    const made = { host: b.host, port: b.port, ...(b.protocol ? { protocol: b.protocol } : {}) };
    interned.set(key, made);
    return made;
  };
  const fallback = one(expose.backend);
  const rules = expose.paths.map(
    (p): PathRule<HostPortOf> => ({
      path: p.path,
      pathType: p.pathType,
      // unused with `backends`, but a rule always names one (PathRule's shape stays as callers know it)
      backend: one(p.backend ?? firstResolved(p.backends) ?? expose.backend),
      ...(p.method ? { method: p.method } : {}),
      ...(p.headers?.length ? { headers: p.headers } : {}),
      ...(p.backends
        ? {
            backends: p.backends.map((b) =>
              b.host !== undefined && b.port !== undefined
                ? { backend: one({ host: b.host, port: b.port, protocol: b.protocol }), weight: b.weight }
                : { weight: b.weight },
            ),
          }
        : {}),
    }),
  );
  return new PathRouter(rules, expose.unmatched === "notFound" ? undefined : fallback);
}

function firstResolved(backends: AgentPath["backends"]): HostPortOf | undefined {
  const b = backends?.find((x) => x.host !== undefined && x.port !== undefined);
  return b ? { host: b.host as string, port: b.port as number } : undefined;
}
