/** TailnetGateway: spec and status. */

import { NOT_DEFAULT_ROUTE } from "../cel.js";
import {
  aclEntities,
  arr,
  bool,
  cidrItem,
  commonWorkloadStatus,
  DNS1035_PATTERN,
  DURATION_PATTERN,
  effectiveTag,
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
    suspend: bool({
      default: false,
      description:
        "Scale to zero (Ready=False/Suspended, out of the resource metrics); each replica keeps its state and node.",
    }),
    replicas: int({
      minimum: 1,
      maximum: 4,
      default: 1,
      description:
        "Gateway pods, each its own tailnet node advertising spec.routes; Headscale routes through one primary and fails over.",
    }),
    hostname: str({
      pattern: DNS1035_PATTERN,
      maxLength: 63,
      description: "The gateway node's tailnet name; default the object's name.",
    }),
    routes: arr(cidrItem(NOT_DEFAULT_ROUTE), {
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
        zone: str({
          minLength: 1,
          maxLength: 253,
          description:
            "The derived zone served to the cluster: A records for every TailnetEgress target named by a MagicDNS name.",
        }),
        clusterDNSForward: str({
          enum: ["Managed", "External"],
          default: "Managed",
          description:
            "Managed: the operator checks that kube-system/coredns forwards dns.zone to the gateway; External: you manage it (ExternallyManaged).",
        }),
      },
      [],
      {
        default: {},
        description: "The gateway's CoreDNS: cluster names for tailnet clients, the derived zone for the cluster.",
      },
    ),
    staleNodes: str({
      enum: ["Delete", "Keep"],
      default: "Delete",
      description:
        "What happens to the gateway's older nodes: Delete removes them; Keep reports them (ExternallyManaged).",
    }),
    service: obj(
      {
        type: str({
          enum: ["ClusterIP", "LoadBalancer"],
          default: "ClusterIP",
          description: "Type of the gateway's DNS Service.",
        }),
      },
      [],
      { default: {}, description: "The gateway's DNS Service." },
    ),
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
  tag: effectiveTag,
  node: obj(
    {
      id: str({ description: "Headscale node id." }),
      name: str({ description: "The node's given name." }),
      nodeKey: str({ description: "The node key recorded for it; another one is IdentityChanged." }),
      preAuthKeyId: str({ description: "Id of the bootstrap key it registered with." }),
    },
    [],
    {
      description: "Replica 0's node (status.nodes[] has every replica's).",
    },
  ),
  nodes: nodesStatus,
  preAuthKeyIds,
  dnsServiceIP: str({ description: "Cluster IP of the gateway's DNS Service." }),
});
