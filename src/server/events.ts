/**
 * Best-effort Kubernetes Events (every condition change, PolicyDriftOverwritten). Metacontroller owns every
 * other write; a failed Event is logged, never fatal. Outside a cluster the event is only logged.
 *
 * At most EVENT_WRITERS creates are in flight and EVENT_QUEUE wait: when Headscale goes down, every object's
 * conditions change in the same minute, and thousands of Events at once would compete with Metacontroller for
 * the API server (client-go's recorder rate-limits for the same reason, tools/record/events_cache.go). What
 * does not fit is dropped and counted in one log line; the condition itself is in status.
 */
import type { FastifyBaseLogger } from "fastify";
import type { EventRecorder, OperatorEvent } from "../pipeline/types.js";

/**
 * `kubeConfig` (tests against a real API server) replaces the in-cluster configuration, `client` the API
 * client (pure tests); in a cluster the Events are written with the operator's own credentials, which its
 * ClusterRole allows (manifests/base/rbac.yaml).
 */
export const EVENT_WRITERS = 4;
export const EVENT_QUEUE = 2000;

/** The one call the recorder makes: POST a core/v1 Event into a namespace. */
export interface EventClient {
  create(namespace: string, body: object): Promise<unknown>;
}

export function kubeEventRecorder(
  log: FastifyBaseLogger,
  opts: { kubeConfig?: import("@kubernetes/client-node").KubeConfig; client?: EventClient } = {},
): EventRecorder {
  let client: Promise<EventClient | null> | undefined = opts.client ? Promise.resolve(opts.client) : undefined;
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
  const queue: (() => Promise<void>)[] = [];
  let writing = 0;
  let dropped = 0;
  const pump = () => {
    while (writing < EVENT_WRITERS && queue.length) {
      const next = queue.shift() as () => Promise<void>;
      writing++;
      void next().finally(() => {
        writing--;
        pump();
      });
    }
    if (!writing && dropped) {
      log.warn({ dropped }, "Events dropped: more condition changes at once than the recorder queues");
      dropped = 0;
    }
  };
  const write = async (ev: OperatorEvent) => {
    const meta = ev.regarding.metadata;
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
  };
  return {
    async record(ev: OperatorEvent) {
      log.info({ reason: ev.reason, object: `${ev.regarding.kind}/${ev.regarding.metadata.name}` }, ev.message);
      if (queue.length >= EVENT_QUEUE) {
        dropped++;
        return;
      }
      queue.push(() => write(ev));
      pump();
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
