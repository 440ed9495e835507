/** The NetworkPolicy of an agent's pods: its data-plane ports from whom the kind allows, 9080 from the scrapers. */

import type { NetworkPolicyPeer, OperatorConfig } from "../../config.js";
import { AGENT_METRICS_PORT } from "../../contract/ports.js";
import { commonLabels } from "../../k8s/labels.js";
import type { K8sObject } from "../../k8s/objects.js";
import { agentComponent, agentName, agentSelector } from "./agent-pod.js";

/** TCP 9080 only from the operator namespace plus the configured scrapers (monitoring.podMonitor.scrapeFrom). */
export function metricsPeers(config: OperatorConfig): NetworkPolicyPeer[] {
  return [
    { namespaceSelector: { matchLabels: { "kubernetes.io/metadata.name": config.operatorNamespace } } },
    ...config.monitoring.podMonitor.scrapeFrom,
  ];
}

/** A namespaceSelector peer for one namespace (e.g. egress clients in the egress's own namespace). */
export function namespacePeer(namespace: string): NetworkPolicyPeer {
  return { namespaceSelector: { matchLabels: { "kubernetes.io/metadata.name": namespace } } };
}

export function agentNetworkPolicy(
  parent: K8sObject,
  config: OperatorConfig,
  dataPlane: { ports: number[]; from: NetworkPolicyPeer[] } | undefined,
): K8sObject {
  const ingress: Record<string, unknown>[] = [];
  if (dataPlane?.ports.length) {
    ingress.push({ from: dataPlane.from, ports: dataPlane.ports.map((port) => ({ protocol: "TCP", port })) });
  }
  ingress.push({ from: metricsPeers(config), ports: [{ protocol: "TCP", port: AGENT_METRICS_PORT }] });
  return {
    apiVersion: "networking.k8s.io/v1",
    kind: "NetworkPolicy",
    metadata: {
      name: agentName(parent),
      namespace: parent.metadata.namespace,
      labels: commonLabels(parent, agentComponent(parent)),
    },
    spec: { podSelector: { matchLabels: agentSelector(parent) }, policyTypes: ["Ingress"], ingress },
  };
}
