/** TailnetEgress: spec and status. */
import {
  arr,
  commonWorkloadStatus,
  DNS1035_PATTERN,
  effectiveTag,
  int,
  nodesStatus,
  obj,
  port,
  preAuthKeyIds,
  proxyClassName,
  type Schema,
  str,
  tag,
  tailnetRef,
} from "./common.js";

export const egressSpec: Schema = obj(
  {
    tailnetRef,
    tag,
    replicas: int({
      minimum: 0,
      maximum: 16,
      default: 1,
      description: "Agent pods, each its own tailnet node carrying the tag; 0 runs none.",
    }),
    proxyClassName,
    targets: arr(
      obj(
        {
          name: str({
            pattern: DNS1035_PATTERN,
            maxLength: 63,
            description: "Name of the target; also the name of the Service in this namespace that reaches it.",
          }),
          host: str({ minLength: 1, maxLength: 253, description: "Node name, MagicDNS FQDN or IP address." }),
          ports: arr(
            obj(
              {
                port: { ...port, description: "Port on the target, and on the Service." },
                protocol: str({ enum: ["TCP"], default: "TCP", description: "TCP only in v1alpha1." }),
              },
              ["port"],
            ),
            { minItems: 1, maxItems: 16, description: "Ports the Service forwards to the target." },
          ),
        },
        ["name", "host", "ports"],
      ),
      {
        minItems: 1,
        maxItems: 64,
        description: "Tailnet targets cluster workloads reach, each through a Service of its name in this namespace.",
        "x-kubernetes-list-type": "map",
        "x-kubernetes-list-map-keys": ["name"],
      },
    ),
  },
  ["tailnetRef", "targets"],
);

export const egressStatus: Schema = obj({
  ...commonWorkloadStatus,
  tag: effectiveTag,
  preAuthKeyIds,
  nodes: nodesStatus,
  targets: arr(
    obj({
      name: str({ description: "spec.targets[].name." }),
      host: str({ description: "spec.targets[].host." }),
      address: str({ description: "The tailnet address the host resolved to." }),
      service: str({ description: "The Service in this namespace that reaches the target." }),
      state: str({ description: "Ready or NotReady." }),
      reason: str({
        description:
          "Why the target is NotReady: NotAdvertised, NotApproved, NoGrant, TargetNotAllowed, ProbeFailed, Unreachable or OutsideTailnet (docs/reference/reasons.md); empty when Ready.",
      }),
    }),
    { description: "One item per target: where it resolved and whether the agent reaches it." },
  ),
});
