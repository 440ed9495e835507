/**
 * Best-effort Kubernetes Events (e.g. PolicyDriftOverwritten). Metacontroller owns every other
 * write; a failed Event is logged, never fatal. Outside a cluster the event is only logged.
 */
import type { FastifyBaseLogger } from "fastify";
import type { EventRecorder, OperatorEvent } from "../pipeline/types.js";

/**
 * `kubeConfig` (tests against a real API server) replaces the in-cluster configuration; either way the Events
 * are written with the operator's own credentials, which its ClusterRole allows (manifests/base/rbac.yaml).
 */
export function kubeEventRecorder(
  log: FastifyBaseLogger,
  opts: { kubeConfig?: import("@kubernetes/client-node").KubeConfig } = {},
): EventRecorder {
  let client: Promise<{ create: (ns: string, body: object) => Promise<unknown> } | null> | undefined;
  const getClient = () => {
    client ??= (async () => {
      if (!opts.kubeConfig && !process.env.KUBERNETES_SERVICE_HOST) return null;
      const k8s = await import("@kubernetes/client-node");
      const kc = opts.kubeConfig ?? new k8s.KubeConfig();
      if (!opts.kubeConfig) kc.loadFromCluster();
      const api = kc.makeApiClient(k8s.CoreV1Api);
      type EventBody = Parameters<typeof api.createNamespacedEvent>[0]["body"];
      return {
        create: (namespace: string, body: object) => api.createNamespacedEvent({ namespace, body: body as EventBody }),
      };
    })().catch((e) => {
      log.warn({ err: e }, "cannot build a Kubernetes client; events will only be logged");
      return null;
    });
    return client;
  };
  return {
    async record(ev: OperatorEvent) {
      const meta = ev.regarding.metadata;
      log.info({ reason: ev.reason, object: `${ev.regarding.kind}/${meta.name}` }, ev.message);
      const c = await getClient();
      if (!c) return;
      const namespace = meta.namespace ?? "default";
      const now = new Date();
      try {
        await c.create(namespace, {
          metadata: { generateName: `${meta.name}.`, namespace },
          involvedObject: {
            apiVersion: ev.regarding.apiVersion,
            kind: ev.regarding.kind,
            name: meta.name,
            namespace: meta.namespace,
            uid: meta.uid,
          },
          reason: ev.reason,
          // events.k8s.io caps a note at 1 kB; a long condition message keeps its start
          message: ev.message.length > 1024 ? `${ev.message.slice(0, 1021)}...` : ev.message,
          type: ev.type,
          source: { component: "tailnet-operator" },
          firstTimestamp: now,
          lastTimestamp: now,
          count: 1,
        });
      } catch (e) {
        log.warn({ err: { message: (e as Error).message }, reason: ev.reason }, "event not recorded");
      }
    },
  };
}

/** For tests and render: keeps events in memory. */
export function memoryEventRecorder(): EventRecorder & { events: OperatorEvent[] } {
  const events: OperatorEvent[] = [];
  return {
    events,
    async record(ev) {
      events.push(ev);
    },
  };
}
