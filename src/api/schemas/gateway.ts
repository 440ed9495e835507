/** TailnetGateway: spec and status. */
import {
  aclEntities,
  arr,
  bool,
  CIDR_PATTERN,
  commonWorkloadStatus,
  DNS1035_PATTERN,
  DURATION_PATTERN,
  int,
  nodesStatus,
  obj,
  preAuthKeyIds,
  proxyClassName,
  type Schema,
  str,
  tag,
  tailnetRef,
} from "./common.js";

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
    bootstrapKeyTTL: str({
      default: "1h",
      pattern: DURATION_PATTERN,
      description:
        "TTL of the gateway's bootstrap key (reusable, tagged, one stable Secret rotated in place at half-life). A replica uses it once, at its first login; a rotation rolls no pod and never re-registers a node.",
    }),
  },
  ["tailnetRef"],
);

export const gatewayStatus: Schema = obj({
  ...commonWorkloadStatus,
  tag: str(),
  node: obj({ id: str(), name: str(), nodeKey: str(), preAuthKeyId: str() }, [], {
    description: "Replica 0's node (status.nodes[] has every replica's).",
  }),
  nodes: nodesStatus,
  preAuthKeyIds,
  dnsServiceIP: str(),
});
