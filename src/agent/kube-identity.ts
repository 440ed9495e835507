// Who a tailnet peer is in Kubernetes: the mapping from tailscaled's WhoIs answer (tailscale
// client/tailscale/apitype WhoIsResponse: Node, UserProfile, CapMap) to the Impersonate-User and
// Impersonate-Group the kube-api expose sends. Pure, so every rule is table-tested (docs/kube-api.md).

/** The Tailscale operator's application capability; its rules' `impersonate.groups` add groups. */
export const KUBERNETES_CAPABILITY = "tailscale.com/cap/kubernetes";
/** A tagged node's user: its MagicDNS name behind this prefix (a tagged node has no human owner). */
export const NODE_USER_PREFIX = "tailnet:node:";
/** A tagged node's groups: one per tag, `tag:ci` → `tailnet:tag:ci`. */
export const TAG_GROUP_PREFIX = "tailnet:";

export interface KubeIdentity {
  /** Impersonate-User. */
  user: string;
  /** Impersonate-Group values, deduplicated, in order: tag groups, then capability groups. */
  groups: string[];
  /** The tailnet side, for the log: the login name or the tags, and the node's name. */
  tailnet: string;
}

export type WhoIsVerdict = { identity: KubeIdentity } | { refused: string };

/**
 * A value that can be one header field value and one Kubernetes user or group name: visible ASCII with inner
 * spaces, no CR/LF/NUL (a policy-supplied group with a line break would otherwise add a header).
 */
const HEADER_SAFE = /^[\x21-\x7e](?:[\x20-\x7e]{0,251}[\x21-\x7e])?$/;
/** Names Kubernetes and this mapping reserve: a login name there would be someone else. */
const RESERVED_USER = /^(?:system:|tailnet:)/;

function record(value: unknown): Record<string, unknown> | undefined {
  return typeof value === "object" && value !== null && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : undefined;
}

/**
 * The groups granted through the policy: every rule of the `tailscale.com/cap/kubernetes` capability whose
 * `impersonate.groups` lists names (a grant's `app` entry, compiled by Headscale into CapGrant). A rule in
 * another shape is refused rather than skipped: a typo in the policy must not silently grant less or more.
 */
function capabilityGroups(capMap: unknown): string[] | { refused: string } {
  const rules = record(capMap)?.[KUBERNETES_CAPABILITY];
  if (rules === undefined || rules === null) return [];
  if (!Array.isArray(rules)) return { refused: `capability ${KUBERNETES_CAPABILITY} is not a list of rules` };
  const groups: string[] = [];
  for (const rule of rules) {
    const impersonate = record(rule)?.impersonate;
    if (impersonate === undefined) continue; // a rule for something else (e.g. the Tailscale recorder)
    const names = record(impersonate)?.groups;
    if (!Array.isArray(names) || !names.every((g) => typeof g === "string"))
      return { refused: `capability ${KUBERNETES_CAPABILITY}: impersonate.groups is not a list of names` };
    groups.push(...names);
  }
  return groups;
}

/** Maps a WhoIs answer to the identity to impersonate, or says why the peer is refused. */
export function identityFromWhoIs(whois: unknown): WhoIsVerdict {
  const node = record(record(whois)?.Node);
  const profile = record(record(whois)?.UserProfile);
  if (!node || !profile) return { refused: "the WhoIs answer has no Node or UserProfile" };
  const nodeName = typeof node.Name === "string" ? node.Name.replace(/\.$/, "") : "";
  if (!nodeName) return { refused: "the peer node has no name" };
  const tags = Array.isArray(node.Tags) ? node.Tags.filter((t): t is string => typeof t === "string") : [];
  const granted = capabilityGroups(record(whois)?.CapMap);
  if (!Array.isArray(granted)) return granted;
  let user: string;
  let tailnet: string;
  const groups: string[] = [];
  if (tags.length > 0) {
    user = `${NODE_USER_PREFIX}${nodeName}`;
    tailnet = `${tags.join(",")} (${nodeName})`;
    groups.push(...tags.map((tag) => `${TAG_GROUP_PREFIX}${tag}`));
  } else {
    const login = typeof profile.LoginName === "string" ? profile.LoginName : "";
    if (!login) return { refused: `the owner of ${nodeName} has no login name` };
    if (RESERVED_USER.test(login))
      return { refused: `login name "${login}" is reserved in Kubernetes (system:, tailnet:)` };
    user = login;
    tailnet = `${login} (${nodeName})`;
  }
  groups.push(...granted);
  const unique = [...new Set(groups)];
  for (const value of [user, ...unique]) {
    if (!HEADER_SAFE.test(value))
      return { refused: `${JSON.stringify(value).slice(0, 80)} is not a name the proxy can send (visible ASCII)` };
  }
  return { identity: { user, groups: unique, tailnet } };
}

/**
 * The Kubernetes verb of a request, as kube-apiserver's RequestInfoFactory derives it, for the log: a GET
 * with `watch=true|1` is watch, on a collection list, else get; POST create, PUT update, PATCH patch,
 * DELETE delete or deletecollection. Paths outside /api and /apis log the lower-cased method.
 */
export function kubeVerb(method: string, target: string): string {
  const [path, query = ""] = target.split("?", 2);
  const parts = path.split("/").filter((p) => p !== "");
  const lower = method.toLowerCase();
  let rest: string[];
  if (parts[0] === "api" && parts.length >= 2) rest = parts.slice(2);
  else if (parts[0] === "apis" && parts.length >= 3) rest = parts.slice(3);
  else return lower;
  if (rest[0] === "watch") return "watch"; // the deprecated /watch/ prefix
  if (rest[0] === "namespaces" && rest.length >= 3) rest = rest.slice(2);
  const collection = rest.length <= 1;
  switch (method) {
    case "GET":
    case "HEAD": {
      const watch = new URLSearchParams(query).get("watch");
      if (watch === "true" || watch === "1") return "watch";
      return collection ? "list" : "get";
    }
    case "POST":
      return "create";
    case "PUT":
      return "update";
    case "PATCH":
      return "patch";
    case "DELETE":
      return collection ? "deletecollection" : "delete";
    default:
      return lower;
  }
}
