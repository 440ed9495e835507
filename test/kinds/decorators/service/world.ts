/**
 * The end-to-end world of annotated Services: the Metacontroller emulator (CompositeControllers and
 * DecoratorControllers from the repo's manifests) drives the real hook server, whose TailnetIngress
 * and TailnetEgress kinds talk to the fake Headscale. The Tailnet kind is a stub (it would PUT
 * policies); the Tailnet and its credentials Secret are applied as objects, the policy set on the fake.
 */
import { connect } from "node:net";
import { API_VERSION, type HookKind } from "../../../../src/api/schemas.js";
import { HeadscaleViews } from "../../../../src/headscale/view.js";
import type { K8sObject } from "../../../../src/k8s/objects.js";
import { kindModules } from "../../../../src/kinds/composite/index.js";
import { createOperatorMetrics } from "../../../../src/metrics/registry.js";
import type { KindModule, OperatorEvent } from "../../../../src/pipeline/types.js";
import { memoryEventRecorder } from "../../../../src/server/events.js";
import { closedPort } from "../../../fakes/agent/echo.js";
import { type FakeHeadscale, useFakeHeadscale } from "../../../fakes/headscale/index.js";
import { silentTailnet } from "../../../fakes/kind-stub.js";
import { FakeMetacontroller } from "../../../fakes/metacontroller.js";
import { build } from "../../../helpers/server.js";
import { credentials, tailnet } from "../../composite/ingress/fixtures.js";
import { bootReplica } from "../../shared/replica-boot.js";
import { pointPodsAt } from "../../shared/world.js";
import { NS } from "./fixtures.js";

type Ctx = { after: (fn: () => Promise<void> | void) => void };

export interface ServiceWorld {
  hs: FakeHeadscale;
  mc: FakeMetacontroller;
  events: OperatorEvent[];
  pointPodsAt(port: number): void;
  svc(name: string): K8sObject | undefined;
  attachment(kind: "TailnetIngress" | "TailnetEgress", name: string): K8sObject | undefined;
  /** Registers the agent node of an attachment with the pre-auth key the operator put in its Secret. */
  register(name: string): void;
  /** `reason: message` of every Event on a Service, in order. */
  eventsOn(name: string): string[];
}

export async function serviceWorld(t: Ctx, opts: { tags?: string[]; tailnets?: string[] } = {}): Promise<ServiceWorld> {
  const tags = opts.tags ?? ["tag:k8s-monitoring-grafana"];
  const policy = JSON.stringify({ tagOwners: Object.fromEntries(tags.map((x) => [x, []])) }, null, 2);
  const hs = await useFakeHeadscale(t, { policy });
  const views = new HeadscaleViews({ timeoutMs: 5000, cacheTTLSeconds: 0, retries: 0 }); // generous: the machine is shared
  t.after(() => views.close());
  const kinds = new Map<HookKind, KindModule>(kindModules);
  kinds.set("tailnet", silentTailnet);
  const recorder = memoryEventRecorder();
  const { app } = await build(t, {
    server: { kinds, deps: { views, metrics: createOperatorMetrics({ defaultMetrics: false }), events: recorder } },
  });
  let port = await closedPort();
  // agents run one StatefulSet per replica (issue 32): the emulator runs their Pods
  const mc = new FakeMetacontroller({ app, agentPods: { metricsPort: () => port } });
  for (const name of opts.tailnets ?? ["home"]) {
    mc.apply(tailnet(name, { headscale: { url: hs.url, apiKeySecretRef: { namespace: "x", name: "y" } } }));
    mc.apply(credentials(hs.url, hs.apiKey, name));
  }
  return {
    hs,
    mc,
    events: recorder.events,
    pointPodsAt(next) {
      port = next;
      pointPodsAt(mc, next);
    },
    svc: (name) => mc.get("v1", "Service", name, NS),
    attachment: (kind, name) => mc.get(API_VERSION, kind, name, NS),
    register(name) {
      bootReplica(mc, hs, NS, `${name}-agent`, 0);
    },
    eventsOn: (name) =>
      recorder.events
        .filter((e) => e.regarding.kind === "Service" && e.regarding.metadata.name === name)
        .map((e) => `${e.reason}: ${e.message}`),
  };
}

/**
 * What the agent's TCP expose answers to "ping", dialled where tailscaled's serve dials (the
 * operator's serve config), not 127.0.0.1 (issue 31): the echo backend says it back.
 */
export async function pingThrough(t: Ctx, listenPort: number): Promise<string> {
  const socket = connect(listenPort, "127.0.0.2");
  t.after(() => {
    socket.destroy();
  });
  return new Promise<string>((resolve, reject) => {
    socket.once("data", (b) => resolve(b.toString()));
    socket.once("error", reject);
    socket.write("ping");
  });
}

/** Whether a Headscale node was deleted since the fake had seen `from` writes. */
export const nodeDeletedSince = (hs: FakeHeadscale, from: number) =>
  hs
    .writes()
    .slice(from)
    .some((r) => r.method === "DELETE" && r.path.startsWith("/api/v1/node/"));
