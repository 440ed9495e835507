/**
 * LoadBalancer Services of class tailnet.internal/tailnet end to end (issue 26): the Metacontroller
 * emulator plays decoratorcontrollers/*.yaml — service-loadbalancer selects every Service — against the
 * real hook server and the fake Headscale. A Service of our class gets the TailnetIngress an annotated
 * one gets, bytes reach its backend through the agent, and its status.loadBalancer.ingress carries the
 * node's tailnet addresses and MagicDNS name. Services of other classes come out byte for byte as
 * they went in. Changing the type away from LoadBalancer removes the exposure and everything written.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { Obj } from "../../../../src/emulator/metacontroller/types.js";
import { DECORATOR_ANNOTATION } from "../../../../src/kinds/decorators/service/annotations.js";
import { startEchoServer } from "../../../fakes/agent/echo.js";
import { ingressAgent } from "../../composite/ingress/world.js";
import { lbService, NS, service } from "./fixtures.js";
import { nodeDeletedSince, pingThrough, type ServiceWorld, serviceWorld } from "./world.js";

const T = "tailnet.internal";
const CLASS = "tailnet.internal/tailnet";
type Ingress = { ip?: string; hostname?: string }[];
const lbIngress = (w: ServiceWorld, name: string) =>
  (w.svc(name)?.status as { loadBalancer?: { ingress?: Ingress } } | undefined)?.loadBalancer?.ingress;

async function settle(w: ServiceWorld) {
  const rounds = await w.mc.settle(20);
  assert.deepEqual(w.mc.errors, [], "every hook answered 200");
  return rounds;
}

/** Services that are not ours: a LoadBalancer of another class, a classless one, a ClusterIP Service. */
const otherServices = (): Obj[] => [
  service({
    name: "cloud",
    uid: "uid-cloud",
    annotations: {},
    type: "LoadBalancer",
    spec: { loadBalancerClass: "example.com/cloud" },
    status: { loadBalancer: { ingress: [{ ip: "203.0.113.10" }] } },
  }),
  service({ name: "classless", uid: "uid-classless", annotations: {}, type: "LoadBalancer" }),
  service({ name: "plain", uid: "uid-plain", annotations: {}, labels: { app: "plain" } }),
];

/** Services of other classes: byte for byte as applied — no label, annotation, status or finalizer. */
function assertLeftAlone(w: ServiceWorld, others: Obj[], asApplied: string[]) {
  assert.deepEqual(
    others.map((o) => JSON.stringify(w.svc(o.metadata.name))),
    asApplied,
  );
  for (const o of others) {
    const answers = w.mc.calls.filter((c) => c.hook === "sync" && c.parent === `${NS}/${o.metadata.name}`);
    assert.ok(answers.length > 0, `${o.metadata.name} was synced by service-loadbalancer`);
    for (const a of answers) assert.deepEqual(a.response, { labels: {}, annotations: {}, attachments: [] });
    assert.equal(w.eventsOn(o.metadata.name).length, 0);
  }
  assert.equal(
    w.mc.calls.filter((c) => c.hook === "finalize" && c.kind === "Service").length,
    0,
    "no finalize: no finalizer on any Service",
  );
}

describe("LoadBalancer Services of class tailnet.internal/tailnet end to end", () => {
  it("exposed like the annotation, EXTERNAL-IP = the tailnet addresses; other classes untouched; type change removes it", async (t) => {
    const w = await serviceWorld(t, { tags: ["tag:k8s-monitoring-grafana"] });
    const echo = await startEchoServer();
    t.after(() => echo.close());
    const others = otherServices();
    for (const o of others) w.mc.apply(o);
    const asApplied = others.map((o) => JSON.stringify(w.svc(o.metadata.name)));
    w.mc.apply(lbService({ uid: "uid-grafana", annotations: { [`${T}/allow-from`]: "group:eng" } }));
    await settle(w);

    const ing = w.attachment("TailnetIngress", "grafana");
    assert.ok(ing, "a TailnetIngress attachment");
    assert.equal(ing.metadata.ownerReferences?.[0]?.uid, "uid-grafana");
    assert.equal(ing.metadata.annotations?.[DECORATOR_ANNOTATION], "tailnet-operator-service-loadbalancer");
    assert.deepEqual((ing.spec as { allowFrom?: string[] }).allowFrom, ["group:eng"], "annotations still apply");
    assert.equal(w.svc("grafana")?.metadata.labels?.[`${T}/expose-state`], "NotReady");
    assert.equal(lbIngress(w, "grafana"), undefined, "no address before the exposure is Ready");

    w.register("grafana");
    const agent = await ingressAgent(t, ing, { backendPort: echo.port });
    w.pointPodsAt(agent.metricsPort);
    await settle(w);
    const svc = w.svc("grafana");
    assert.equal(
      svc?.metadata.labels?.[`${T}/expose-state`],
      "Ready",
      svc?.metadata.annotations?.[`${T}/expose-message`],
    );
    const node = [...w.hs.state.nodes.values()].find((n) => n.tags?.includes("tag:k8s-monitoring-grafana"));
    assert.ok(node, "the agent's node is registered");
    const v4 = [node.ipv4];
    const v6 = [node.ipv6];
    assert.deepEqual(lbIngress(w, "grafana"), [
      ...v4.map((ip) => ({ ip })),
      ...v6.map((ip) => ({ ip })),
      { hostname: "grafana.ts.example.com" },
    ]);
    const echoed = await pingThrough(t, agent.ports.exposes[0].listenPort);
    assert.equal(echoed, "ping", "bytes reach the backend through the agent");
    assert.deepEqual(
      w.eventsOn("grafana").map((e) => e.split(":")[0]),
      ["Pending", "NotReady", "Ready"],
    );
    const before = JSON.stringify(w.svc("grafana"));
    assert.equal(await settle(w), 1, "a repeat sync writes nothing (status included)");
    assert.equal(JSON.stringify(w.svc("grafana")), before);

    assertLeftAlone(w, others, asApplied);
    w.mc.delete("v1", "Service", "plain", NS);
    assert.equal(w.svc("plain"), undefined, "kubectl delete: nothing of ours holds it");

    // spec.type: ClusterIP — the API server drops the class with the type (it is immutable otherwise)
    const cluster = structuredClone(w.svc("grafana"));
    assert.ok(cluster);
    const spec = cluster.spec as { type: string; loadBalancerClass?: string };
    spec.type = "ClusterIP";
    delete spec.loadBalancerClass;
    w.mc.apply(cluster);
    const writes = w.hs.writes().length;
    await settle(w);
    assert.equal(w.attachment("TailnetIngress", "grafana"), undefined, "the exposure is gone");
    assert.ok(nodeDeletedSince(w.hs, writes), "through the ingress's own finalize (its Headscale node deleted)");
    const after = w.svc("grafana");
    assert.equal(after?.metadata.labels?.[`${T}/expose-state`], undefined);
    assert.deepEqual(
      Object.keys(after?.metadata.annotations ?? {}).filter((k) => k.startsWith(`${T}/`)),
      [`${T}/allow-from`],
      "only the user's own annotation is left",
    );
    assert.deepEqual(after?.status, { loadBalancer: {} }, "the tailnet addresses are withdrawn");
  });
});

describe("LoadBalancer Services of class tailnet.internal/tailnet end to end: the hand-over from the annotation", () => {
  it("class + expose: true — one exposure, the class's; removing the annotation changes nothing", async (t) => {
    const w = await serviceWorld(t, { tags: ["tag:k8s-monitoring-grafana"] });
    w.mc.apply(lbService({ uid: "uid-grafana", annotations: { [`${T}/expose`]: "true" } }));
    await settle(w);
    const ing = w.attachment("TailnetIngress", "grafana");
    assert.equal(ing?.metadata.annotations?.[DECORATOR_ANNOTATION], "tailnet-operator-service-loadbalancer");
    assert.equal(w.svc("grafana")?.metadata.labels?.[`${T}/expose-state`], "NotReady");
    assert.equal(w.eventsOn("grafana").length, 2, "one decorator records: Pending, NotReady");
    const before = JSON.stringify(w.svc("grafana")?.metadata.labels);
    const live = structuredClone(w.svc("grafana"));
    assert.ok(live?.metadata.annotations);
    delete live.metadata.annotations[`${T}/expose`];
    w.mc.apply(live);
    await settle(w);
    assert.equal(JSON.stringify(w.svc("grafana")?.metadata.labels), before, "the expose finalize cleared nothing");
    assert.equal(w.attachment("TailnetIngress", "grafana")?.metadata.uid, ing?.metadata.uid, "the same ingress");
  });

  it(`an annotated ClusterIP Service that becomes a LoadBalancer of ${CLASS}: handed over, one ingress at the end`, async (t) => {
    const w = await serviceWorld(t, { tags: ["tag:k8s-monitoring-grafana"] });
    w.mc.apply(service({ uid: "uid-grafana" }));
    await settle(w);
    assert.equal(
      w.attachment("TailnetIngress", "grafana")?.metadata.annotations?.[DECORATOR_ANNOTATION],
      "tailnet-operator-service-expose",
    );
    const live = structuredClone(w.svc("grafana"));
    assert.ok(live);
    Object.assign(live.spec as object, { type: "LoadBalancer", loadBalancerClass: CLASS });
    w.mc.apply(live);
    await settle(w);
    await settle(w);
    const ingresses = w.mc.list("TailnetIngress");
    assert.equal(ingresses.length, 1);
    assert.equal(ingresses[0].metadata.annotations?.[DECORATOR_ANNOTATION], "tailnet-operator-service-loadbalancer");
    assert.equal(w.svc("grafana")?.metadata.labels?.[`${T}/expose-state`], "NotReady");
  });
});
