// What one workload object contributes to the tailnet policy (api.md, Tailnet "Policy rendering"): its tags,
// grants, approved routes and exit-node tags, with the values left out because Headscale would refuse the whole
// policy over them. generated.ts merges the contributions into the generated policy.
import { type Cidr, parseCidr } from "../net/cidr.js";
import { coveredDefaultRoutes, INTERNET, isExitNodePrefixes, isExitRoute } from "../net/exit.js";
import type { CollectInput, EgressTargetOutcome, Grant, InvalidInput } from "./generated-types.js";
import {
  buildNodeIndex,
  compileAllowlist,
  type EgressAllowlist,
  isTargetAllowed,
  type NodeIndex,
  resolveTargetHost,
} from "./targets.js";

/** api.md: "tag:" followed by 1–63 of [a-z0-9-], starting with a letter. */
const TAG_RE = /^tag:[a-z][a-z0-9-]{0,62}$/;

export function isValidTag(tag: string): boolean {
  return TAG_RE.test(tag);
}
function isPort(p: number): boolean {
  return Number.isInteger(p) && p >= 1 && p <= 65535;
}

/**
 * What one object contributes to the generated policy, before merging: its tags, grants (ip specs as the
 * object lists them), approved routes, exit-node tags, left-out values and egress target outcomes. The
 * Tailnet's render memoises these per object (src/kinds/composite/tailnet/compose-memo.ts), so a contribution is never
 * modified after it is made: combining copies what it keeps.
 */
export interface Contribution {
  /** Whose contribution this is (the objects' "kind/namespace/name" ids order the left-out lists). */
  owner: ContributionOwner;
  tags: string[];
  grants: Grant[];
  routes: [prefix: string, approvers: string[]][];
  exitNode: string[];
  invalid: InvalidInput[];
  egressTargets: EgressTargetOutcome[];
}

export interface ContributionOwner {
  kind: "ingress" | "egress" | "site" | "gateway";
  namespace: string;
  name: string;
}

/** What an egress contribution reads besides the object: the node list (resolution) and the allowlist. */
export interface EgressContext {
  index: NodeIndex;
  allow: EgressAllowlist;
}

export function egressContext(
  input: Pick<CollectInput, "nodes" | "baseDomain" | "allowedEgressTargets">,
): EgressContext {
  return { index: buildNodeIndex(input.nodes, input.baseDomain), allow: compileAllowlist(input.allowedEgressTargets) };
}

function emptyContribution(kind: ContributionOwner["kind"], o: { namespace: string; name: string }): Contribution {
  return {
    owner: { kind, namespace: o.namespace, name: o.name },
    tags: [],
    grants: [],
    routes: [],
    exitNode: [],
    invalid: [],
    egressTargets: [],
  };
}

/**
 * The routes of `cidrs` that are no exit route in pieces: those of a family the set covers whole
 * (coveredDefaultRoutes: 0.0.0.0/1 + 128.0.0.0/1, …) are recorded as invalid under `field`.
 */
function withoutCoveredFamilies(c: Contribution, cidrs: Cidr[], field: "prefixes" | "routes"): Cidr[] {
  const covered = coveredDefaultRoutes(cidrs.filter((x) => !isExitRoute(x)));
  if (covered.length === 0) return cidrs;
  const families = new Set(covered.map((r) => (r.includes(":") ? 6 : 4)));
  const { namespace, name } = c.owner;
  for (const x of cidrs)
    if (families.has(x.family) && !isExitRoute(x)) c.invalid.push({ namespace, name, field, value: x.text });
  return cidrs.filter((x) => !families.has(x.family) || isExitRoute(x));
}

/** Validators that record what they refuse in `c.invalid`. */
function validators(c: Contribution, namespace: string, name: string) {
  return {
    tag: (field: InvalidInput["field"], tag: string): boolean => {
      if (isValidTag(tag)) return true;
      c.invalid.push({ namespace, name, field, value: tag });
      return false;
    },
    port: (port: number): boolean => {
      if (isPort(port)) return true;
      c.invalid.push({ namespace, name, field: "ports", value: String(port) });
      return false;
    },
    cidrs: (field: InvalidInput["field"], list: string[]): Cidr[] => {
      const out: Cidr[] = [];
      for (const p of list) {
        const r = parseCidr(p.trim());
        if (r.ok) out.push(r.cidr);
        else c.invalid.push({ namespace, name, field, value: p });
      }
      return out;
    },
  };
}

export function ingressContribution(ing: CollectInput["ingresses"][number]): Contribution {
  const c = emptyContribution("ingress", ing);
  const valid = validators(c, ing.namespace, ing.name);
  if (!valid.tag("tag", ing.tag)) return c;
  c.tags.push(ing.tag);
  if (ing.denied || ing.allowFrom.length === 0) return c;
  const ports = ing.ports.filter((p) => valid.port(p));
  if (ports.length > 0) c.grants.push({ src: ing.allowFrom, dst: [ing.tag], ip: ports.map((p) => `tcp:${p}`) });
  return c;
}

export function egressContribution(eg: CollectInput["egresses"][number], ctx: EgressContext): Contribution {
  const c = emptyContribution("egress", eg);
  const valid = validators(c, eg.namespace, eg.name);
  const tagOk = valid.tag("tag", eg.tag);
  if (tagOk) c.tags.push(eg.tag);
  for (const t of eg.targets) {
    const resolved = resolveTargetHost(t.host, ctx.index);
    const outcome: EgressTargetOutcome = {
      namespace: eg.namespace,
      name: eg.name,
      target: t.name,
      host: t.host,
      address: resolved?.address ?? null,
      granted: false,
    };
    c.egressTargets.push(outcome);
    const specs = t.ports
      .filter((p) => valid.port(p.port))
      .map((p) => `${(p.protocol ?? "tcp").toLowerCase()}:${p.port}`);
    if (!resolved || !tagOk || specs.length === 0 || !isTargetAllowed(resolved, ctx.allow)) continue;
    // A default route as a grant destination makes Headscale refuse the whole policy (types.go
    // ErrGrantDefaultRouteCIDR), even where allowedEgressTargets holds a /0: the target is left out.
    if (isExitRoute(resolved.prefix)) {
      c.invalid.push({ namespace: eg.namespace, name: eg.name, field: "targets", value: t.host });
      continue;
    }
    c.grants.push({ src: [eg.tag], dst: [resolved.address], ip: specs });
    outcome.granted = true;
  }
  return c;
}

export function siteContribution(site: CollectInput["sites"][number]): Contribution {
  const c = emptyContribution("site", site);
  if (site.blocked) return c;
  const valid = validators(c, site.namespace, site.name);
  const advertisers = site.advertiserTags.filter((t) => valid.tag("advertiserTags", t));
  const parsed = valid.cidrs("prefixes", site.prefixes);
  const cidrs = isExitNodePrefixes(parsed) ? parsed : withoutCoveredFamilies(c, parsed, "prefixes");
  c.tags.push(...advertisers);
  if (isExitNodePrefixes(cidrs)) {
    // An exit-node site: approved through autoApprovers.exitNode, used through autogroup:internet.
    c.exitNode.push(...advertisers);
    if (site.allowFrom.length > 0) c.grants.push({ src: site.allowFrom, dst: [INTERNET], ip: ["*"] });
    return c;
  }
  // A default route beside other prefixes (or one family alone) is InvalidSpec on the site: as a grant
  // destination Headscale would refuse the whole policy, as a routes key it approves no exit node.
  const prefixes: string[] = [];
  for (const r of cidrs) {
    if (isExitRoute(r))
      c.invalid.push({ namespace: site.namespace, name: site.name, field: "prefixes", value: r.text });
    else prefixes.push(r.text);
  }
  if (advertisers.length > 0) for (const p of prefixes) c.routes.push([p, advertisers]);
  if (site.allowFrom.length > 0 && prefixes.length > 0)
    c.grants.push({ src: site.allowFrom, dst: prefixes, ip: ["*"] });
  return c;
}

export function gatewayContribution(gw: CollectInput["gateways"][number]): Contribution {
  const c = emptyContribution("gateway", gw);
  const valid = validators(c, gw.namespace, gw.name);
  if (!valid.tag("tag", gw.tag)) return c;
  c.tags.push(gw.tag);
  for (const r of withoutCoveredFamilies(c, valid.cidrs("routes", gw.routes), "routes")) {
    // A default route in routes is InvalidSpec on the gateway (spec.exitNode is the way): as a routes key
    // it would approve no exit node, and the tenancy check would be bypassed.
    if (isExitRoute(r)) c.invalid.push({ namespace: gw.namespace, name: gw.name, field: "routes", value: r.text });
    else c.routes.push([r.text, [gw.tag]]);
  }
  if (gw.exitNode) {
    // Headscale 0.29 approves exit routes only through autoApprovers.exitNode and refuses a default
    // route as a grant destination: the right to use the exit node is a grant to autogroup:internet.
    c.exitNode.push(gw.tag);
    if (gw.exitNode.allowFrom.length > 0) c.grants.push({ src: gw.exitNode.allowFrom, dst: [INTERNET], ip: ["*"] });
  }
  return c;
}
