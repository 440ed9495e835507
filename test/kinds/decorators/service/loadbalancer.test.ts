/**
 * LoadBalancer Services of class tailnet.internal/tailnet (issue 26): which Services the
 * service-loadbalancer decorator takes (table), the `status.loadBalancer` it answers (shapes), what it
 * answers for every other Service (nothing), and the hooks as Metacontroller calls them.
 */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { describe, it } from "node:test";
import { parse } from "yaml";
import { isTailnetLoadBalancer } from "../../../../src/kinds/decorators/service/annotations.js";
import { exposureOf, leftAlone, loadBalancerStatus } from "../../../../src/kinds/decorators/service/loadbalancer.js";
import { memoryEventRecorder } from "../../../../src/server/events.js";
import { build } from "../../../helpers/server.js";
import { GRAFANA_INGRESS_SPEC, lbService, observed, ready, service, tailnet, UID } from "./fixtures.js";

const T = "tailnet.internal";
const CLASS = "tailnet.internal/tailnet";
const ING = "TailnetIngress.tailnet.internal/v1alpha1";
const TN = "Tailnet.tailnet.internal/v1alpha1";
const SVC = "Service.v1";

describe("which Services are ours", () => {
  const rows: { name: string; spec: Record<string, unknown>; annotations?: Record<string, string>; want: string }[] = [
    { name: "LoadBalancer of our class", spec: { type: "LoadBalancer", loadBalancerClass: CLASS }, want: "class" },
    {
      name: "LoadBalancer of another class",
      spec: { type: "LoadBalancer", loadBalancerClass: "example.com/lb" },
      want: "-",
    },
    {
      name: "LoadBalancer of the Tailscale operator's class",
      spec: { type: "LoadBalancer", loadBalancerClass: "tailscale" },
      want: "-",
    },
    { name: "classless LoadBalancer (default class off)", spec: { type: "LoadBalancer" }, want: "-" },
    { name: "classless LoadBalancer, default class on", spec: { type: "LoadBalancer" }, want: "class(default)" },
    {
      name: "another class, default class on",
      spec: { type: "LoadBalancer", loadBalancerClass: "example.com/lb" },
      want: "-(default)",
    },
    { name: "ClusterIP", spec: { type: "ClusterIP" }, want: "-" },
    { name: "NodePort", spec: { type: "NodePort" }, want: "-" },
    {
      name: "ClusterIP annotated expose: true",
      spec: { type: "ClusterIP" },
      annotations: { [`${T}/expose`]: "true" },
      want: "annotation",
    },
    {
      name: "our class and annotated: the class",
      spec: { type: "LoadBalancer", loadBalancerClass: CLASS },
      annotations: { [`${T}/expose`]: "true" },
      want: "class",
    },
  ];
  for (const row of rows) {
    it(row.name, () => {
      const defaultClass = row.want.endsWith("(default)");
      const s = service({ annotations: row.annotations ?? {}, spec: row.spec });
      assert.equal(exposureOf(s, defaultClass) ?? "-", row.want.replace("(default)", ""));
      assert.equal(isTailnetLoadBalancer(s, defaultClass), row.want.startsWith("class"));
    });
  }
});

describe("status.loadBalancer", () => {
  const nodes = [{ name: "grafana-agent-0", addresses: ["fd7a:115c:a1e0::5", "100.64.0.5"], online: true }];
  const attached = (status: Record<string, unknown>) =>
    observed("TailnetIngress", { spec: GRAFANA_INGRESS_SPEC, ownerUid: UID, status });
  const readyIng = attached({ ...ready("True", "Ready"), dnsName: "grafana.ts.example.com", nodes });
  const full = [{ ip: "100.64.0.5" }, { ip: "fd7a:115c:a1e0::5" }, { hostname: "grafana.ts.example.com" }];

  it("Ready: IPv4, then IPv6, then the MagicDNS name; every other status field kept", () => {
    const svc = lbService({ status: { conditions: [{ type: "Foo", status: "True" }] } });
    assert.deepEqual(loadBalancerStatus(svc, true, readyIng), {
      conditions: [{ type: "Foo", status: "True" }],
      loadBalancer: { ingress: full },
    });
  });
  it("not Ready and never published: {} (as the API server stores an empty status.loadBalancer)", () => {
    assert.deepEqual(loadBalancerStatus(lbService(), false, readyIng), { loadBalancer: {} });
    assert.deepEqual(loadBalancerStatus(lbService(), true, undefined), { loadBalancer: {} });
  });
  it("published, then NotReady with the same addresses: kept (EXTERNAL-IP does not flap)", () => {
    const svc = lbService({ status: { loadBalancer: { ingress: full } } });
    assert.deepEqual(loadBalancerStatus(svc, false, readyIng), { loadBalancer: { ingress: full } });
  });
  it("published, then the node re-registered with other addresses and not Ready: withdrawn", () => {
    const svc = lbService({ status: { loadBalancer: { ingress: full } } });
    const moved = attached({ dnsName: "grafana.ts.example.com", nodes: [{ name: "x", addresses: ["100.64.0.9"] }] });
    assert.deepEqual(loadBalancerStatus(svc, false, moved), { loadBalancer: {} });
  });
  it("the server's ipMode (defaulted to VIP) is kept as the server wrote it: no status write on every sync", () => {
    const stored = [{ ip: "100.64.0.5", ipMode: "VIP" }, { ip: "fd7a:115c:a1e0::5", ipMode: "VIP" }, full[2]];
    const svc = lbService({ status: { loadBalancer: { ingress: stored } } });
    assert.deepEqual(loadBalancerStatus(svc, true, readyIng), { loadBalancer: { ingress: stored } });
  });
  it("no DNS name published (HostnameReserved): the addresses only", () => {
    const noName = attached({ ...ready("True", "Ready"), nodes });
    assert.deepEqual(loadBalancerStatus(lbService(), true, noName), { loadBalancer: { ingress: full.slice(0, 2) } });
  });
});

describe("every other Service is left alone", () => {
  it("another class, ClusterIP, classless: no label, annotation or status in the answer", () => {
    for (const s of [
      service({ annotations: {}, type: "LoadBalancer", spec: { loadBalancerClass: "example.com/lb" } }),
      service({
        annotations: {},
        type: "LoadBalancer",
        status: { loadBalancer: { ingress: [{ ip: "203.0.113.1" }] } },
      }),
      service({ annotations: {} }),
    ]) {
      assert.deepEqual(leftAlone(s), { labels: {}, annotations: {} });
    }
  });
  it("an annotated Service's state is the annotation decorator's: untouched", () => {
    const s = service({ labels: { [`${T}/expose-state`]: "Ready" } });
    assert.deepEqual(leftAlone(s), { labels: {}, annotations: {} });
  });
  it("was ours, now ClusterIP: our state removed and the stale addresses cleared", () => {
    const s = service({
      annotations: { [`${T}/expose-message`]: "reachable", [`${T}/hostname`]: "web" },
      labels: { [`${T}/expose-state`]: "Ready" },
      status: { loadBalancer: { ingress: [{ ip: "100.64.0.5" }] } },
    });
    assert.deepEqual(leftAlone(s), {
      labels: { [`${T}/expose-state`]: null },
      annotations: { [`${T}/expose-message`]: null, [`${T}/dns-name`]: null },
      status: { loadBalancer: {} },
    });
  });
  it("our state on a LoadBalancer of another class: the state goes, its addresses (another controller's) stay", () => {
    const s = service({
      annotations: {},
      labels: { [`${T}/expose-state`]: "Ready" },
      type: "LoadBalancer",
      spec: { loadBalancerClass: "example.com/lb" },
      status: { loadBalancer: { ingress: [{ ip: "203.0.113.1" }] } },
    });
    assert.equal(leftAlone(s).status, undefined);
  });
});

/** The shipped service-loadbalancer DecoratorController. */
const dc = parse(
  readFileSync(new URL("../../../../decoratorcontrollers/service-loadbalancer.yaml", import.meta.url), "utf8"),
) as { metadata: { name: string }; spec: Record<string, unknown> };
/** A sync request of service-loadbalancer for `object`, the Tailnet `home` related. */
const body = (object: unknown) => ({
  controller: { metadata: { name: dc.metadata.name }, spec: dc.spec, status: {} },
  object,
  attachments: { [ING]: {} },
  related: { [TN]: { home: tailnet("home") }, [ING]: {}, [SVC]: {} },
  finalizing: false,
});
async function world(t: { after: (fn: () => Promise<void> | void) => void }, config: Record<string, unknown> = {}) {
  const events = memoryEventRecorder();
  const { app } = await build(t, { config, server: { deps: { events } } });
  const post = async (path: string, payload: unknown) => {
    const res = await app.inject({ method: "POST", url: path, payload: payload as object });
    return { code: res.statusCode, json: JSON.parse(res.body) as Record<string, unknown>, text: res.body };
  };
  return { events, post };
}

describe("hooks /hooks/service-loadbalancer/*", () => {
  it("the DecoratorController selects every Service, declares no finalize hook and no resync period", () => {
    const spec = dc.spec as { resources: Record<string, unknown>[]; hooks: Record<string, unknown> };
    assert.deepEqual(spec.resources, [{ apiVersion: "v1", resource: "services" }]);
    assert.deepEqual(Object.keys(spec.hooks).sort(), ["customize", "sync"]);
    assert.equal((dc.spec as { resyncPeriodSeconds?: number }).resyncPeriodSeconds, undefined);
  });

  it("a Service of another class: the answer is empty — no label, annotation, status, attachment — and no Event", async (t) => {
    const w = await world(t);
    const other = service({ annotations: {}, type: "LoadBalancer", spec: { loadBalancerClass: "example.com/lb" } });
    const r = await w.post("/hooks/service-loadbalancer/sync", body(other));
    assert.equal(r.code, 200, r.text);
    assert.deepEqual(r.json, { labels: {}, annotations: {}, attachments: [] });
    assert.deepEqual(w.events.events, []);
    const c = await w.post("/hooks/service-loadbalancer/customize", {
      controller: {},
      parent: service({ annotations: {} }),
    });
    assert.deepEqual(c.json, { relatedResources: [] }, "a ClusterIP Service asks for nothing");
    const asks = async (o: unknown) =>
      (
        (await w.post("/hooks/service-loadbalancer/customize", { controller: {}, parent: o })).json
          .relatedResources as unknown[]
      ).length > 0;
    assert.equal(await asks(other), false, "another class asks for nothing");
    assert.equal(await asks(lbService()), true, "ours asks for the Tailnets, ingresses and Services");
    assert.equal(await asks(service({ annotations: {}, type: "LoadBalancer" })), true, "classless too (default class)");
  });

  it("a Service of our class: the exposure's labels and attachment, a status, its own resync; one Event", async (t) => {
    const w = await world(t);
    const r = await w.post("/hooks/service-loadbalancer/sync", body(lbService()));
    assert.equal(r.code, 200, r.text);
    assert.deepEqual(Object.keys(r.json).sort(), [
      "annotations",
      "attachments",
      "labels",
      "resyncAfterSeconds",
      "status",
    ]);
    assert.deepEqual(r.json.labels, { [`${T}/expose-state`]: "Pending" });
    assert.deepEqual(r.json.status, { loadBalancer: {} });
    assert.equal(r.json.resyncAfterSeconds, 60);
    const [att] = r.json.attachments as { kind: string; spec: unknown }[];
    assert.deepEqual([att.kind, att.spec], ["TailnetIngress", GRAFANA_INGRESS_SPEC]);
    assert.deepEqual(
      w.events.events.map((e) => e.reason),
      ["Pending"],
    );
  });

  it("finalize is not served (none is declared): 404", async (t) => {
    const w = await world(t);
    const r = await w.post("/hooks/service-loadbalancer/finalize", { ...body(lbService()), finalizing: true });
    assert.equal(r.code, 404, r.text);
    assert.match(String(r.json.error), /no finalize hook/);
  });

  it("a loadBalancerClass that is not a string is a 400 naming the field", async (t) => {
    const w = await world(t);
    const bad = lbService({ spec: { loadBalancerClass: 7 } });
    const r = await w.post("/hooks/service-loadbalancer/sync", body(bad));
    assert.equal(r.code, 400);
    assert.match(String(r.json.error), /object\.spec\.loadBalancerClass: must be a string/);
  });
});

describe("hooks: which Service decorator answers (the hand-off)", () => {
  it("the annotation decorators yield a Service of our class to it: nothing answered, finalized at once", async (t) => {
    const w = await world(t);
    const annotated = lbService({ annotations: { [`${T}/expose`]: "true" } });
    const expose = { ...body(annotated), controller: { metadata: { name: "tailnet-operator-service-expose" } } };
    const s = await w.post("/hooks/service-expose/sync", expose);
    assert.deepEqual(s.json, { labels: {}, annotations: {}, attachments: [] });
    const f = await w.post("/hooks/service-expose/finalize", { ...expose, finalizing: true });
    assert.deepEqual(f.json, { labels: {}, annotations: {}, attachments: [], finalized: true });
    // handed over while the annotation's own ingress still exists: it waits for it, writing nothing
    const owned = {
      apiVersion: "tailnet.internal/v1alpha1",
      kind: "TailnetIngress",
      metadata: {
        name: "grafana",
        namespace: "monitoring",
        uid: "ing-1",
        deletionTimestamp: "2026-11-29T00:00:00Z",
        ownerReferences: [{ apiVersion: "v1", kind: "Service", name: "grafana", uid: UID, controller: true }],
        annotations: { "metacontroller.k8s.io/decorator-controller": "tailnet-operator-service-expose" },
      },
      spec: GRAFANA_INGRESS_SPEC,
    };
    const waiting = await w.post("/hooks/service-expose/finalize", {
      ...expose,
      attachments: { [ING]: { "monitoring/grafana": owned } },
      finalizing: true,
    });
    assert.deepEqual(waiting.json, {
      labels: {},
      annotations: {},
      attachments: [],
      resyncAfterSeconds: 10,
      finalized: false,
    });
    const targeted = lbService({ annotations: { [`${T}/target`]: "db-1" } });
    const tg = await w.post("/hooks/service-target/sync", {
      ...body(targeted),
      attachments: { "TailnetEgress.tailnet.internal/v1alpha1": {} },
    });
    assert.deepEqual(tg.json, { labels: {}, annotations: {}, attachments: [] });
    assert.deepEqual(w.events.events, []);
  });

  it("services.defaultLoadBalancerClass: a classless LoadBalancer is ours only when it is set; another class never", async (t) => {
    const classless = service({ annotations: {}, type: "LoadBalancer" });
    const other = service({ annotations: {}, type: "LoadBalancer", spec: { loadBalancerClass: "example.com/lb" } });
    const off = await world(t);
    assert.deepEqual((await off.post("/hooks/service-loadbalancer/sync", body(classless))).json, {
      labels: {},
      annotations: {},
      attachments: [],
    });
    const on = await world(t, { services: { defaultLoadBalancerClass: true } });
    const r = await on.post("/hooks/service-loadbalancer/sync", body(classless));
    assert.deepEqual(r.json.labels, { [`${T}/expose-state`]: "Pending" });
    assert.equal((r.json.attachments as unknown[]).length, 1);
    const expose = { ...body(service()), controller: { metadata: { name: "tailnet-operator-service-expose" } } };
    const annotatedClassless = await on.post("/hooks/service-expose/sync", {
      ...expose,
      object: service({ type: "LoadBalancer" }),
    });
    assert.deepEqual(annotatedClassless.json.attachments, [], "the annotation decorator yields it too");
    assert.deepEqual((await on.post("/hooks/service-loadbalancer/sync", body(other))).json, {
      labels: {},
      annotations: {},
      attachments: [],
    });
  });
});
