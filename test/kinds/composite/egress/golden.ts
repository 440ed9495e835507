/**
 * Golden egress children from an options object: the agent pieces come from the shared goldens,
 * the target Services and the agent config are written out here.
 */

import type { K8sObject } from "../../../../src/k8s/objects.js";
import { configHash } from "../../../../src/kinds/shared/pod-template.js";
import { stampWorkload } from "../../../../src/kinds/shared/template-hash.js";
import {
  expectedAgentStatefulSet,
  expectedConfigMap,
  expectedLabels,
  expectedNetworkPolicy,
  expectedReplicaIdentity,
  expectedSelector,
} from "../../shared/golden.js";

export interface GoldenTarget {
  name: string;
  host: string;
  ports: number[];
}

export interface EgressGoldenOptions {
  name: string;
  namespace: string;
  uid: string;
  replicas: number;
  tag: string;
  loginServer: string;
  hostname: string;
  images: { agent: string; tailscale: string };
  operatorNamespace: string;
  scrapeFrom: unknown[];
  targets: GoldenTarget[];
  authKeySecret?: K8sObject;
  conflicting?: string[];
  /** The Headscale CA: ca.crt in the ConfigMap, SSL_CERT_FILE on the tailscale container. */
  ca?: string;
  /** No key: the StatefulSets returned as they were observed (none when undefined), by replica. */
  observedStatefulSets?: K8sObject[];
  /** The replicas' SA, Role, RoleBinding and state Secret are observed: their StatefulSets are answered. Default true. */
  identityObserved?: boolean;
}

/** Listen ports from 10000 in target order, then port order. */
export function expectedListenPorts(targets: readonly GoldenTarget[]): number[][] {
  let next = 10000;
  return targets.map((t) => t.ports.map(() => next++));
}

export function expectedAgentConfig(targets: readonly GoldenTarget[]) {
  const listen = expectedListenPorts(targets);
  return {
    role: "egress",
    metricsPort: 9080,
    metricsHost: "pod-ip",
    listenHost: "pod-ip",
    refuseHost: "127.0.0.1",
    tailscale: { socksAddr: "127.0.0.2:1055", localApiSocket: "/var/run/tailscale/tailscaled.sock" },
    targets: targets.map((t, i) => ({
      name: t.name,
      host: t.host,
      ports: t.ports.map((port, j) => ({ port, listenPort: listen[i][j] })),
    })),
  };
}

export function expectedTargetService(o: EgressGoldenOptions, target: GoldenTarget, listenPorts: number[]): K8sObject {
  const id = { kind: "TailnetEgress" as const, name: o.name, uid: o.uid };
  return {
    apiVersion: "v1",
    kind: "Service",
    metadata: {
      name: target.name,
      namespace: o.namespace,
      labels: { ...expectedLabels(id), "tailnet.internal/egress-target": "true" },
      annotations: { "tailnet.internal/target-host": target.host },
    },
    spec: {
      type: "ClusterIP",
      selector: expectedSelector(id),
      ports: target.ports.map((port, i) => ({
        name: `tcp-${port}`,
        protocol: "TCP",
        port,
        targetPort: listenPorts[i],
      })),
    },
  };
}

/** A kept child goes back without its status (Metacontroller owns nothing there). */
function withoutStatus(o: K8sObject): K8sObject {
  const { status: _status, ...rest } = o;
  return rest;
}

export function expectedEgressChildren(o: EgressGoldenOptions): K8sObject[] {
  const id = { kind: "TailnetEgress" as const, name: o.name, namespace: o.namespace, uid: o.uid };
  const listen = expectedListenPorts(o.targets);
  const configMap = expectedConfigMap(id, expectedAgentConfig(o.targets), undefined, o.ca);
  const conflicting = new Set(o.conflicting ?? []);
  // never a tailscale container without its key, nor before its RBAC and state Secret exist (creation order)
  const replicas = Array.from({ length: o.replicas }, (_, i) => {
    const observed = o.observedStatefulSets?.[i];
    const sts =
      o.authKeySecret && (observed || o.identityObserved !== false)
        ? // the template carries the hash of itself (src/kinds/shared/template-hash.ts)
          stampWorkload(
            expectedAgentStatefulSet(
              {
                ...id,
                replicas: 1,
                tag: o.tag,
                loginServer: o.loginServer,
                authKeySecret: o.authKeySecret.metadata.name,
                hostname: o.hostname,
                images: o.images,
                listenPorts: listen.flat(),
                configHash: configHash(configMap.data),
                ca: !!o.ca,
                acceptRoutes: true,
                socks: true,
              },
              i,
            ),
          )
        : observed && withoutStatus(observed);
    return [...expectedReplicaIdentity(id, i), ...(sts ? [sts] : [])];
  });
  return [
    configMap,
    ...replicas.flat(),
    ...o.targets.flatMap((t, i) => (conflicting.has(t.name) ? [] : [expectedTargetService(o, t, listen[i])])),
    expectedNetworkPolicy(id, {
      operatorNamespace: o.operatorNamespace,
      scrapeFrom: o.scrapeFrom,
      dataPorts: listen.flat(),
      dataFrom: [{ namespaceSelector: { matchLabels: { "kubernetes.io/metadata.name": o.namespace } } }],
    }),
    ...(o.authKeySecret ? [o.authKeySecret] : []),
  ];
}
