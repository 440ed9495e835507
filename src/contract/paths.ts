// Per-request routes of an http expose as the agent config carries them (src/agent/routes.ts matches them):
// the rule-path syntax the operator, the CRD checks and the agent share, and the config's schema and checks.

/** Longest rule path, and most rules per expose (an Ingress host's paths). */
export const MAX_RULE_PATH = 256;
export const MAX_RULES = 64;
/** Most header matches per rule, and most weighted backends per rule (Gateway API allows 16 each). */
export const MAX_HEADER_MATCHES = 16;
export const MAX_WEIGHTED = 16;
/** The methods a rule may match (Gateway API HTTPMethod; CONNECT is refused by the agent's parser). */
export const RULE_METHODS = ["GET", "HEAD", "POST", "PUT", "DELETE", "OPTIONS", "TRACE", "PATCH"] as const;
/** A header name (RFC 9110 token) and an exact value (visible ASCII and spaces, no leading or trailing space). */
export const HEADER_NAME = "^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,256}$";
// (Go's regexp, which the API server checks CRD patterns with, allows a repeat count up to 1000: the length
// bound is maxLength, not the pattern.)
export const HEADER_VALUE = "^[\\x21-\\x7e]([\\x20-\\x7e]*[\\x21-\\x7e])?$";
export const MAX_HEADER_VALUE = 4096;

/** One route of an http expose in the agent config (`exposes[].paths[]`, src/agent/routes.ts matches it). */
export interface AgentPath {
  path: string;
  pathType: "Exact" | "Prefix";
  /** Gateway API matches beyond the path: a method, exact header values. */
  method?: string;
  headers?: { name: string; value: string }[];
  /** Required unless `backends` is set. */
  backend?: { host: string; port: number; protocol?: "http1" | "h2c" };
  /** Split by weight (0 never chosen; all 0 answers 500); an entry without host is an unresolved share (500). */
  backends?: { host?: string; port?: number; weight: number; protocol?: "http1" | "h2c" }[];
}

/** What a rule matches beyond its path (Gateway API HTTPRouteMatch): a method, exact header values. */
export interface RuleMatch {
  method?: string;
  headers?: readonly { name: string; value: string }[];
}

/** `/`, then visible ASCII without `"`, `#`, `%`, `;`, `?` or `\`: what a request path can hold undecoded. */
const RULE_CHARS = /^\/[\x21\x24\x26-\x3a\x3c-\x3e\x40-\x5b\x5d-\x7e]*$/;

/** Segments a decoding or normalising parser reads differently: `.`, `..`, empty ones (`//`); a trailing `/` is fine. */
export function hasBadSegment(path: string): boolean {
  const parts = path.split("/");
  for (let i = 1; i < parts.length; i++) {
    const p = parts[i];
    if (p === "." || p === "..") return true;
    if (p === "" && i !== parts.length - 1) return true;
  }
  return false;
}

/** Why a rule path can never match a request the agent routes (so is refused), or undefined when it is fine. */
export function rulePathProblem(path: string): string | undefined {
  if (path.length > MAX_RULE_PATH) return `longer than ${MAX_RULE_PATH} characters`;
  if (!path.startsWith("/")) return "must start with /";
  if (!RULE_CHARS.test(path)) return 'only visible ASCII without " # % ; ? \\';
  if (hasBadSegment(path)) return "no empty, . or .. segments";
  return undefined;
}

/**
 * Prefix `/foo/` and `/foo` are the same rule (the trailing slash is ignored); a method and header matches
 * make another rule (header names compared case-insensitively, in any order).
 */
export const ruleKey = (path: string, pathType: string, match: RuleMatch = {}): string => {
  const base = `${pathType === "Exact" ? "Exact" : "Prefix"} ${pathType === "Exact" || path === "/" ? path : path.replace(/\/$/, "")}`;
  const headers = (match.headers ?? []).map((h) => `${h.name.toLowerCase()}=${h.value}`).sort();
  return [base, ...(match.method ? [`method ${match.method}`] : []), ...headers.map((h) => `header ${h}`)].join(" ");
};

/** Why a rule's method, header matches or weights cannot be served, or undefined. */
export function matchProblem(
  rule: RuleMatch & { backend?: unknown; backends?: readonly { weight: number }[] },
): string | undefined {
  if ((rule.backend === undefined) === (rule.backends === undefined)) return "backend or backends: exactly one";
  const names = new Set<string>();
  for (const h of rule.headers ?? []) {
    const name = h.name.toLowerCase();
    if (names.has(name)) return `header ${name} matched twice`;
    names.add(name);
  }
  if (rule.backends && rule.backends.length === 0) return "backends: at least one";
  return undefined;
}

/** Why a list of rules is not servable: the first bad path or a duplicate, with its index. */
export function pathsProblem(
  paths: readonly ({
    name?: string;
    path: string;
    pathType: string;
    backend?: unknown;
    backends?: readonly { weight: number }[];
  } & RuleMatch)[],
): { index: number; problem: string } | undefined {
  const seen = new Map<string, number>();
  const names = new Map<string, number>();
  for (const [index, p] of paths.entries()) {
    const named = p.name === undefined ? undefined : names.get(p.name);
    if (named !== undefined) return { index, problem: `name "${p.name}" duplicates paths[${named}]` };
    if (p.name !== undefined) names.set(p.name, index);
    const problem = rulePathProblem(p.path);
    if (problem) return { index, problem: `path "${p.path.slice(0, 100)}": ${problem}` };
    const bad = matchProblem(p);
    if (bad) return { index, problem: bad };
    const key = ruleKey(p.path, p.pathType, p);
    const first = seen.get(key);
    if (first !== undefined) return { index, problem: `duplicates paths[${first}] (${key})` };
    seen.set(key, index);
  }
  return undefined;
}

/** A backend's `protocol` in the agent config (agent-config.ts BackendProtocol). */
export const backendProtocolSchema = { type: "string", enum: ["http1", "h2c"] } as const;

/** Most weight one backend of a rule may carry (Gateway API BackendRef.weight). */
export const MAX_WEIGHT = 1_000_000;

/** The agent config's `exposes[].paths` (JSON Schema; `port` is the config's port schema). */
export const agentPathsSchema = <P>(port: P) => {
  const backend = {
    type: "object",
    additionalProperties: false,
    required: ["host", "port"],
    properties: { host: { type: "string", minLength: 1 }, port, protocol: backendProtocolSchema },
  } as const;
  return {
    type: "array",
    maxItems: MAX_RULES,
    items: {
      type: "object",
      additionalProperties: false,
      required: ["path", "pathType"],
      properties: {
        path: { type: "string", minLength: 1, maxLength: MAX_RULE_PATH },
        pathType: { type: "string", enum: ["Exact", "Prefix"] },
        method: { type: "string", enum: RULE_METHODS },
        headers: {
          type: "array",
          maxItems: MAX_HEADER_MATCHES,
          items: {
            type: "object",
            additionalProperties: false,
            required: ["name", "value"],
            properties: {
              name: { type: "string", pattern: HEADER_NAME },
              value: { type: "string", pattern: HEADER_VALUE, maxLength: MAX_HEADER_VALUE },
            },
          },
        },
        // `backend` is the rule's backend; `backends` splits by weight (one of the two, pathsProblem).
        backend,
        backends: {
          type: "array",
          minItems: 1,
          maxItems: MAX_WEIGHTED,
          items: {
            type: "object",
            additionalProperties: false,
            // without host and port: the share of an unresolved reference, answered 500
            required: ["weight"],
            dependencies: { host: ["port"], port: ["host"] },
            properties: {
              host: { type: "string", minLength: 1 },
              port,
              weight: { type: "integer", minimum: 0, maximum: MAX_WEIGHT },
              // how to speak to it (GRPCRoute: h2c); carried for the agent's HTTP/2 support (issue 35)
              protocol: backendProtocolSchema,
            },
          },
        },
      },
    },
  } as const;
};
