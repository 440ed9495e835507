/**
 * What every kind's schema is built from (src/api/schemas.ts assembles them): the API group, the patterns
 * code and CRDs share, the JSON Schema builders and the fields several kinds declare alike.
 */
import { type CelRule, CIDR_RULES } from "../cel.js";

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
/** A CIDR list item: syntax by pattern, then the API server's own CIDR parser and the host-bits rule (src/api/cel.ts). */
export const cidrItem = (...extra: CelRule[]): Schema =>
  str({ pattern: CIDR_PATTERN, maxLength: 64, "x-kubernetes-validations": [...CIDR_RULES, ...extra] });

/** Go-style duration as Headscale and Kubernetes users write it: 24h, 90m, 1h30m. */
export const DURATION_PATTERN = "^([0-9]+(\\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$";

export const str = (extra: Schema = {}): Schema => ({ type: "string", ...extra });
export const int = (extra: Schema = {}): Schema => ({ type: "integer", ...extra });
export const bool = (extra: Schema = {}): Schema => ({ type: "boolean", ...extra });
export const arr = (items: Schema, extra: Schema = {}): Schema => ({ type: "array", items, ...extra });
export const obj = (properties: Record<string, Schema>, required: string[] = [], extra: Schema = {}): Schema => ({
  type: "object",
  properties,
  ...(required.length ? { required } : {}),
  ...extra,
});
export const secretKeyRef = (defaultKey: string, description: string): Schema =>
  obj(
    {
      namespace: str({ pattern: DNS1123_LABEL_PATTERN, description: "Namespace of the Secret." }),
      name: str({ pattern: DNS1123_SUBDOMAIN_PATTERN, maxLength: 253, description: "Name of the Secret." }),
      key: str({ default: defaultKey, minLength: 1, description: "Key in the Secret's data." }),
    },
    ["namespace", "name"],
    { description },
  );

export const conditions: Schema = arr(
  obj(
    {
      type: str({ minLength: 1, description: "Condition type, e.g. Ready." }),
      status: str({
        enum: ["True", "False", "Unknown"],
        description: "True, False or Unknown (not evaluated or not observed).",
      }),
      reason: str({ description: "One CamelCase word saying why; each is explained in docs/reference/reasons.md." }),
      message: str({ description: "What is wrong and what to do, for a person; never a secret." }),
      lastTransitionTime: str({ format: "date-time", description: "When status last changed." }),
      observedGeneration: int({
        format: "int64",
        minimum: 0,
        description: "The metadata.generation this condition was computed for.",
      }),
    },
    ["type", "status"],
  ),
  {
    description:
      "The object's conditions, one per type, in a fixed order (docs/reference/reasons.md lists each type and reason); every change is also recorded as an Event on the object.",
    "x-kubernetes-list-type": "map",
    "x-kubernetes-list-map-keys": ["type"],
  },
);

/** status.observedGeneration of every kind. */
export const observedGeneration: Schema = int({
  format: "int64",
  description: "The metadata.generation the operator last answered for; behind it, the status is not yet current.",
});

export const tailnetRef: Schema = obj(
  { name: str({ minLength: 1, pattern: DNS1123_SUBDOMAIN_PATTERN, description: "Name of the Tailnet." }) },
  ["name"],
  {
    description: "The cluster-scoped Tailnet this object belongs to.",
  },
);
export const tag: Schema = str({
  pattern: TAG_PATTERN,
  description:
    'Tailnet tag of the agent node; must be granted to the namespace by the Tailnet\'s spec.tenancy.tags (else TagNotGranted) and carried by no node this object did not register (else TagInUse). Default: derived, "<tagPrefix><namespace with each - doubled>-<name>" (a hashed form past 63 characters or for names with dots), needing no grant.',
});
/** status.tag of the kinds with agents. */
export const effectiveTag: Schema = str({
  description: "The tag the agent nodes carry (spec.tag or the derived one).",
});

export const proxyClassName: Schema = str({
  pattern: DNS1123_SUBDOMAIN_PATTERN,
  maxLength: 253,
  description: "A TailnetProxyClass whose pod settings the agent pods take; a missing class blocks Ready.",
});
export const aclEntities = (description: string): Schema =>
  arr(str({ minLength: 1 }), { description, "x-kubernetes-list-type": "set" });

export const commonWorkloadStatus = {
  observedGeneration,
  conditions,
};

/** A Kubernetes LabelSelector (matchLabels, matchExpressions with In, NotIn, Exists, DoesNotExist). */
export const labelSelector = (description: string): Schema =>
  obj(
    {
      matchLabels: {
        type: "object",
        additionalProperties: { type: "string" },
        description: "Labels a namespace must carry, each with this value.",
      },
      matchExpressions: arr(
        obj(
          {
            key: str({ minLength: 1, description: "The label key." }),
            operator: str({
              enum: ["In", "NotIn", "Exists", "DoesNotExist"],
              description: "How the label's value relates to values.",
            }),
            values: arr(str(), { description: "Values for In and NotIn; empty for Exists and DoesNotExist." }),
          },
          ["key", "operator"],
        ),
        { description: "Label requirements a namespace must meet, all of them (ANDed with matchLabels)." },
      ),
    },
    [],
    { description },
  );

export const port: Schema = int({ minimum: 1, maximum: 65535, description: "TCP port." });

/** The pre-auth keys the object minted: the only ones whose nodes and keys it may delete or expire. */
export const preAuthKeyIds = arr(str({ pattern: "^[0-9]+$" }), {
  maxItems: 128,
  description:
    "Ids of the pre-auth keys this object minted that a node may still use (every id a node still uses, and the newest 32 others); finalize and scale-downs delete only nodes registered with them and expire only them.",
});

/** One replica's node (status.nodes[]): which Headscale node replica i is, from its state Secret (issue 32). */
export const nodeStatusItem = obj(
  {
    replica: int({ minimum: 0, description: "The replica's ordinal (its StatefulSet pod index)." }),
    id: str({ description: "Headscale node id (the device_id containerboot wrote into the replica's state Secret)." }),
    name: str({ description: "The node's given name (its MagicDNS label)." }),
    addresses: arr(str(), { description: "The node's tailnet IP addresses." }),
    nodeKey: str({ description: "The node key recorded for this replica; another one is IdentityChanged." }),
    machineKey: str({ description: "The node's machine key, as Headscale lists it." }),
    preAuthKeyId: str({ description: "Id of the pre-auth key the node registered with." }),
    online: bool({ description: "Whether Headscale sees the node online." }),
    predecessorId: str({ description: "The node this replica had before it re-registered, until it is deleted." }),
  },
  ["replica", "id", "nodeKey"],
);

export const nodesStatus = arr(nodeStatusItem, {
  maxItems: 16,
  description: "One item per replica bound to a node, sorted by replica.",
  "x-kubernetes-list-type": "map",
  "x-kubernetes-list-map-keys": ["replica"],
});

/** cert-manager's group, the default of an issuerRef (cert-manager.io/v1 ObjectReference). */
export const CERT_MANAGER_GROUP = "cert-manager.io";

/** A cert-manager issuer, as cert-manager's Certificate.spec.issuerRef names one (docs/ingress-class.md). */
export const issuerRef = (description: string): Schema =>
  obj(
    {
      name: str({
        minLength: 1,
        maxLength: 253,
        pattern: DNS1123_SUBDOMAIN_PATTERN,
        description: "Name of the Issuer (in the object's namespace) or ClusterIssuer.",
      }),
      kind: str({ enum: ["Issuer", "ClusterIssuer"], default: "Issuer", description: "Issuer or ClusterIssuer." }),
      group: str({
        maxLength: 253,
        pattern: DNS1123_SUBDOMAIN_PATTERN,
        default: CERT_MANAGER_GROUP,
        description: "The issuer's API group: cert-manager.io, or an external issuer's.",
      }),
    },
    ["name"],
    { description },
  );
