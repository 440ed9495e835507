// Per-request routes of an http expose as the agent config carries them (src/agent/routes.ts matches them):
// the rule-path syntax the operator, the CRD checks and the agent share, and the config's schema and checks.

/** Longest rule path, and most rules per expose (an Ingress host's paths). */
export const MAX_RULE_PATH = 256;
export const MAX_RULES = 64;

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

/** Prefix `/foo/` and `/foo` are the same rule (the trailing slash is ignored). */
export const ruleKey = (path: string, pathType: string): string =>
  `${pathType === "Exact" ? "Exact" : "Prefix"} ${pathType === "Exact" || path === "/" ? path : path.replace(/\/$/, "")}`;

/** Why a list of rules is not servable: the first bad path or a duplicate, with its index. */
export function pathsProblem(
  paths: readonly { path: string; pathType: string }[],
): { index: number; problem: string } | undefined {
  const seen = new Map<string, number>();
  for (const [index, p] of paths.entries()) {
    const problem = rulePathProblem(p.path);
    if (problem) return { index, problem: `path "${p.path.slice(0, 100)}": ${problem}` };
    const key = ruleKey(p.path, p.pathType);
    const first = seen.get(key);
    if (first !== undefined) return { index, problem: `duplicates paths[${first}] (${key})` };
    seen.set(key, index);
  }
  return undefined;
}

/** A backend's `protocol` in the agent config (agent-config.ts BackendProtocol). */
export const backendProtocolSchema = { type: "string", enum: ["http1", "h2c"] } as const;

/** The agent config's `exposes[].paths` (JSON Schema; `port` is the config's port schema). */
export const agentPathsSchema = <P>(port: P) =>
  ({
    type: "array",
    maxItems: MAX_RULES,
    items: {
      type: "object",
      additionalProperties: false,
      required: ["path", "pathType", "backend"],
      properties: {
        path: { type: "string", minLength: 1, maxLength: MAX_RULE_PATH },
        pathType: { type: "string", enum: ["Exact", "Prefix"] },
        backend: {
          type: "object",
          additionalProperties: false,
          required: ["host", "port"],
          properties: { host: { type: "string", minLength: 1 }, port, protocol: backendProtocolSchema },
        },
      },
    },
  }) as const;
