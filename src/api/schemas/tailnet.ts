/** Tailnet: spec (the Headscale connection, policy, DNS, tenancy) and status. */

import { RENEW_BEFORE_EXPIRY } from "../cel.js";
import { tenancyDnsSchema } from "../tenancy-dns.js";
import {
  aclEntities,
  arr,
  bool,
  CERT_MANAGER_GROUP,
  cidrItem,
  conditions,
  DNS1123_SUBDOMAIN_PATTERN,
  DURATION_PATTERN,
  int,
  issuerRef,
  labelSelector,
  obj,
  observedGeneration,
  type Schema,
  secretKeyRef,
  str,
  TAG_PATTERN,
} from "./common.js";

/** Tailnet.spec.tenancy (src/kinds/shared/tenancy.ts): namespace selection and tag grants. */
const tenancyProperties: Record<string, Schema> = {
  namespaceSelector: labelSelector(
    "Namespaces whose objects may use this Tailnet; unset: every namespace. Others get Ready=False/NamespaceNotAllowed and nothing is minted.",
  ),
  tags: arr(
    obj(
      {
        namespaceSelector: labelSelector("Namespaces this grant applies to ({} selects every namespace)."),
        tags: arr(str({ pattern: TAG_PATTERN }), {
          minItems: 1,
          maxItems: 64,
          description: "The tags the selected namespaces may use.",
        }),
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
            "x-kubernetes-validations": [RENEW_BEFORE_EXPIRY],
            description:
              "The operator creates a new API key with the current one, verifies it, publishes it in the Secret tailnet-<name>-api-key it owns (preferred from then on) and expires the old key once the new one has worked.",
          },
        ),
      },
      ["url", "apiKeySecretRef"],
      { description: "The Headscale server the operator manages and the API key it does it with." },
    ),
    tagPrefix: str({
      default: "tag:k8s-",
      pattern: "^tag:[a-z][a-z0-9-]{0,40}$",
      description: "Start of every derived tag (<tagPrefix><namespace>-<name>).",
    }),
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
        mode: str({
          enum: ["Apply", "DryRun"],
          default: "DryRun",
          description:
            "DryRun: render the policy into a ConfigMap and report, write nothing to Headscale; Apply: also write it (Headscale's policy.mode must be database).",
        }),
        baseConfigMapRef: obj(
          {
            namespace: str({ minLength: 1, description: "Namespace of the ConfigMap." }),
            name: str({ minLength: 1, description: "Name of the ConfigMap." }),
            key: str({ default: "policy.hujson", minLength: 1, description: "Key holding the HuJSON policy." }),
          },
          ["namespace", "name"],
          {
            description:
              "A ConfigMap with your hand-written policy (HuJSON): the operator keeps it byte for byte and adds its generated tagOwners, grants and autoApprovers.",
          },
        ),
        tagOwners: aclEntities("Owners written for every generated tag."),
        replaceLivePolicy: bool({
          default: false,
          description:
            "Without a base policy, replace a live policy the operator did not write (otherwise nothing is written and PolicyApplied says what it would drop).",
        }),
      },
      [],
      { default: {}, description: "The Headscale policy the operator renders from the objects that use this Tailnet." },
    ),
    allowedIngressSources: aclEntities("Allowlist for TailnetIngress.spec.allowFrom."),
    allowedEgressTargets: aclEntities("CIDRs or node tags the operator may grant to egress agents."),
    certificates: obj(
      {
        issuerRef: issuerRef(
          "The cert-manager issuer of every TailnetIngress expose whose tls is {} (and of every Ingress of class tailnet without a spec.tls Secret or cert-manager annotation); a ClusterIssuer named here is allowed without being listed below.",
        ),
        allowedClusterIssuers: arr(
          obj(
            {
              name: str({
                minLength: 1,
                maxLength: 253,
                pattern: DNS1123_SUBDOMAIN_PATTERN,
                description: "Name of the ClusterIssuer.",
              }),
              group: str({
                maxLength: 253,
                pattern: DNS1123_SUBDOMAIN_PATTERN,
                default: CERT_MANAGER_GROUP,
                description: "Its API group: cert-manager.io, or an external issuer's.",
              }),
            },
            ["name"],
          ),
          {
            maxItems: 32,
            description:
              "ClusterIssuers a TailnetIngress or Ingress may name; any other ClusterIssuer is refused (TLSReady False/IssuerNotAllowed). An Issuer in the object's own namespace needs no listing.",
          },
        ),
      },
      [],
      { description: "Certificates through cert-manager for the ingresses of this Tailnet (docs/security.md)." },
    ),
    reservedNetworks: arr(cidrItem(), {
      maxItems: 64,
      description: "TailnetSite prefixes and TailnetGateway routes may not overlap these.",
    }),
    dns: obj(
      {
        baseDomain: str({ description: "Headscale's dns.base_domain." }),
        splitDNS: obj(
          {
            domains: arr(str({ minLength: 1 }), {
              minItems: 1,
              description: "Domains tailnet clients resolve through the cluster's TailnetGateway.",
            }),
          },
          ["domains"],
          { description: "Split DNS routes the operator expects Headscale to serve (reported by SplitDNS)." },
        ),
      },
      [],
      { description: "What the operator needs to know of Headscale's DNS settings." },
    ),
    tenancy: obj({ ...tenancyProperties, dns: tenancyDnsSchema }, [], {
      description:
        "What namespaces may ask of this Tailnet (admin-owned; namespace editors control every field of their egresses and ingresses).",
    }),
  },
  ["headscale"],
);

export const tailnetStatus: Schema = obj({
  observedGeneration,
  conditions,
  policy: obj(
    {
      renderedHash: str({ description: "sha256 of the canonical rendered policy." }),
      appliedHash: str({ description: "sha256 of what Headscale holds, as last written or confirmed." }),
      appliedAt: str({ format: "date-time", description: "When the operator last wrote the policy." }),
      generated: obj(
        {
          tags: int({ description: "Tags the render generated." }),
          grants: int({ description: "Grants the render generated." }),
          routes: int({ description: "Auto-approved routes the render generated." }),
        },
        [],
        { description: "What the render added to the base policy." },
      ),
      leftOut: arr(
        obj(
          {
            kind: str({
              enum: ["TailnetEgress", "TailnetIngress", "TailnetSite", "TailnetGateway"],
              description: "Kind of the object left out.",
            }),
            namespace: str({ description: "Its namespace." }),
            name: str({ description: "Its name." }),
            reason: str({
              enum: ["InvalidContribution", "RejectedByHeadscale"],
              description:
                "InvalidContribution: the render found it invalid; RejectedByHeadscale: Headscale refused it.",
            }),
            message: str({ description: "What was left out and why." }),
          },
          ["kind", "namespace", "name", "reason", "message"],
        ),
        {
          description:
            "Objects whose contribution (or part of it) the render left out of the policy, because Headscale would refuse the whole policy over it; each object reports it as LeftOutOfPolicy.",
        },
      ),
    },
    [],
    { description: "The rendered and the applied policy." },
  ),
  userConflicts: int({
    minimum: 0,
    description: "User names held by two or more Headscale users (UsersUnique); a policy naming one is ambiguous.",
  }),
  keptLegacyTags: arr(str(), {
    description:
      "Tags objects kept from before tags were derived injectively; a new object deriving one of them is refused (TagInUse).",
  }),
  apiKeyRotation: obj(
    {
      keyPrefix: str({ description: "Prefix of the API key in use (never the key)." }),
      expiresAt: str({ format: "date-time", description: "When the key in use expires." }),
      renewAt: str({ format: "date-time", description: "When the next key is created." }),
      rotatedAt: str({ format: "date-time", description: "When the operator last created a key." }),
      replacesPrefix: str({ description: "Prefix of the previous key, until it is expired." }),
    },
    [],
    { description: "The API key renewal (spec.headscale.apiKeyRotation), when enabled." },
  ),
});
