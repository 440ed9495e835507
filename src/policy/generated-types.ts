/** The shapes of the policy the workload kinds generate: what collectGenerated takes and gives (generated.ts), and what each object contributes (contribution.ts). */
import type { NodeRef } from "./targets.js";

export interface Grant {
  src: string[];
  dst: string[];
  ip: string[];
}

export interface GeneratedPolicy {
  /** tag → owners (Tailnet.spec.policy.tagOwners). */
  tagOwners: Map<string, string[]>;
  grants: Grant[];
  /** prefix → tags allowed to advertise it (autoApprovers.routes). */
  autoApproverRoutes: Map<string, string[]>;
  /**
   * Tags whose nodes Headscale approves as exit nodes (autoApprovers.exitNode), sorted: exit routes
   * are approved only through this list, never through a `routes` key (see src/net/exit.ts).
   */
  autoApproverExitNode: string[];
}

export interface CollectInput {
  /** Tailnet.spec.policy.tagOwners. */
  tagOwners: string[];
  /** Tailnet.spec.allowedEgressTargets: CIDRs or node tags. */
  allowedEgressTargets: string[];
  egresses: {
    namespace: string;
    name: string;
    tag: string;
    targets: { name: string; host: string; ports: { port: number; protocol?: string }[] }[];
  }[];
  ingresses: {
    namespace: string;
    name: string;
    tag: string;
    allowFrom: string[];
    ports: number[];
    /** allowFrom outside Tailnet.spec.allowedIngressSources: no grant (the tag is still owned). */
    denied: boolean;
  }[];
  sites: {
    namespace: string;
    name: string;
    prefixes: string[];
    advertiserTags: string[];
    allowFrom: string[];
    /** RouteConflict: renders nothing. */
    blocked: boolean;
  }[];
  gateways: {
    namespace: string;
    name: string;
    tag: string;
    routes: string[];
    /** spec.exitNode, only when the Tailnet's tenancy admits it (tenancy.ts exitNodeAdmission). */
    exitNode?: { allowFrom: string[] };
  }[];
  /** Headscale nodes, to resolve node names and MagicDNS names to tailnet IPs. */
  nodes: NodeRef[];
  /** Headscale dns.base_domain, for MagicDNS FQDNs. */
  baseDomain?: string;
}

export interface UnresolvedTarget {
  namespace: string;
  name: string;
  target: string;
  host: string;
}

/** Every egress target, with what it resolved to and whether a grant was generated. */
export interface EgressTargetOutcome extends UnresolvedTarget {
  /** Address written in the grant; null when the host is not resolvable yet. */
  address: string | null;
  /** False when unresolved or outside allowedEgressTargets (NoGrant unless the base grants it). */
  granted: boolean;
}

/** An input value left out of the policy because Headscale would reject the whole policy over it. */
export interface InvalidInput {
  namespace: string;
  name: string;
  field: "tag" | "advertiserTags" | "prefixes" | "routes" | "ports" | "targets";
  value: string;
}

export interface CollectResult {
  generated: GeneratedPolicy;
  unresolved: UnresolvedTarget[];
  egressTargets: EgressTargetOutcome[];
  invalid: InvalidInput[];
}
