/**
 * The resource API as code: one JSON Schema per kind, the single source for the CRDs
 * (`npm run manifests` writes manifests/crds and the chart's crds/), for hook-time validation
 * of parents (ajv), and for the status the hooks return (Metacontroller re-syncs forever on a
 * status the API server prunes, so every status field we write is declared here).
 */
import { tenancyDnsSchema } from "./tenancy-dns.js";

export type Schema = Record<string, unknown>;

export const GROUP = "tailnet.internal";
export const VERSION = "v1alpha1";
export const API_VERSION = `${GROUP}/${VERSION}`;

/** `tag:` then 1–63 of [a-z0-9-], starting with a letter (api.md). */
export const TAG_PATTERN = "^tag:[a-z][a-z0-9-]{0,62}$";
/** RFC 1035 label (Service names, DNS labels). */
export const DNS1035_PATTERN = "^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$";
/** DNS-1123 label (namespaces). */
export const DNS1123_LABEL_PATTERN = "^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$";
/** DNS-1123 subdomain (Kubernetes object names). */
export const DNS1123_SUBDOMAIN_PATTERN = "^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$";
/** IPv4 or IPv6 CIDR, syntax only; host bits and overlaps are checked in code. */
export const CIDR_PATTERN = "^([0-9]{1,3}(\\.[0-9]{1,3}){3}/[0-9]{1,2}|[0-9a-fA-F:.]+/[0-9]{1,3})$";
/** Go-style duration as Headscale and Kubernetes users write it: 24h, 90m, 1h30m. */
export const DURATION_PATTERN = "^([0-9]+(\\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$";

const str = (extra: Schema = {}): Schema => ({ type: "string", ...extra });
const int = (extra: Schema = {}): Schema => ({ type: "integer", ...extra });
const bool = (extra: Schema = {}): Schema => ({ type: "boolean", ...extra });
const arr = (items: Schema, extra: Schema = {}): Schema => ({ type: "array", items, ...extra });
const obj = (properties: Record<string, Schema>, required: string[] = [], extra: Schema = {}): Schema => ({
  type: "object",
  properties,
  ...(required.length ? { required } : {}),
  ...extra,
});
const secretKeyRef = (defaultKey: string, description: string): Schema =>
  obj(
    {
      namespace: str({ pattern: DNS1123_LABEL_PATTERN }),
      name: str({ pattern: DNS1123_SUBDOMAIN_PATTERN, maxLength: 253 }),
      key: str({ default: defaultKey, minLength: 1 }),
    },
    ["namespace", "name"],
    { description },
  );

const conditions: Schema = arr(
  obj(
    {
      type: str({ minLength: 1 }),
      status: str({ enum: ["True", "False", "Unknown"] }),
      reason: str(),
      message: str(),
      lastTransitionTime: str({ format: "date-time" }),
      observedGeneration: int({ format: "int64", minimum: 0 }),
    },
    ["type", "status"],
  ),
  { "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["type"] },
);

const tailnetRef: Schema = obj({ name: str({ minLength: 1, pattern: DNS1123_SUBDOMAIN_PATTERN }) }, ["name"], {
  description: "The cluster-scoped Tailnet this object belongs to.",
});
const tag: Schema = str({
  pattern: TAG_PATTERN,
  description:
    'Tailnet tag of the agent node; must be granted to the namespace by the Tailnet\'s spec.tenancy.tags (else TagNotGranted) and carried by no node this object did not register (else TagInUse). Default: derived, "<tagPrefix><namespace with each - doubled>-<name>" (a hashed form past 63 characters or for names with dots), needing no grant.',
});
const proxyClassName: Schema = str({
  pattern: DNS1123_SUBDOMAIN_PATTERN,
  maxLength: 253,
  description: "A TailnetProxyClass whose pod settings the agent pods take; a missing class blocks Ready.",
});
const aclEntities = (description: string): Schema =>
  arr(str({ minLength: 1 }), { description, "x-kubernetes-list-type": "set" });

const commonWorkloadStatus = {
  observedGeneration: int({ format: "int64" }),
  conditions,
};

/** A Kubernetes LabelSelector (matchLabels, matchExpressions with In, NotIn, Exists, DoesNotExist). */
const labelSelector = (description: string): Schema =>
  obj(
    {
      matchLabels: { type: "object", additionalProperties: { type: "string" } },
      matchExpressions: arr(
        obj(
          {
            key: str({ minLength: 1 }),
            operator: str({ enum: ["In", "NotIn", "Exists", "DoesNotExist"] }),
            values: arr(str()),
          },
          ["key", "operator"],
        ),
      ),
    },
    [],
    { description },
  );

/** Tailnet.spec.tenancy (src/kinds/shared/tenancy.ts): namespace selection and tag grants. */
const tenancyProperties: Record<string, Schema> = {
  namespaceSelector: labelSelector(
    "Namespaces whose objects may use this Tailnet; unset: every namespace. Others get Ready=False/NamespaceNotAllowed and nothing is minted.",
  ),
  tags: arr(
    obj(
      {
        namespaceSelector: labelSelector("Namespaces this grant applies to ({} selects every namespace)."),
        tags: arr(str({ pattern: TAG_PATTERN }), { minItems: 1, maxItems: 64 }),
      },
      ["namespaceSelector", "tags"],
    ),
    {
      maxItems: 64,
      description:
        "Explicit tags (spec.tag, the tailnet.internal/tags annotation) each namespace may use; any other explicit tag is refused with TagNotGranted. Derived tags need no grant.",
    },
  ),
  exitNodes: obj(
    {
      namespaceSelector: labelSelector(
        "Namespaces whose TailnetGateways may set spec.exitNode ({} selects every namespace).",
      ),
    },
    ["namespaceSelector"],
    {
      description:
        "Who may turn a TailnetGateway into an exit node; unset: nobody (ExitNode=False/ExitNodeNotAllowed, no exit routes advertised, approved or granted).",
    },
  ),
};

export const tailnetSpec: Schema = obj(
  {
    headscale: obj(
      {
        url: str({ pattern: "^https?://[^\\s/]+(/.*)?$", description: "Headscale server URL (http or https)." }),
        apiKeySecretRef: secretKeyRef("apiKey", "Secret holding a Headscale API key."),
        caSecretRef: secretKeyRef("ca.crt", "Optional Secret with a CA bundle for Headscale's TLS certificate."),
        apiKeyRotation: obj(
          {
            enabled: bool({ default: false, description: "Renew the API key before it expires (opt-in)." }),
            expirationSeconds: int({
              minimum: 3600,
              default: 7776000,
              description: "Lifetime of each new API key (default 90 days).",
            }),
            renewBeforeSeconds: int({
              minimum: 60,
              default: 1209600,
              description:
                "Create the next key once the one in use expires within this many seconds (default 14 days, ahead of TailnetAPIKeyExpiringSoon's 7); less than expirationSeconds.",
            }),
          },
          [],
          {
            description:
              "The operator creates a new API key with the current one, verifies it, publishes it in the Secret tailnet-<name>-api-key it owns (preferred from then on) and expires the old key once the new one has worked.",
          },
        ),
      },
      ["url", "apiKeySecretRef"],
    ),
    tagPrefix: str({ default: "tag:k8s-", pattern: "^tag:[a-z][a-z0-9-]{0,40}$" }),
    authKeyTTL: str({
      default: "24h",
      pattern: DURATION_PATTERN,
      description: "Lifetime of agent pre-auth keys (at most maxAuthKeyLifetime).",
    }),
    maxAuthKeyLifetime: str({
      default: "720h",
      pattern: DURATION_PATTERN,
      description:
        "Longest lifetime of any pre-auth key the operator mints for this Tailnet: a TailnetAuthKey asking for a longer spec.expiry is refused (ExpiryTooLong, nothing minted); agent keys live min(authKeyTTL, this).",
    }),
    policy: obj(
      {
        mode: str({ enum: ["Apply", "DryRun"], default: "DryRun" }),
        baseConfigMapRef: obj(
          {
            namespace: str({ minLength: 1 }),
            name: str({ minLength: 1 }),
            key: str({ default: "policy.hujson", minLength: 1 }),
          },
          ["namespace", "name"],
        ),
        tagOwners: aclEntities("Owners written for every generated tag."),
        replaceLivePolicy: bool({
          default: false,
          description:
            "Without a base policy, replace a live policy the operator did not write (otherwise nothing is written and PolicyApplied says what it would drop).",
        }),
      },
      [],
      { default: {} },
    ),
    allowedIngressSources: aclEntities("Allowlist for TailnetIngress.spec.allowFrom."),
    allowedEgressTargets: aclEntities("CIDRs or node tags the operator may grant to egress agents."),
    reservedNetworks: arr(str({ pattern: CIDR_PATTERN }), {
      description: "TailnetSite prefixes and TailnetGateway routes may not overlap these.",
    }),
    dns: obj({
      baseDomain: str({ description: "Headscale's dns.base_domain." }),
      splitDNS: obj({ domains: arr(str({ minLength: 1 }), { minItems: 1 }) }, ["domains"]),
    }),
    tenancy: obj({ ...tenancyProperties, dns: tenancyDnsSchema }, [], {
      description:
        "What namespaces may ask of this Tailnet (admin-owned; namespace editors control every field of their egresses and ingresses).",
    }),
  },
  ["headscale"],
);

export const tailnetStatus: Schema = obj({
  observedGeneration: int({ format: "int64" }),
  conditions,
  policy: obj({
    renderedHash: str(),
    appliedHash: str(),
    appliedAt: str({ format: "date-time" }),
    generated: obj({ tags: int(), grants: int(), routes: int() }),
    leftOut: arr(
      obj(
        {
          kind: str({ enum: ["TailnetEgress", "TailnetIngress", "TailnetSite", "TailnetGateway"] }),
          namespace: str(),
          name: str(),
          reason: str({ enum: ["InvalidContribution", "RejectedByHeadscale"] }),
          message: str(),
        },
        ["kind", "namespace", "name", "reason", "message"],
      ),
      {
        description:
          "Objects whose contribution (or part of it) the render left out of the policy, because Headscale would refuse the whole policy over it; each object reports it as LeftOutOfPolicy.",
      },
    ),
  }),
  userConflicts: int({ minimum: 0 }),
  keptLegacyTags: arr(str(), {
    description:
      "Tags objects kept from before tags were derived injectively; a new object deriving one of them is refused (TagInUse).",
  }),
  apiKeyRotation: obj({
    keyPrefix: str(),
    expiresAt: str({ format: "date-time" }),
    renewAt: str({ format: "date-time" }),
    rotatedAt: str({ format: "date-time" }),
    replacesPrefix: str(),
  }),
});

const port: Schema = int({ minimum: 1, maximum: 65535 });

export const egressSpec: Schema = obj(
  {
    tailnetRef,
    tag,
    replicas: int({ minimum: 0, maximum: 16, default: 1 }),
    proxyClassName,
    targets: arr(
      obj(
        {
          name: str({ pattern: DNS1035_PATTERN, maxLength: 63 }),
          host: str({ minLength: 1, maxLength: 253, description: "Node name, MagicDNS FQDN or IP address." }),
          ports: arr(obj({ port, protocol: str({ enum: ["TCP"], default: "TCP" }) }, ["port"]), {
            minItems: 1,
            maxItems: 16,
          }),
        },
        ["name", "host", "ports"],
      ),
      { minItems: 1, maxItems: 64, "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"] },
    ),
  },
  ["tailnetRef", "targets"],
);

/** The pre-auth keys the object minted: the only ones whose nodes and keys it may delete or expire. */
const preAuthKeyIds = arr(str({ pattern: "^[0-9]+$" }), {
  maxItems: 32,
  description:
    "Ids of the pre-auth keys this object minted that a node may still use; finalize and rollouts delete only nodes registered with them and expire only them.",
});

export const egressStatus: Schema = obj({
  ...commonWorkloadStatus,
  tag: str(),
  preAuthKeyIds,
  targets: arr(
    obj({
      name: str(),
      host: str(),
      address: str(),
      service: str(),
      state: str(),
      reason: str(),
    }),
  ),
});

export const ingressSpec: Schema = obj(
  {
    tailnetRef,
    tag,
    replicas: int({
      minimum: 1,
      maximum: 16,
      default: 1,
      description: "Agent pods, each its own tailnet node; the DNS names answer with every online node's address.",
    }),
    proxyClassName,
    hostname: str({ pattern: DNS1035_PATTERN, maxLength: 63 }),
    mode: str({
      enum: ["tcp", "http", "kube-api"],
      default: "tcp",
      description:
        "tcp: raw TCP to each backend; http: TLS ends at the agent, HTTP/1.1 to each backend; kube-api: the cluster's API server, each request impersonating the connecting tailnet identity (one expose, no backend).",
    }),
    allowFrom: aclEntities("Who may connect; must be within Tailnet.spec.allowedIngressSources."),
    exposes: arr(
      obj(
        {
          name: str({ pattern: DNS1035_PATTERN, maxLength: 63 }),
          // Optional so that Metacontroller merges exposes by name (its apply guesses `port` first,
          // and http exposes share 443); no schema default, which would store it again.
          port: int({
            minimum: 1,
            maximum: 65535,
            description: "Port on the tailnet node; required in mode tcp, 443 when left out in mode http.",
          }),
          backend: obj({ service: str({ pattern: DNS1035_PATTERN }), port }, ["service", "port"]),
          host: str({ minLength: 1, maxLength: 63 }),
          aliases: arr(str({ minLength: 1, maxLength: 63 }), { maxItems: 16 }),
          tls: obj({ secretName: str({ pattern: DNS1123_SUBDOMAIN_PATTERN }) }, ["secretName"]),
        },
        // backend: required in mode tcp and http, refused in kube-api; port: required in tcp, 443 when
        // left out in http (src/kinds/shared/expose-port.ts) — both checked by ingressSpecProblem
        ["name"],
      ),
      { minItems: 1, maxItems: 32, "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"] },
    ),
  },
  ["tailnetRef", "hostname", "exposes"],
);

export const ingressStatus: Schema = obj({
  ...commonWorkloadStatus,
  tag: str(),
  preAuthKeyIds,
  dnsName: str(),
  exposes: arr(
    obj({
      name: str(),
      dnsName: str(),
      dnsAliases: arr(str()),
      reachable: bool(),
    }),
  ),
  nodes: arr(obj({ name: str(), addresses: arr(str()), online: bool() })),
});

export const siteSpec: Schema = obj(
  {
    tailnetRef,
    prefixes: arr(str({ pattern: CIDR_PATTERN }), { minItems: 1, maxItems: 16 }),
    advertiserTags: arr(str({ pattern: TAG_PATTERN }), { minItems: 1, maxItems: 16 }),
    allowFrom: aclEntities("Who may use the routes."),
  },
  ["tailnetRef", "prefixes", "advertiserTags"],
);

export const siteStatus: Schema = obj({
  ...commonWorkloadStatus,
  advertisers: arr(obj({ node: str(), prefixes: arr(str()), approved: bool() })),
});

export const gatewaySpec: Schema = obj(
  {
    tailnetRef,
    tag,
    proxyClassName,
    suspend: bool({ default: false }),
    replicas: int({
      minimum: 1,
      maximum: 4,
      default: 1,
      description:
        "Gateway pods, each its own tailnet node advertising spec.routes; Headscale routes through one primary and fails over.",
    }),
    hostname: str({ pattern: DNS1035_PATTERN, maxLength: 63 }),
    routes: arr(str({ pattern: CIDR_PATTERN }), {
      maxItems: 16,
      description:
        "Subnet routes the gateway advertises (cluster networks). A default route is InvalidSpec: use spec.exitNode.",
    }),
    exitNode: obj(
      {
        allowFrom: aclEntities(
          "Who may use the exit node: the Tailnet renders a grant from these to autogroup:internet (empty: none; the base policy grants).",
        ),
      },
      [],
      {
        description:
          "Offer the gateway as an exit node (0.0.0.0/0 and ::/0, approved through autoApprovers.exitNode). Only in namespaces the Tailnet's spec.tenancy.exitNodes selects; elsewhere ExitNode=False/ExitNodeNotAllowed.",
      },
    ),
    dns: obj(
      {
        zone: str({ minLength: 1, maxLength: 253 }),
        clusterDNSForward: str({ enum: ["Managed", "External"], default: "Managed" }),
      },
      [],
      { default: {} },
    ),
    staleNodes: str({ enum: ["Delete", "Keep"], default: "Delete" }),
    service: obj({ type: str({ enum: ["ClusterIP", "LoadBalancer"], default: "ClusterIP" }) }, [], { default: {} }),
    bootstrapKeyTTL: str({ default: "1h", pattern: DURATION_PATTERN }),
  },
  ["tailnetRef"],
);

export const gatewayStatus: Schema = obj({
  ...commonWorkloadStatus,
  tag: str(),
  node: obj({ id: str(), name: str(), nodeKey: str(), preAuthKeyId: str() }),
  nodes: arr(obj({ id: str(), name: str(), nodeKey: str(), preAuthKeyId: str(), online: bool() })),
  dnsServiceIP: str(),
});

// ---- TailnetUser and TailnetAuthKey (issue 27) ----

export const userSpec: Schema = obj(
  {
    tailnetRef,
    name: str({
      minLength: 2,
      maxLength: 253,
      // Headscale's ValidateUsername (hscontrol/util/dns.go), ASCII: a letter first, then letters, digits, "-", ".", "_", at most one "@"
      pattern: "^[A-Za-z][A-Za-z0-9._-]*(@[A-Za-z0-9._-]*)?$",
      description:
        "The Headscale user name (a letter, then letters, digits, -, ., _ and at most one @, as Headscale requires). Created (a local user) when no user holds it; adopted, never renamed, when one does. A name held by two users is the Tailnet's UsersUnique concern and is not touched here. Changing it points the object at another user; the previous one is left as it is.",
    }),
    displayName: str({
      maxLength: 253,
      description:
        "Display name given when the operator creates the user. Headscale's API cannot change it later (only a rename exists), so a difference is reported (ProfileMatches=False), not written.",
    }),
    email: str({
      maxLength: 253,
      description: "E-mail given when the operator creates the user; reported like displayName.",
    }),
    deletionPolicy: str({
      enum: ["Retain", "Delete"],
      default: "Retain",
      description:
        "Delete: deleting this object deletes the Headscale user, only if the operator created it (status.createdUserId) and it is still the same local user. Retain (default): the user stays.",
    }),
    authKeyNamespaces: arr(str({ pattern: DNS1123_LABEL_PATTERN }), {
      maxItems: 64,
      "x-kubernetes-list-type": "set",
      description:
        "Namespaces whose TailnetAuthKeys may mint keys for this user (a key for a user joins machines as that user). Default: none.",
    }),
  },
  ["tailnetRef", "name"],
);

export const userStatus: Schema = obj({
  observedGeneration: int({ format: "int64" }),
  id: str({ description: "The Headscale user id." }),
  nodeCount: int({ minimum: 0, description: "Nodes owned by the user (tagged nodes own none)." }),
  provider: str({ description: "The user's provider, e.g. oidc; empty for a local user." }),
  createdUserId: str({
    description:
      "Set only when the operator created the user, in the answer that created it: the proof deletionPolicy Delete needs.",
  }),
  conditions,
});

export const authKeySpec: Schema = obj(
  {
    tailnetRef,
    tags: arr(str({ pattern: TAG_PATTERN }), {
      minItems: 1,
      maxItems: 16,
      "x-kubernetes-list-type": "set",
      description:
        "Tags of the machines joining with the key; each must be granted to the namespace by the Tailnet's spec.tenancy.tags (else Admitted=False/TagNotGranted). Exactly one of tags and user.",
    }),
    user: obj({ name: str({ minLength: 1, pattern: DNS1123_SUBDOMAIN_PATTERN }) }, ["name"], {
      description:
        "A TailnetUser whose spec.authKeyNamespaces lists this namespace: the machines join as that user. Exactly one of tags and user.",
    }),
    reusable: bool({ default: false, description: "The key registers any number of machines." }),
    ephemeral: bool({ default: false, description: "Machines registered with it are removed once offline." }),
    expiry: str({
      pattern: DURATION_PATTERN,
      default: "168h",
      description: "Lifetime of each key (at least 1m).",
    }),
    renewBefore: str({
      pattern: DURATION_PATTERN,
      description:
        "A new key is published this long before the current one expires; the old one is expired once the Secret is observed holding the new one. Default: a third of expiry. Must be shorter than expiry.",
    }),
    secretName: str({
      pattern: DNS1123_SUBDOMAIN_PATTERN,
      maxLength: 253,
      description:
        "The Secret (in this namespace) the key is delivered into, with keys authkey, login-server and, when the Tailnet has one, ca.crt.",
    }),
  },
  ["tailnetRef", "secretName"],
);

export const authKeyStatus: Schema = obj({
  ...commonWorkloadStatus,
  keyId: str({ description: "Id of the key in the Secret (never the key)." }),
  expiresAt: str({ format: "date-time" }),
  renewAt: str({ format: "date-time" }),
  preAuthKeyIds,
});

export interface KindInfo {
  /** Path segment: /hooks/<hookKind>/<hook>. */
  hookKind: "tailnet" | "egress" | "ingress" | "site" | "gateway" | "user" | "authkey";
  kind: string;
  plural: string;
  singular: string;
  shortName: string;
  scope: "Cluster" | "Namespaced";
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
    spec: tailnetSpec,
    status: tailnetStatus,
    printerColumns: [
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
    spec: ingressSpec,
    status: ingressStatus,
    printerColumns: [tagColumn, readyReason(), ageColumn],
  },
  {
    hookKind: "site",
    kind: "TailnetSite",
    plural: "tailnetsites",
    singular: "tailnetsite",
    shortName: "tns",
    scope: "Namespaced",
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
