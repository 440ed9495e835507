/**
 * The fake's policy engine: the subset of Headscale 0.29's validation an operator can trip over (HuJSON syntax,
 * unknown top-level fields, undefined tags, grants without ip/app, via, ACL/SSH actions) with Headscale's
 * wording, plus route auto-approval. Deliberately permissive elsewhere: a fake that rejects a policy the real
 * server accepts would be worse than one that accepts too much. Checked against the captured Tailscale verdicts
 * in ../shared/headscale/policies (see test/headscale/fake-policy.test.ts).
 */

import ipaddr from "ipaddr.js";
import { type ParseError, parse, printParseErrorCode } from "jsonc-parser";

export type FakeVersion = "0.29" | "0.28";

export interface ParsedPolicy {
  tagOwners: Set<string>;
  groups: Map<string, string[]>;
  autoApproverRoutes: Array<{ prefix: string; approvers: string[] }>;
  exitNodeApprovers: string[];
}

export type PolicyParse =
  | { ok: true; policy: ParsedPolicy }
  /** `message` is what Headscale puts after "setting policy: " (PUT) or returns alone (check). */
  | { ok: false; message: string };

const TOP_LEVEL_028 = ["groups", "tagOwners", "hosts", "acls", "autoApprovers", "ssh"];
const TOP_LEVEL_029 = [...TOP_LEVEL_028, "grants", "nodeAttrs", "tests", "sshTests", "randomizeClientPort"];

type Json = Record<string, unknown>;

function isObject(value: unknown): value is Json {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** Go's encoding/json matches field names case-insensitively. */
function field(obj: Json, name: string): unknown {
  const lower = name.toLowerCase();
  for (const [key, value] of Object.entries(obj)) if (key.toLowerCase() === lower) return value;
  return undefined;
}

function stringList(value: unknown): string[] {
  return Array.isArray(value) ? value.filter((v): v is string => typeof v === "string") : [];
}

/** Aliases as Tailscale reads them: surrounding whitespace is ignored. */
function aliasList(value: unknown): string[] {
  return stringList(value).map((s) => s.trim());
}

function objectList(value: unknown): Json[] {
  return Array.isArray(value) ? value.filter(isObject) : [];
}

export function parsePolicy(text: string, version: FakeVersion = "0.29"): PolicyParse {
  // Headscale treats empty bytes as "no policy" (allow all).
  if (text.trim() === "") return { ok: true, policy: emptyPolicy() };
  const errors: ParseError[] = [];
  const doc: unknown = parse(text, errors, { allowTrailingComma: true, disallowComments: false });
  if (errors.length > 0) {
    const first = errors[0];
    return { ok: false, message: `parsing HuJSON: ${printParseErrorCode(first.error)} at offset ${first.offset}` };
  }
  if (!isObject(doc)) {
    return { ok: false, message: "parsing policy: json: cannot unmarshal into Go value of type v2.Policy" };
  }
  const problems = validate(doc, version);
  if (problems.length === 1) return { ok: false, message: `parsing policy: ${problems[0]}` };
  if (problems.length > 1)
    return { ok: false, message: `parsing policy: multiple errors:\n\t${problems.join("\n\t")}` };
  return { ok: true, policy: summarise(doc) };
}

function emptyPolicy(): ParsedPolicy {
  return { tagOwners: new Set(), groups: new Map(), autoApproverRoutes: [], exitNodeApprovers: [] };
}

function validate(doc: Json, version: FakeVersion): string[] {
  const allowed = new Set((version === "0.29" ? TOP_LEVEL_029 : TOP_LEVEL_028).map((k) => k.toLowerCase()));
  for (const key of Object.keys(doc)) {
    if (!allowed.has(key.toLowerCase())) {
      // The wording gained a colon in 0.29 (NOTES §1.6).
      return [version === "0.29" ? `unknown field: "${key}"` : `unknown field "${key}"`];
    }
  }
  const tags = new Set(Object.keys(isObject(field(doc, "tagOwners")) ? (field(doc, "tagOwners") as Json) : {}));
  const problems: string[] = [];
  const tagKnown = (tag: string) => !tag.startsWith("tag:") || tags.has(tag);

  const owners = field(doc, "tagOwners");
  if (isObject(owners)) {
    for (const [tag, list] of Object.entries(owners)) {
      for (const owner of stringList(list)) {
        if (!tagKnown(owner)) problems.push(`tagOwners["${tag}"]: tag not found: "${owner}"`);
      }
    }
  }

  for (const acl of objectList(field(doc, "acls"))) {
    const action = field(acl, "action");
    if (action !== "accept") problems.push(`action="${String(action ?? "")}" is not supported`);
    for (const src of aliasList(field(acl, "src"))) if (!tagKnown(src)) problems.push(`src=tag not found: "${src}"`);
    for (const dst of aliasList(field(acl, "dst"))) {
      const alias = dstAlias(dst);
      if (!tagKnown(alias)) problems.push(`dst="${alias}": tag not found: "${alias}"`);
    }
  }

  for (const grant of objectList(field(doc, "grants"))) {
    for (const src of aliasList(field(grant, "src"))) if (!tagKnown(src)) problems.push(`src=tag not found: "${src}"`);
    for (const dst of aliasList(field(grant, "dst"))) {
      if (!tagKnown(dst)) problems.push(`dst="${dst}": tag not found: "${dst}"`);
    }
    // 0.29 refuses a raw default route as a grant destination, once per grant
    // (hscontrol/policy/v2/types.go ErrGrantDefaultRouteCIDR).
    const defaultRoute = aliasList(field(grant, "dst")).find(isDefaultRoute);
    if (defaultRoute !== undefined) {
      problems.push(
        `dst "${canonicalPrefix(defaultRoute)}": to allow all IP addresses, use "*" or "autogroup:internet"`,
      );
    }
    const ip = stringList(field(grant, "ip"));
    const app = field(grant, "app");
    if (ip.length === 0 && !(isObject(app) && Object.keys(app).length > 0)) {
      problems.push("ip and app can not both be empty");
    }
    for (const via of aliasList(field(grant, "via"))) {
      if (!via.startsWith("tag:")) problems.push("via can only be a tag");
      else if (!tags.has(via)) problems.push(`tag "${via}" not found`);
    }
  }

  for (const rule of objectList(field(doc, "ssh"))) {
    const raw = field(rule, "action");
    const action = typeof raw === "string" ? raw.trim() : raw;
    if (action === undefined || action === null || action === "") problems.push("action must be specified");
    else if (action !== "accept" && action !== "check") problems.push(`"${String(action)}" is not a valid action`);
    for (const src of aliasList(field(rule, "src"))) if (!tagKnown(src)) problems.push(`src=tag not found: "${src}"`);
    for (const dst of aliasList(field(rule, "dst"))) {
      if (!tagKnown(dst)) problems.push(`dst="${dst}": tag not found: "${dst}"`);
    }
  }

  const approvers = field(doc, "autoApprovers");
  if (isObject(approvers)) {
    for (const key of Object.keys(approvers)) {
      if (!["routes", "exitnode"].includes(key.toLowerCase())) problems.push(`autoApprovers: unknown field: "${key}"`);
    }
    const routes = field(approvers, "routes");
    if (isObject(routes)) {
      for (const [prefix, list] of Object.entries(routes)) {
        if (!ipaddr.isValidCIDR(prefix)) problems.push(`autoApprovers: invalid route prefix "${prefix}"`);
        for (const a of stringList(list)) if (!tagKnown(a)) problems.push(`autoApprovers=tag not found: "${a}"`);
      }
    }
    for (const a of stringList(field(approvers, "exitNode"))) {
      if (!tagKnown(a)) problems.push(`autoApprovers=tag not found: "${a}"`);
    }
  }
  return problems;
}

/** A CIDR of length 0 (netip.Prefix.Bits() == 0), e.g. "0.0.0.0/0" or "::/0". */
function isDefaultRoute(alias: string): boolean {
  if (!ipaddr.isValidCIDR(alias)) return false;
  return ipaddr.parseCIDR(alias)[1] === 0;
}

/** The prefix as Go's netip.Prefix.String() prints it ("0:0::/0" → "::/0"). */
function canonicalPrefix(cidr: string): string {
  const [addr, bits] = ipaddr.parseCIDR(cidr);
  return `${addr.toString()}/${bits}`;
}

/** "tag:server:22" → "tag:server"; non-tag destinations are returned unchanged (only tags are checked). */
function dstAlias(dst: string): string {
  if (!dst.startsWith("tag:")) return dst;
  const rest = dst.slice(4);
  const colon = rest.indexOf(":");
  return colon === -1 ? dst : `tag:${rest.slice(0, colon)}`;
}

function summarise(doc: Json): ParsedPolicy {
  const owners = field(doc, "tagOwners");
  const groupsField = field(doc, "groups");
  const groups = new Map<string, string[]>();
  if (isObject(groupsField))
    for (const [name, members] of Object.entries(groupsField)) groups.set(name, stringList(members));
  const approvers = field(doc, "autoApprovers");
  const routes = isObject(approvers) ? field(approvers, "routes") : undefined;
  return {
    tagOwners: new Set(isObject(owners) ? Object.keys(owners) : []),
    groups,
    autoApproverRoutes: isObject(routes)
      ? Object.entries(routes).map(([prefix, list]) => ({ prefix, approvers: stringList(list) }))
      : [],
    exitNodeApprovers: isObject(approvers) ? stringList(field(approvers, "exitNode")) : [],
  };
}

export const EXIT_ROUTES = ["0.0.0.0/0", "::/0"] as const;

export function isExitRoute(prefix: string): boolean {
  return prefix === "0.0.0.0/0" || prefix === "::/0";
}

/** True when `outer` contains `inner` (same family, outer no longer than inner, same network bits). */
export function prefixContains(outer: string, inner: string): boolean {
  try {
    const [oAddr, oLen] = ipaddr.parseCIDR(outer);
    const [iAddr, iLen] = ipaddr.parseCIDR(inner);
    if (oAddr.kind() !== iAddr.kind() || oLen > iLen) return false;
    return iAddr.match(oAddr, oLen);
  } catch {
    return false;
  }
}

/** Identities a node is approved by: its tags, or for a user-owned node `user@` and the groups holding it. */
function identities(policy: ParsedPolicy, tags: string[], userName: string | null): Set<string> {
  const out = new Set(tags);
  if (tags.length === 0 && userName) {
    out.add(`${userName}@`);
    for (const [group, members] of policy.groups) {
      if (members.some((m) => m === `${userName}@` || m.split("@")[0] === userName)) out.add(group);
    }
  }
  return out;
}

/**
 * Headscale's ApproveRoutesWithPolicy: additive only. An announced route is approved when an autoApprovers
 * prefix containing it lists one of the node's identities; exit routes only through `exitNode`.
 */
export function autoApprove(
  policy: ParsedPolicy,
  node: { tags: string[]; userName: string | null; availableRoutes: string[]; approvedRoutes: string[] },
): string[] {
  const who = identities(policy, node.tags, node.userName);
  const matches = (approvers: string[]) => approvers.some((a) => who.has(a));
  const approved = new Set(node.approvedRoutes);
  for (const route of node.availableRoutes) {
    if (approved.has(route)) continue;
    if (isExitRoute(route)) {
      if (matches(policy.exitNodeApprovers)) approved.add(route);
    } else if (policy.autoApproverRoutes.some((r) => prefixContains(r.prefix, route) && matches(r.approvers))) {
      approved.add(route);
    }
  }
  return normaliseRoutes([...approved]);
}

/** Deduplicated, both exit routes when either is present, IPv4 before IPv6, then by address and length. */
export function normaliseRoutes(routes: string[]): string[] {
  const set = new Set(routes);
  if (routes.some(isExitRoute)) for (const exit of EXIT_ROUTES) set.add(exit);
  return [...set].sort(compareRoutes);
}

function compareRoutes(a: string, b: string): number {
  try {
    const [aAddr, aLen] = ipaddr.parseCIDR(a);
    const [bAddr, bLen] = ipaddr.parseCIDR(b);
    if (aAddr.kind() !== bAddr.kind()) return aAddr.kind() === "ipv4" ? -1 : 1;
    const aBytes = aAddr.toByteArray();
    const bBytes = bAddr.toByteArray();
    for (let i = 0; i < aBytes.length; i++) if (aBytes[i] !== bBytes[i]) return aBytes[i] - bBytes[i];
    return aLen - bLen;
  } catch {
    return a < b ? -1 : a > b ? 1 : 0;
  }
}
