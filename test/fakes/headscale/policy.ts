/**
 * The fake's policy engine: Headscale 0.29.2's validation as far as an operator can trip over it, with its exact
 * wording (hscontrol/policy/v2/types.go `unmarshalPolicy` and `Policy.validate`, test.go): HuJSON syntax, unknown
 * fields at every depth (the first in document order, alone), then every problem of `validate` in its order —
 * undefined groups, tags and hosts wherever they appear (acls, ssh, grants, nodeAttrs, tagOwners, autoApprovers),
 * autogroups where they are not allowed, autogroup:self with other sources, SSH actions, users, acceptEnv and
 * checkPeriod, grants without ip/app, app capability names, default-route grant destinations, via — and last the
 * `tests` block, evaluated against the fake's users and nodes. Deliberately permissive elsewhere: a fake that
 * rejects a policy the real server accepts would be worse than one that accepts too much. Held to verdicts of the
 * real 0.29.2 binary (real-verdicts.json, see policy.test.ts).
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

/** What `tests` are evaluated against: the server's users and nodes (Headscale compiles the policy for them). */
export interface PolicyWorld {
  users: Array<{ name: string; email: string }>;
  nodes: Array<{ ipv4: string; ipv6: string; tags: string[]; userName: string | null }>;
}

/**
 * Parses and validates a policy as Headscale's SetPolicy / CheckPolicy do. `world` (the server's users and nodes)
 * is needed for the `tests` block; without it the tests are not run (a policy already in force is not re-judged).
 */
export function parsePolicy(text: string, version: FakeVersion = "0.29", world?: PolicyWorld): PolicyParse {
  // Headscale treats empty bytes as "no policy" (allow all).
  if (text.trim() === "") return { ok: true, policy: emptyPolicy() };
  const errors: ParseError[] = [];
  const doc: unknown = parse(text, errors, { allowTrailingComma: true, disallowComments: false });
  if (errors.length > 0) {
    return { ok: false, message: `parsing policy: ${hujsonError(text, errors[0])}` };
  }
  if (!isObject(doc)) {
    return { ok: false, message: "parsing policy: json: cannot unmarshal into Go value of type v2.Policy" };
  }
  // Unmarshalling stops at the first problem in document order: it is reported alone.
  const unmarshal = unmarshalProblem(doc, version);
  if (unmarshal !== undefined) return { ok: false, message: `parsing policy: ${unmarshal}` };
  const viaNotTag = objectList(field(doc, "grants")).some((g) =>
    aliasList(field(g, "via")).some((v) => !v.startsWith("tag:")),
  );
  if (viaNotTag) return { ok: false, message: "parsing policy: via can only be a tag" };
  const problems = validate(doc);
  if (problems.length === 1) return { ok: false, message: `parsing policy: ${problems[0]}` };
  if (problems.length > 1) return { ok: false, message: `parsing policy: ${multiErr(problems)}` };
  // The tests run last, against a sandbox compiled from the new policy (policy.go SetPolicy, test.go): their
  // failure carries no "parsing policy:" prefix.
  const failed = world ? runTests(doc, world) : [];
  if (failed.length > 0) return { ok: false, message: `test(s) failed:\n${failed.join("\n")}` };
  return { ok: true, policy: summarise(doc) };
}

/**
 * A syntax error as the real 0.29.2 words it (seen against the real server, test/real/headscale.test.ts):
 * "parsing HuJSON: hujson: line L, column C: <what>" (policy/v2/types.go wraps github.com/tailscale/hujson,
 * whose parse.go reports 1-based line and byte column). A stray word is hujson's "invalid literal: <word>";
 * other syntax errors keep the real prefix and position with jsonc-parser's name for the problem.
 */
function hujsonError(text: string, error: ParseError): string {
  const before = text.slice(0, error.offset);
  const line = before.split("\n").length;
  const column = error.offset - before.lastIndexOf("\n");
  const word = /^[A-Za-z0-9_.+-]+/.exec(text.slice(error.offset))?.[0];
  const what = word && /^[A-Za-z]/.test(word) ? `invalid literal: ${word}` : printParseErrorCode(error.error);
  return `parsing HuJSON: hujson: line ${line}, column ${column}: ${what}`;
}

/** tailscale.com/util/multierr's wording. */
function multiErr(problems: string[]): string {
  return problems.length === 1 ? problems[0] : `multiple errors:\n\t${problems.join("\n\t")}`;
}

function emptyPolicy(): ParsedPolicy {
  return { tagOwners: new Set(), groups: new Map(), autoApproverRoutes: [], exitNodeApprovers: [] };
}

// ---- unknown fields: encoding/json/v2 with RejectUnknownMembers and case-insensitive names ----

const TOP_LEVEL_028 = ["groups", "tagOwners", "hosts", "acls", "autoApprovers", "ssh"];
const TOP_LEVEL_029 = [
  "groups",
  "hosts",
  "tagOwners",
  "acls",
  "grants",
  "nodeAttrs",
  "autoApprovers",
  "ssh",
  "tests",
  "sshTests",
  "randomizeClientPort",
];
/** Members of each struct, lower-cased; list sections hold objects of the named shape. */
const SHAPES: Record<string, string[]> = {
  acls: ["action", "proto", "src", "dst"],
  grants: ["src", "dst", "ip", "app", "via"],
  ssh: ["action", "src", "dst", "users", "checkperiod", "acceptenv"],
  nodeattrs: ["target", "attr", "ippool"],
  tests: ["src", "proto", "accept", "deny"],
  sshtests: ["src", "dst", "accept", "deny"],
  autoapprovers: ["routes", "exitnode"],
};

/**
 * The first problem json.Unmarshal meets, in document order (types.go unmarshalPolicy): an unknown member, or
 * an ACL / SSH action its type refuses. Undefined when the document decodes.
 */
function unmarshalProblem(doc: Json, version: FakeVersion): string | undefined {
  // The wording gained a colon in 0.29 (NOTES §1.6).
  const unknown = (name: string) => (version === "0.29" ? `unknown field: "${name}"` : `unknown field "${name}"`);
  const top = new Set((version === "0.29" ? TOP_LEVEL_029 : TOP_LEVEL_028).map((k) => k.toLowerCase()));
  for (const [key, value] of Object.entries(doc)) {
    const name = key.toLowerCase();
    if (!top.has(name)) return unknown(key);
    const shape = SHAPES[name];
    if (!shape) continue;
    const items = name === "autoapprovers" ? [value] : Array.isArray(value) ? value : [];
    for (const [i, item] of items.entries()) {
      if (!isObject(item)) continue;
      for (const [member, v] of Object.entries(item)) {
        // ACL entries drop "#" keys before decoding (kept for headscale-admin; types.go ACL.UnmarshalJSON).
        if (name === "acls" && member.startsWith("#")) continue;
        if (!shape.includes(member.toLowerCase())) return unknown(member);
        if (name === "ssh" && member.toLowerCase() === "checkperiod" && typeof v === "string" && v !== "always") {
          if (goDurationNs(v) === undefined) {
            return `parsing policy from bytes: json: cannot unmarshal JSON string into Go v2.SSHCheckPeriod within "/${key}/${i}/${member}": time: invalid duration "${v}"`;
          }
        }
        if (member.toLowerCase() !== "action" || typeof v !== "string") continue;
        const action = v.trim();
        const at = `within "/${key}/${i}/${member}"`;
        if (name === "acls" && action !== "accept") {
          return `parsing policy from bytes: json: cannot unmarshal JSON string into Go v2.Action ${at}: action="${v}" is not supported: invalid ACL action`;
        }
        if (name === "ssh" && action !== "" && action !== "accept" && action !== "check") {
          return `parsing policy from bytes: json: cannot unmarshal JSON string into Go v2.SSHAction ${at}: "${v}" is not a valid action`;
        }
      }
    }
  }
  return undefined;
}

// ---- aliases ----

type AliasKind = "wildcard" | "autogroup" | "group" | "tag" | "user" | "prefix" | "host";

function aliasKind(alias: string): AliasKind {
  if (alias === "*") return "wildcard";
  if (alias.startsWith("autogroup:")) return "autogroup";
  if (alias.startsWith("group:")) return "group";
  if (alias.startsWith("tag:")) return "tag";
  if (alias.includes("@")) return "user";
  return isIpOrCidr(alias) ? "prefix" : "host";
}

function isIpOrCidr(s: string): boolean {
  return ipaddr.isValid(s) || ipaddr.isValidCIDR(s);
}

/** "tag:server:22" → "tag:server", "[fd7a::1]:80" → "fd7a::1": an ACL destination without its ports. */
function splitHostPort(dst: string): { alias: string; ports: string } {
  const at = dst.lastIndexOf(":");
  if (at === -1) return { alias: dst, ports: "" };
  let alias = dst.slice(0, at);
  if (alias.startsWith("[") && alias.endsWith("]")) alias = alias.slice(1, -1);
  return { alias, ports: dst.slice(at + 1) };
}

const AUTOGROUPS = {
  src: ["autogroup:member", "autogroup:tagged", "autogroup:danger-all"],
  dst: ["autogroup:internet", "autogroup:member", "autogroup:tagged", "autogroup:self"],
  sshSrc: ["autogroup:member", "autogroup:tagged"],
  sshDst: ["autogroup:member", "autogroup:tagged", "autogroup:self"],
  nodeAttrs: ["autogroup:member", "autogroup:tagged"],
};
const goList = (names: string[]) => `[${names.join(" ")}]`;
/** Peer capabilities of tailscale.com that grants may use (types.go tailscaleCapAllowlist). */
const TAILSCALE_CAPS = ["drive", "relay", "webui", "kubernetes", "tsidp"].map((c) => `tailscale.com/cap/${c}`);

function autogroupSrcProblem(ag: string): string | undefined {
  if (ag === "autogroup:internet") return "autogroup:internet can only be used in ACL destinations";
  if (ag === "autogroup:self") return '"autogroup:self" not valid on the src side of a rule';
  if (!AUTOGROUPS.src.includes(ag))
    return `autogroup not supported for ACL sources: "${ag}", can be ${goList(AUTOGROUPS.src)}`;
  return undefined;
}

function autogroupDstProblem(ag: string): string | undefined {
  if (ag === "autogroup:danger-all") return "cannot use autogroup:danger-all as a dst";
  if (!AUTOGROUPS.dst.includes(ag))
    return `autogroup not supported for ACL destinations: "${ag}", can be ${goList(AUTOGROUPS.dst)}`;
  return undefined;
}

// ---- validate(): every problem, in the order of types.go Policy.validate ----

/** The names a policy defines, and the problems found so far, in the order types.go reports them. */
interface Checker {
  tags: Set<string>;
  hosts: Set<string>;
  problems: string[];
  group(g: string): void;
  host(h: string): void;
  tag(t: string, wrap?: (m: string) => string): void;
  /** acls and grants check their sources alike */
  checkSources(srcs: string[]): void;
  /** and their destinations, but for how an undefined tag is worded */
  checkDestinations(dsts: string[], wrapTag?: (dst: string, m: string) => string): void;
}

function checker(doc: Json): Checker {
  const keysOf = (name: string) => {
    const v = field(doc, name);
    return new Set(isObject(v) ? Object.keys(v) : []);
  };
  const groups = keysOf("groups");
  const tags = keysOf("tagOwners");
  const hosts = keysOf("hosts");
  const problems: string[] = [];
  const group = (g: string) => {
    if (!groups.has(g)) problems.push(`group not defined in policy: "${g}"`);
  };
  const host = (h: string) => {
    if (!hosts.has(h)) problems.push(`host not defined in policy: "${h}"`);
  };
  const tag = (t: string, wrap = (m: string) => m) => {
    if (!tags.has(t)) problems.push(wrap(`tag not found: "${t}"`));
  };
  const checkSources = (srcs: string[]) => {
    for (const src of srcs) {
      const kind = aliasKind(src);
      if (kind === "host") host(src);
      else if (kind === "autogroup") {
        const p = autogroupSrcProblem(src);
        if (p) problems.push(p);
      } else if (kind === "group") group(src);
      else if (kind === "tag") tag(src, (m) => `src=${m}`);
    }
  };
  const checkDestinations = (dsts: string[], wrapTag?: (dst: string, m: string) => string) => {
    for (const dst of dsts) {
      const kind = aliasKind(dst);
      if (kind === "host") host(dst);
      else if (kind === "autogroup") {
        const p = autogroupDstProblem(dst);
        if (p) problems.push(p);
      } else if (kind === "group") group(dst);
      else if (kind === "tag") tag(dst, wrapTag ? (m) => wrapTag(dst, m) : undefined);
    }
  };
  return { tags, hosts, problems, group, host, tag, checkSources, checkDestinations };
}

function validate(doc: Json): string[] {
  const c = checker(doc);
  validateAcls(c, doc);
  validateSsh(c, doc);
  validateGrants(c, doc);
  validateNodeAttrs(c, doc);
  validateTagOwners(c, doc);
  validateAutoApprovers(c, doc);
  const testProblems = staticTestProblems(doc, c.hosts);
  if (testProblems.length > 0) c.problems.push(`test(s) failed:\n${multiErr(testProblems)}`);
  return c.problems;
}

/** acls: sources, destinations with parseable ports, autogroup:self. */
function validateAcls(c: Checker, doc: Json): void {
  for (const acl of objectList(field(doc, "acls"))) {
    const srcs = aliasList(field(acl, "src"));
    c.checkSources(srcs);
    // A destination whose ports do not parse fails decoding with a message of Go's own; the fake lets it pass.
    const dsts = aliasList(field(acl, "dst"))
      .map(splitHostPort)
      .filter((d) => PORTS.test(d.ports))
      .map((d) => d.alias);
    // an ACL's message for an undefined tag names the destination; a grant's does not
    c.checkDestinations(dsts, (dst, m) => `dst="${dst}": ${m}`);
    if (dsts.includes("autogroup:self")) {
      const bad = srcs.some((s) => !["user", "group", "wildcard"].includes(aliasKind(s)) && s !== "autogroup:member");
      if (bad) c.problems.push("autogroup:self can only be used with users, groups, or supported autogroups");
    }
  }
}

/** ssh: action, users, acceptEnv, sources, destinations, checkPeriod. */
function validateSsh(c: Checker, doc: Json): void {
  for (const rule of objectList(field(doc, "ssh"))) {
    const raw = field(rule, "action");
    if (raw === undefined || raw === null || (typeof raw === "string" && raw.trim() === "")) {
      c.problems.push("action must be specified");
    }
    const users = stringList(field(rule, "users"));
    if (users.length === 0) c.problems.push("users must be specified");
    for (const u of users) if (u === "" || u === "*") c.problems.push(`user "${u}" is not valid`);
    for (const env of stringList(field(rule, "acceptEnv"))) {
      if (env === "") c.problems.push("acceptEnv values cannot be empty");
    }
    for (const src of aliasList(field(rule, "src"))) {
      const kind = aliasKind(src);
      if (kind === "autogroup") {
        if (src === "autogroup:internet") c.problems.push("autogroup:internet can only be used in ACL destinations");
        else if (!AUTOGROUPS.sshSrc.includes(src)) {
          c.problems.push(`autogroup not supported for SSH sources: "${src}", can be ${goList(AUTOGROUPS.sshSrc)}`);
        }
      } else if (kind === "group") c.group(src);
      else if (kind === "tag") c.tag(src);
    }
    for (const dst of aliasList(field(rule, "dst"))) {
      const kind = aliasKind(dst);
      if (kind === "autogroup") {
        if (dst === "autogroup:internet") c.problems.push("autogroup:internet can only be used in ACL destinations");
        else if (!AUTOGROUPS.sshDst.includes(dst)) {
          c.problems.push(
            `autogroup not supported for SSH destinations: "${dst}", can be ${goList(AUTOGROUPS.sshDst)}`,
          );
        }
      } else if (kind === "tag") c.tag(dst);
      else if (kind === "host") c.problems.push(`invalid dst "${dst}"`);
    }
    const period = field(rule, "checkPeriod");
    if (typeof period === "string") {
      const action = typeof raw === "string" ? raw.trim() : raw;
      const ns = period === "always" ? 0 : goDurationNs(period);
      if (action !== "check") c.problems.push('checkPeriod is only valid with action "check"');
      else if (ns !== undefined && ns < 0)
        c.problems.push(`checkPeriod ${goDurationString(ns)} must be a positive duration`);
      else if (ns !== undefined && ns > CHECK_PERIOD_MAX_NS) {
        c.problems.push(`checkPeriod ${goDurationString(ns)} is above the max (168h)`);
      }
    }
  }
}

/** grants: ip or app, capability names, destinations, via tags, autogroup:self. */
function validateGrants(c: Checker, doc: Json): void {
  for (const grant of objectList(field(doc, "grants"))) {
    const ip = stringList(field(grant, "ip"));
    const app = field(grant, "app");
    const apps = isObject(app) ? Object.keys(app) : [];
    if (ip.length === 0 && apps.length === 0) c.problems.push("ip and app can not both be empty");
    for (const cap of apps) {
      if (cap.includes("://")) c.problems.push("capability name must have the form {domain}/{path}");
      else if (cap.startsWith("tailscale.com/") && !TAILSCALE_CAPS.includes(cap)) {
        c.problems.push("capability name must not be in the tailscale.com domain");
      }
    }
    const srcs = aliasList(field(grant, "src"));
    const dsts = aliasList(field(grant, "dst"));
    if (apps.length > 0 && dsts.includes("autogroup:internet")) {
      c.problems.push("cannot use app grants with autogroup:internet");
    }
    // Tailscale refuses raw default routes as grant destinations (types.go ErrGrantDefaultRouteCIDR); only the
    // first of a grant is reported.
    const defaultRoute = dsts.find((d) => ipaddr.isValidCIDR(d) && ipaddr.parseCIDR(d)[1] === 0);
    if (defaultRoute !== undefined) {
      c.problems.push(`dst "${defaultRoute}": to allow all IP addresses, use "*" or "autogroup:internet"`);
    }
    c.checkSources(srcs);
    c.checkDestinations(dsts);
    for (const via of aliasList(field(grant, "via"))) if (!c.tags.has(via)) c.problems.push(`tag "${via}" not found`);
    if (dsts.includes("autogroup:self")) {
      const bad = srcs.some((s) => !["user", "group"].includes(aliasKind(s)) && s !== "autogroup:member");
      if (bad) c.problems.push("autogroup:self can only be used with users, groups, or supported autogroups");
    }
  }
}

/** nodeAttrs: targets. */
function validateNodeAttrs(c: Checker, doc: Json): void {
  for (const attr of objectList(field(doc, "nodeAttrs"))) {
    for (const target of aliasList(field(attr, "target"))) {
      const kind = aliasKind(target);
      if (kind === "host") c.host(target);
      else if (kind === "autogroup" && !AUTOGROUPS.nodeAttrs.includes(target)) {
        c.problems.push(`nodeAttrs target does not support this autogroup: "${target}"`);
      } else if (kind === "group") c.group(target);
      else if (kind === "tag") c.tag(target);
    }
  }
}

/** tagOwners: owners, then the first owner chain reaching an undefined tag. */
function validateTagOwners(c: Checker, doc: Json): void {
  const owners = field(doc, "tagOwners");
  if (isObject(owners)) {
    for (const list of Object.values(owners)) {
      for (const owner of aliasList(list)) {
        if (aliasKind(owner) === "group") c.group(owner);
        else if (aliasKind(owner) === "tag") c.tag(owner);
      }
    }
    // policy.go flattenTagOwners: the first owner chain reaching an undefined tag.
    for (const [t, list] of Object.entries(owners)) {
      const missing = aliasList(list).find((o) => o.startsWith("tag:") && !c.tags.has(o));
      if (missing !== undefined) {
        c.problems.push(`tag "${t}" references undefined tag "${missing}"`);
        break;
      }
    }
  }
}

/** autoApprovers: route and exit-node approvers. */
function validateAutoApprovers(c: Checker, doc: Json): void {
  const approvers = field(doc, "autoApprovers");
  if (isObject(approvers)) {
    const routes = field(approvers, "routes");
    const lists = isObject(routes) ? Object.values(routes) : [];
    for (const list of [...lists, field(approvers, "exitNode")]) {
      for (const a of aliasList(list)) {
        if (aliasKind(a) === "group") c.group(a);
        else if (aliasKind(a) === "tag") c.tag(a);
      }
    }
  }
}

// ---- Go durations (time.ParseDuration / Duration.String), for SSH checkPeriod ----

const CHECK_PERIOD_MAX_NS = 168 * 3600 * 1e9;
const UNIT_NS: Record<string, number> = { ns: 1, us: 1e3, µs: 1e3, μs: 1e3, ms: 1e6, s: 1e9, m: 60e9, h: 3600e9 };

/** Nanoseconds of a Go duration text; undefined where time.ParseDuration fails. */
function goDurationNs(text: string): number | undefined {
  if (text === "0") return 0;
  const m = /^([-+]?)((?:(?:\d+(?:\.\d*)?|\.\d+)(?:ns|us|µs|μs|ms|s|m|h))+)$/.exec(text);
  if (!m) return undefined;
  let total = 0;
  for (const part of m[2].matchAll(/(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h)/g)) {
    total += Number(part[1]) * UNIT_NS[part[2]];
  }
  return m[1] === "-" ? -total : total;
}

/** Go's Duration.String for the values policies use ("168h0m1s", "-1m0s", "500ms"). */
function goDurationString(ns: number): string {
  if (ns === 0) return "0s";
  const sign = ns < 0 ? "-" : "";
  const abs = Math.abs(ns);
  if (abs < 1e9) {
    for (const [unit, size] of [
      ["ms", 1e6],
      ["µs", 1e3],
    ] as const) {
      if (abs >= size) return `${sign}${abs / size}${unit}`;
    }
    return `${sign}${abs}ns`;
  }
  const h = Math.floor(abs / 3600e9);
  const m = Math.floor((abs % 3600e9) / 60e9);
  const sec = (abs % 60e9) / 1e9;
  const secs = `${Number(sec.toFixed(9))}s`;
  if (h > 0) return `${sign}${h}h${m}m${secs}`;
  if (m > 0) return `${sign}${m}m${secs}`;
  return `${sign}${secs}`;
}

// ---- tests (test.go) ----

/** types.go validateTests: shape problems of the `tests` block, part of validate(). */
function staticTestProblems(doc: Json, hosts: Set<string>): string[] {
  const out: string[] = [];
  objectList(field(doc, "tests")).forEach((t, i) => {
    const accept = stringList(field(t, "accept"));
    const deny = stringList(field(t, "deny"));
    if (accept.length === 0 && deny.length === 0) {
      out.push(`test ${i}: test entry must have at least one of "accept" or "deny"`);
    }
    const proto = field(t, "proto");
    if (typeof proto === "string" && proto !== "" && !["tcp", "udp", "sctp"].includes(proto)) {
      out.push(`test ${i}: test protocol must be tcp, udp, sctp, or empty: "${proto}"`);
    }
    for (const [list, what] of [
      [accept, "accept"],
      [deny, "deny"],
    ] as const) {
      for (const dst of list) {
        const problem = testDestinationProblem(dst, hosts);
        if (problem) out.push(`test ${i}, ${what} "${dst}": ${problem}`);
      }
    }
  });
  return out;
}

function testDestinationProblem(dst: string, _hosts: Set<string>): string | undefined {
  const { alias, ports } = splitHostPort(dst);
  if (alias === "autogroup:internet") return "autogroup:internet not valid as a test destination";
  if (!/^\d+$/.test(ports)) return "test destination port must be a single port";
  if (alias.includes("/")) return "test destination must be a single host, not a CIDR range";
  return undefined;
}

interface Rule {
  src: string[];
  /** IP prefixes with port ranges. */
  dst: Array<{ prefixes: string[]; ports: [number, number][] }>;
  /** Protocol names; empty = any. */
  protos: string[];
}

/** An ACL destination's port part: "*", or ports and ranges separated by commas. */
const PORTS = /^(\*|\d+(-\d+)?(,\d+(-\d+)?)*)$/;

const TAILNET_RANGES = ["100.64.0.0/10", "fd7a:115c:a1e0::/48"];
const ALL_PORTS: [number, number][] = [[0, 65535]];

function parsePorts(spec: string): [number, number][] {
  if (spec === "*" || spec === "") return ALL_PORTS;
  return spec.split(",").map((part) => {
    const [a, b] = part.split("-");
    return [Number(a), Number(b ?? a)] as [number, number];
  });
}

/** The prefixes an alias stands for among the fake's users and nodes; an error text when it cannot resolve. */
function resolveAlias(alias: string, doc: Json, world: PolicyWorld): { prefixes: string[] } | { error: string } {
  const ips = (nodes: PolicyWorld["nodes"]) => nodes.flatMap((n) => [`${n.ipv4}/32`, `${n.ipv6}/128`]);
  const groups = field(doc, "groups");
  const hosts = field(doc, "hosts");
  switch (aliasKind(alias)) {
    case "wildcard":
      return { prefixes: TAILNET_RANGES };
    case "tag":
      return { prefixes: ips(world.nodes.filter((n) => n.tags.includes(alias))) };
    case "user": {
      const user = world.users.find((u) => `${u.name}@` === alias || u.email === alias);
      if (!user) return { error: `user not found: token "${alias}"` };
      return { prefixes: ips(world.nodes.filter((n) => n.tags.length === 0 && n.userName === user.name)) };
    }
    case "group": {
      const members = isObject(groups) ? aliasList(groups[alias]) : [];
      const out: string[] = [];
      for (const m of members) {
        const r = resolveAlias(m, doc, world);
        if ("prefixes" in r) out.push(...r.prefixes);
      }
      return { prefixes: out };
    }
    case "autogroup":
      if (alias === "autogroup:tagged") return { prefixes: ips(world.nodes.filter((n) => n.tags.length > 0)) };
      if (alias === "autogroup:member" || alias === "autogroup:self") {
        return { prefixes: ips(world.nodes.filter((n) => n.tags.length === 0 && n.userName !== null)) };
      }
      if (alias === "autogroup:danger-all") return { prefixes: ["0.0.0.0/0", "::/0"] };
      return { prefixes: [] };
    case "host": {
      const value = isObject(hosts) ? hosts[alias] : undefined;
      return { prefixes: typeof value === "string" ? [asPrefix(value)] : [] };
    }
    default:
      return { prefixes: [asPrefix(alias)] };
  }
}

function asPrefix(ipOrCidr: string): string {
  if (ipaddr.isValidCIDR(ipOrCidr)) return ipOrCidr;
  return ipaddr.isValid(ipOrCidr) ? `${ipOrCidr}/${ipaddr.parse(ipOrCidr).kind() === "ipv4" ? 32 : 128}` : ipOrCidr;
}

function overlaps(a: string, b: string): boolean {
  return prefixContains(a, b) || prefixContains(b, a);
}

/** The filter the ACLs and grants compile to; null = allow all (neither acls nor grants). */
function compileRules(doc: Json, world: PolicyWorld): Rule[] | null {
  const acls = field(doc, "acls");
  const grants = field(doc, "grants");
  if (acls === undefined && grants === undefined) return null;
  const resolve = (aliases: string[]) =>
    aliases.flatMap((a) => {
      const r = resolveAlias(a, doc, world);
      return "prefixes" in r ? r.prefixes : [];
    });
  const rules: Rule[] = [];
  for (const acl of objectList(acls)) {
    const proto = field(acl, "proto");
    rules.push({
      src: resolve(aliasList(field(acl, "src"))),
      dst: aliasList(field(acl, "dst")).map((d) => {
        const { alias, ports } = splitHostPort(d);
        return { prefixes: resolve([alias]), ports: parsePorts(ports) };
      }),
      protos: typeof proto === "string" && proto !== "" ? [proto] : [],
    });
  }
  for (const grant of objectList(grants)) {
    const src = resolve(aliasList(field(grant, "src")));
    const prefixes = resolve(aliasList(field(grant, "dst")));
    for (const ip of stringList(field(grant, "ip"))) {
      const [proto, ports] = ip.includes(":") ? ip.split(":", 2) : /^[\d,-]+$/.test(ip) ? ["", ip] : [ip, "*"];
      rules.push({
        src,
        dst: [{ prefixes, ports: parsePorts(ports) }],
        protos: proto === "*" || proto === "" ? [] : [proto],
      });
    }
  }
  return rules;
}

/** test.go runPolicyTests: one line per failed expectation. */
function runTests(doc: Json, world: PolicyWorld): string[] {
  const tests = objectList(field(doc, "tests"));
  if (tests.length === 0) return [];
  const rules = compileRules(doc, world);
  const lines: string[] = [];
  for (const t of tests) {
    const src = typeof field(t, "src") === "string" ? (field(t, "src") as string) : "";
    const proto = typeof field(t, "proto") === "string" ? (field(t, "proto") as string) : "";
    const suffix = proto ? ` (${proto})` : "";
    const resolved = resolveAlias(src.trim(), doc, world);
    if ("error" in resolved) {
      lines.push(`${src}${suffix}: failed to resolve source "${src}": resolving: ${resolved.error}`);
      continue;
    }
    if (resolved.prefixes.length === 0) {
      lines.push(`${src}${suffix}: source "${src}" resolved to no IP addresses`);
      continue;
    }
    const allowed = (dst: string): boolean | string => {
      const { alias, ports } = splitHostPort(dst);
      const target = resolveAlias(alias, doc, world);
      if ("error" in target) return `resolving destination: ${target.error}`;
      if (target.prefixes.length === 0) return `destination resolved to no IP addresses: "${dst}"`;
      if (rules === null) return true;
      const port = Number(ports);
      const wanted = proto ? [proto] : ["tcp", "udp", "icmp", "ipv6-icmp"];
      return resolved.prefixes.every((s) =>
        rules.some(
          (r) =>
            r.src.some((p) => overlaps(p, s)) &&
            (r.protos.length === 0 || r.protos.some((p) => wanted.includes(p))) &&
            r.dst.some(
              (d) =>
                d.prefixes.some((p) => target.prefixes.some((tp) => overlaps(p, tp))) &&
                d.ports.some(([a, b]) => port >= a && port <= b),
            ),
        ),
      );
    };
    const errors: string[] = [];
    const acceptFail: string[] = [];
    const denyFail: string[] = [];
    for (const dst of stringList(field(t, "accept"))) {
      const r = allowed(dst);
      if (typeof r === "string") errors.push(`error testing "${dst}": ${r}`);
      else if (!r) acceptFail.push(dst);
    }
    for (const dst of stringList(field(t, "deny"))) {
      const r = allowed(dst);
      if (typeof r === "string") errors.push(`error testing "${dst}": ${r}`);
      else if (r) denyFail.push(dst);
    }
    for (const e of errors) lines.push(`${src}${suffix}: ${e}`);
    for (const d of acceptFail) lines.push(`${src} -> ${d}${suffix}: expected ALLOWED, got DENIED`);
    for (const d of denyFail) lines.push(`${src} -> ${d}${suffix}: expected DENIED, got ALLOWED`);
  }
  return lines;
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
