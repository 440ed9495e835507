/**
 * The children of a TailnetEgress, one builder per object: the shared agent pieces (ConfigMap,
 * NetworkPolicy, and per replica a ServiceAccount, Role, RoleBinding, state Secret and StatefulSet —
 * agent-replicas.ts) plus one Service per target, named after the target, whose ports map the target's
 * ports to the agent's listen ports, and the stable key Secret.
 */

import type { OperatorConfig } from "../../../config.js";
import type { AgentConfigInput } from "../../../contract/agent-config.js";
import {
  AGENT_METRICS_PORT,
  NETSTACK_FORWARD_HOST,
  POD_IP_HOST,
  TAILSCALE_SOCKS_ADDR,
  TAILSCALED_SOCKET,
} from "../../../contract/ports.js";
import { commonLabels, EGRESS_TARGET_LABEL } from "../../../k8s/labels.js";
import type { K8sObject } from "../../../k8s/objects.js";
import { agentNetworkPolicy, namespacePeer } from "../../shared/agent-network-policy.js";
import { agentConfigMap, agentSelector, agentStatefulSet, dnsLabel } from "../../shared/agent-pod.js";
import { type ReplicaObservation, replicaChildrenOf } from "../../shared/agent-replicas.js";
import { configHash } from "../../shared/pod-template.js";
import { applyProxyClass, type ProxyClassSpec } from "../../shared/proxy-class.js";
import type { ReplicaNodesPlan } from "../../shared/replica-nodes.js";
import type { EgressSpec, EgressTarget } from "./spec.js";

/** On each target Service: the host the agent forwards to (a gateway's derived zone reads it). */
export const TARGET_HOST_ANNOTATION = "tailnet.internal/target-host";

/** The agent's tailnet host name: "<namespace>-<name>" (api.md: egress db in shop is "shop-db"). */
export function egressHostname(parent: K8sObject): string {
  return dnsLabel(`${parent.metadata.namespace ?? ""}-${parent.metadata.name}`);
}

/**
 * The agent config the ConfigMap carries: every target (a conflicting one too — its listen port
 * stays where egressListenPorts puts it), dialled through tailscaled's SOCKS5 proxy.
 */
export function egressAgentConfig({
  targets,
  listenPorts: listen,
}: Pick<EgressSpec, "targets" | "listenPorts">): AgentConfigInput {
  return {
    role: "egress",
    metricsPort: AGENT_METRICS_PORT,
    // the pod IP: Services and probes arrive there, tailscaled's netstack forward never does (src/contract/ports.ts)
    metricsHost: POD_IP_HOST,
    listenHost: POD_IP_HOST,
    refuseHost: NETSTACK_FORWARD_HOST,
    tailscale: { socksAddr: TAILSCALE_SOCKS_ADDR, localApiSocket: TAILSCALED_SOCKET },
    targets: targets.map((t, i) => ({
      name: t.name,
      host: t.host,
      ports: t.ports.map((p, j) => ({ port: p.port, listenPort: listen[i][j] })),
    })),
  };
}

/** One Service per target: port = the target port, targetPort = the agent's listen port for it. */
export function targetService(parent: K8sObject, target: EgressTarget, listenPorts: readonly number[]): K8sObject {
  return {
    apiVersion: "v1",
    kind: "Service",
    metadata: {
      name: target.name,
      namespace: parent.metadata.namespace,
      labels: { ...commonLabels(parent, "egress"), [EGRESS_TARGET_LABEL]: "true" },
      annotations: { [TARGET_HOST_ANNOTATION]: target.host },
    },
    spec: {
      type: "ClusterIP",
      selector: agentSelector(parent),
      ports: target.ports.map((p, i) => ({
        name: `${p.protocol.toLowerCase()}-${p.port}`,
        protocol: p.protocol,
        port: p.port,
        targetPort: listenPorts[i],
      })),
    },
  };
}

const withProxyClass = (d: K8sObject, cls: ProxyClassSpec | undefined) => (cls ? applyProxyClass(d, cls) : d);

export interface EgressChildrenInputs {
  config: OperatorConfig;
  spec: EgressSpec;
  tag: string;
  /** The Tailnet's Headscale URL. */
  loginServer: string;
  /** The pre-auth key Secret child (reused or new); undefined while no key exists. */
  authKeySecret?: K8sObject;
  /** Targets whose Service name is held by a foreign Service: no Service is returned for them. */
  conflicting: ReadonlySet<string>;
  /** The Headscale CA (the Tailnet's caSecretRef, republished in its credentials Secret). */
  ca?: string;
  /** The named TailnetProxyClass's settings, folded into the pod template. */
  proxyClass?: ProxyClassSpec;
  /** What the sync observed of its replicas (StatefulSets kept as they are while no key exists). */
  replicas: ReplicaObservation;
  replicaPlan?: ReplicaNodesPlan;
  /** Removed replicas whose nodes act deleted: their children go now. */
  released: ReadonlySet<number>;
  /** Every replica is bound: the legacy Deployment and key Secrets go. */
  migrated: boolean;
}

/** Every desired child, in a fixed order. */
export function egressChildren(parent: K8sObject, inputs: EgressChildrenInputs): K8sObject[] {
  const { spec } = inputs;
  const agentConfig = egressAgentConfig(spec);
  const configMap = agentConfigMap(parent, agentConfig, undefined, inputs.ca);
  const listen = spec.listenPorts;
  const allListenPorts = listen.flat();
  const replicaChildren = replicaChildrenOf(parent, spec.replicas, inputs, (replica) =>
    withProxyClass(
      agentStatefulSet(
        parent,
        {
          tag: inputs.tag,
          loginServer: inputs.loginServer,
          authKeySecret: inputs.authKeySecret?.metadata.name,
          hostname: egressHostname(parent),
          images: inputs.config.images,
          listenPorts: allListenPorts,
          configHash: configHash(configMap.data),
          ca: !!inputs.ca,
          noLogsNoSupport: inputs.config.tailscale.noLogsNoSupport,
          // always: a target may be an address behind a peer's subnet route (docs/OPERATIONS.md)
          acceptRoutes: true,
          socks: true,
        },
        replica,
      ),
      inputs.proxyClass,
    ),
  );
  const services = spec.targets.flatMap((t, i) =>
    inputs.conflicting.has(t.name) ? [] : [targetService(parent, t, listen[i])],
  );
  const networkPolicy = agentNetworkPolicy(parent, inputs.config, {
    ports: allListenPorts,
    from: [namespacePeer(parent.metadata.namespace ?? "")],
  });
  return [
    configMap,
    ...replicaChildren,
    ...services,
    networkPolicy,
    ...(inputs.authKeySecret ? [inputs.authKeySecret] : []),
  ];
}
