/**
 * The resource API as code: one JSON Schema per kind, the single source for the CRDs
 * (`npm run manifests` writes manifests/crds and the chart's crds/), for hook-time validation
 * of parents (ajv), and for the status the hooks return (Metacontroller re-syncs forever on a
 * status the API server prunes, so every status field we write is declared here). Each kind's
 * schema lives in src/api/schemas/<kind>.ts, built from src/api/schemas/common.ts; this file lists the kinds.
 */
import { authKeySpec, authKeyStatus } from "./schemas/authkey.js";
import type { Schema } from "./schemas/common.js";
import { egressSpec, egressStatus } from "./schemas/egress.js";
import { gatewaySpec, gatewayStatus } from "./schemas/gateway.js";
import { ingressSpec, ingressStatus } from "./schemas/ingress.js";
import { siteSpec, siteStatus } from "./schemas/site.js";
import { tailnetSpec, tailnetStatus } from "./schemas/tailnet.js";
import { userSpec, userStatus } from "./schemas/user.js";

export { authKeySpec, authKeyStatus } from "./schemas/authkey.js";
export {
  API_VERSION,
  CIDR_PATTERN,
  DNS1035_PATTERN,
  DNS1123_LABEL_PATTERN,
  DNS1123_SUBDOMAIN_PATTERN,
  DURATION_PATTERN,
  GROUP,
  type Schema,
  TAG_PATTERN,
  VERSION,
} from "./schemas/common.js";
export { egressSpec, egressStatus } from "./schemas/egress.js";
export { gatewaySpec, gatewayStatus } from "./schemas/gateway.js";
export { ingressSpec, ingressStatus } from "./schemas/ingress.js";
export { siteSpec, siteStatus } from "./schemas/site.js";
export { tailnetSpec, tailnetStatus } from "./schemas/tailnet.js";
export { userSpec, userStatus } from "./schemas/user.js";

export interface KindInfo {
  /** Path segment: /hooks/<hookKind>/<hook>. */
  hookKind: "tailnet" | "egress" | "ingress" | "site" | "gateway" | "user" | "authkey";
  kind: string;
  plural: string;
  singular: string;
  shortName: string;
  scope: "Cluster" | "Namespaced";
  /** What the kind is, one or two sentences: the CRD's root description (`kubectl explain <kind>`). */
  description: string;
  spec: Schema;
  status: Schema;
  printerColumns: { name: string; type: string; jsonPath: string; description?: string }[];
}

const readyReason = (): KindInfo["printerColumns"][number] => ({
  name: "READY",
  type: "string",
  jsonPath: '.status.conditions[?(@.type=="Ready")].reason',
  description: "Reason of the Ready condition",
});
const tagColumn = { name: "TAG", type: "string", jsonPath: ".status.tag", description: "Effective tag" };
const ageColumn = { name: "AGE", type: "date", jsonPath: ".metadata.creationTimestamp" };
const condReason = (name: string, type: string) => ({
  name,
  type: "string",
  jsonPath: `.status.conditions[?(@.type=="${type}")].reason`,
  description: `Reason of the ${type} condition`,
});

export const KINDS: readonly KindInfo[] = [
  {
    hookKind: "tailnet",
    kind: "Tailnet",
    plural: "tailnets",
    singular: "tailnet",
    shortName: "tn",
    scope: "Cluster",
    description:
      "A Headscale server the operator manages: its connection and API key, the policy it renders from every object that uses it, DNS and what each namespace may ask of it.",
    spec: tailnetSpec,
    status: tailnetStatus,
    // No Ready condition (api.md): API says whether the operator reaches Headscale, POLICY where the policy stands.
    printerColumns: [
      condReason("API", "ApiReachable"),
      condReason("COMPAT", "HeadscaleCompatible"),
      condReason("DNS", "SplitDNS"),
      condReason("POLICY", "PolicyApplied"),
      ageColumn,
    ],
  },
  {
    hookKind: "egress",
    kind: "TailnetEgress",
    plural: "tailnetegresses",
    singular: "tailnetegress",
    shortName: "tne",
    scope: "Namespaced",
    description:
      "Cluster workloads reach tailnet targets: an agent joins the tailnet with the object's tag and each target gets a Service of its name in this namespace.",
    spec: egressSpec,
    status: egressStatus,
    printerColumns: [tagColumn, readyReason(), ageColumn],
  },
  {
    hookKind: "ingress",
    kind: "TailnetIngress",
    plural: "tailnetingresses",
    singular: "tailnetingress",
    shortName: "tni",
    scope: "Namespaced",
    description:
      "Cluster Services exposed to the tailnet: an agent node named spec.hostname forwards each expose's port to its backend (tcp), terminates TLS (http) or serves the cluster's API server (kube-api).",
    spec: ingressSpec,
    status: ingressStatus,
    printerColumns: [
      tagColumn,
      { name: "DNS", type: "string", jsonPath: ".status.dnsName", description: "MagicDNS name of the agent node" },
      readyReason(),
      ageColumn,
    ],
  },
  {
    hookKind: "site",
    kind: "TailnetSite",
    plural: "tailnetsites",
    singular: "tailnetsite",
    shortName: "tns",
    scope: "Namespaced",
    description:
      "A network behind subnet routers made reachable from the tailnet: the routers with an advertiser tag are auto-approved for the prefixes and allowFrom is granted them.",
    spec: siteSpec,
    status: siteStatus,
    printerColumns: [
      { name: "TAG", type: "string", jsonPath: ".spec.advertiserTags[0]", description: "First advertiser tag" },
      readyReason(),
      ageColumn,
    ],
  },
  {
    hookKind: "gateway",
    kind: "TailnetGateway",
    plural: "tailnetgateways",
    singular: "tailnetgateway",
    shortName: "tng",
    scope: "Namespaced",
    description:
      "A subnet router and DNS server joining the cluster to the tailnet: advertises cluster networks (optionally an exit node) and serves cluster names to tailnet clients and tailnet names to the cluster.",
    spec: gatewaySpec,
    status: gatewayStatus,
    printerColumns: [tagColumn, readyReason(), ageColumn],
  },
  {
    hookKind: "user",
    kind: "TailnetUser",
    plural: "tailnetusers",
    singular: "tailnetuser",
    shortName: "tnu",
    scope: "Cluster",
    description:
      "A Headscale user: created when missing, adopted when present, optionally deleted with the object; names the namespaces whose TailnetAuthKeys may mint keys for it.",
    spec: userSpec,
    status: userStatus,
    printerColumns: [
      { name: "USER", type: "string", jsonPath: ".spec.name", description: "Headscale user name" },
      { name: "ID", type: "string", jsonPath: ".status.id", description: "Headscale user id" },
      readyReason(),
      ageColumn,
    ],
  },
  {
    hookKind: "authkey",
    kind: "TailnetAuthKey",
    plural: "tailnetauthkeys",
    singular: "tailnetauthkey",
    shortName: "tnak",
    scope: "Namespaced",
    description:
      "A Headscale pre-auth key for machines outside the cluster, delivered into a Secret of this namespace and renewed before it expires.",
    spec: authKeySpec,
    status: authKeyStatus,
    printerColumns: [
      { name: "SECRET", type: "string", jsonPath: ".spec.secretName", description: "Secret holding the key" },
      { name: "EXPIRES", type: "date", jsonPath: ".status.expiresAt", description: "Expiry of the current key" },
      readyReason(),
      ageColumn,
    ],
  },
];

/** A custom resource the operator defines (a CRD); the kinds with hooks are `KINDS`. */
export type ResourceInfo = Omit<KindInfo, "hookKind" | "status"> & { status?: Schema };

export type HookKind = KindInfo["hookKind"];
export const HOOK_KINDS = KINDS.map((k) => k.hookKind);
export function kindInfo(hookKind: string): KindInfo | undefined {
  return KINDS.find((k) => k.hookKind === hookKind);
}
export function kindInfoByKind(kind: string): KindInfo | undefined {
  return KINDS.find((k) => k.kind === kind);
}
