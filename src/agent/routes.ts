// Per-request routing of an http expose (pure): which backend a request target goes to, with the path
// semantics of a Kubernetes Ingress (k8s.io/api networking/v1 types.go, HTTPIngressPath.PathType):
// - Exact: the path equals the rule's path, byte for byte (case-sensitive, `/foo` is not `/foo/`).
// - Prefix: by path element — the rule's elements (split on `/`, a trailing slash ignored) are the first
//   elements of the request path: `/foo` matches `/foo`, `/foo/` and `/foo/bar`, never `/foobar`.
// - The longest matching rule path wins; at the same length Exact beats Prefix. No rule: the default backend.
// ImplementationSpecific is read as Prefix by whoever builds the config (the agent knows only these two).
//
// Matching is on the raw bytes of the path as the strict parser (http1.ts) framed them, before `?`: nothing is
// decoded or normalised. So that a backend behind us that does decode or normalise cannot see a different path
// than the one we routed, a routed expose refuses (400) every target a parser could read as another path:
// dot segments, empty segments, a backslash, `;` path parameters, and percent-encoded ASCII (`%2F`, `%2e`,
// `%61`...; docs/security.md, "Paths").
import { hasBadSegment } from "../contract/paths.js";
import { HttpFramingError } from "./http1.js";

export type PathType = "Exact" | "Prefix";

export interface PathRule<B> {
  path: string;
  pathType: PathType;
  backend: B;
}

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
}

/** A router over a host's rules; `route(target)` is the matching rule's backend or `fallback`. */
export class PathRouter<B> {
  private readonly rules: Compiled<B>[];

  constructor(
    rules: readonly PathRule<B>[],
    private readonly fallback: B,
  ) {
    this.rules = rules
      .map((rule) => {
        const els = elements(rule.path);
        const length = rule.pathType === "Exact" ? rule.path.length : els.join("/").length + 1;
        return { rule, elements: els, length };
      })
      // Longest first; at equal length Exact first; then config order (stable sort).
      .sort((a, b) => b.length - a.length || exactFirst(a.rule) - exactFirst(b.rule));
  }

  /** The backend of one request target; throws HttpFramingError(400) for a target it must refuse. */
  route(target: string): B {
    const path = requestPath(target);
    if (path === undefined) return this.fallback;
    let els: string[] | undefined;
    for (const c of this.rules) {
      if (c.rule.pathType === "Exact") {
        if (path === c.rule.path) return c.rule.backend;
        continue;
      }
      els ??= elements(path);
      if (isPrefix(c.elements, els)) return c.rule.backend;
    }
    return this.fallback;
  }
}

const exactFirst = (r: PathRule<unknown>) => (r.pathType === "Exact" ? 0 : 1);

function isPrefix(prefix: readonly string[], of: readonly string[]): boolean {
  if (prefix.length > of.length) return false;
  for (let i = 0; i < prefix.length; i++) if (prefix[i] !== of[i]) return false;
  return true;
}
