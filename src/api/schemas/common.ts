/**
 * What every kind's schema is built from (src/api/schemas.ts assembles them): the API group, the patterns
 * code and CRDs share, the JSON Schema builders and the fields several kinds declare alike.
 */
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
      namespace: str({ pattern: DNS1123_LABEL_PATTERN }),
      name: str({ pattern: DNS1123_SUBDOMAIN_PATTERN, maxLength: 253 }),
      key: str({ default: defaultKey, minLength: 1 }),
    },
    ["namespace", "name"],
    { description },
  );

export const conditions: Schema = arr(
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

export const tailnetRef: Schema = obj({ name: str({ minLength: 1, pattern: DNS1123_SUBDOMAIN_PATTERN }) }, ["name"], {
  description: "The cluster-scoped Tailnet this object belongs to.",
});
export const tag: Schema = str({
  pattern: TAG_PATTERN,
  description:
    'Tailnet tag of the agent node; must be granted to the namespace by the Tailnet\'s spec.tenancy.tags (else TagNotGranted) and carried by no node this object did not register (else TagInUse). Default: derived, "<tagPrefix><namespace with each - doubled>-<name>" (a hashed form past 63 characters or for names with dots), needing no grant.',
});
export const proxyClassName: Schema = str({
  pattern: DNS1123_SUBDOMAIN_PATTERN,
  maxLength: 253,
  description: "A TailnetProxyClass whose pod settings the agent pods take; a missing class blocks Ready.",
});
export const aclEntities = (description: string): Schema =>
  arr(str({ minLength: 1 }), { description, "x-kubernetes-list-type": "set" });

export const commonWorkloadStatus = {
  observedGeneration: int({ format: "int64" }),
  conditions,
};

/** A Kubernetes LabelSelector (matchLabels, matchExpressions with In, NotIn, Exists, DoesNotExist). */
export const labelSelector = (description: string): Schema =>
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

export const port: Schema = int({ minimum: 1, maximum: 65535 });

/** The pre-auth keys the object minted: the only ones whose nodes and keys it may delete or expire. */
export const preAuthKeyIds = arr(str({ pattern: "^[0-9]+$" }), {
  maxItems: 128,
  description:
    "Ids of the pre-auth keys this object minted that a node may still use (every id a node still uses, and the newest 32 others); finalize and scale-downs delete only nodes registered with them and expire only them.",
});

/** One replica's node (status.nodes[]): which Headscale node replica i is, from its state Secret (issue 32). */
export const nodeStatusItem = obj(
  {
    replica: int({ minimum: 0 }),
    id: str({ description: "Headscale node id (the device_id containerboot wrote into the replica's state Secret)." }),
    name: str({ description: "The node's given name (its MagicDNS label)." }),
    addresses: arr(str()),
    nodeKey: str({ description: "The node key recorded for this replica; another one is IdentityChanged." }),
    machineKey: str(),
    preAuthKeyId: str(),
    online: bool(),
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
