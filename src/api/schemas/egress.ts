/** TailnetEgress: spec and status. */
import {
  arr,
  commonWorkloadStatus,
  DNS1035_PATTERN,
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

export const egressStatus: Schema = obj({
  ...commonWorkloadStatus,
  tag: str(),
  preAuthKeyIds,
  nodes: nodesStatus,
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
