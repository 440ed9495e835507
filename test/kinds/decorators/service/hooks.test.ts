/**
 * /hooks/service-{expose,target}/{customize,sync,finalize} with Metacontroller-v2-shaped decorator
 * requests (pkg/controller/decorator/api/v2/hooks.go): the answer has exactly the decorator keys,
 * null deletes what sync wrote, and a malformed request is a 400 naming the field.
 */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { describe, it } from "node:test";
import { parse } from "yaml";
import { memoryEventRecorder } from "../../../../src/server/events.js";
import { build } from "../../../helpers/server.js";
import { service, tailnet } from "./fixtures.js";

const root = new URL("../../../../", import.meta.url);
const dc = (role: string) =>
  parse(readFileSync(new URL(`decoratorcontrollers/service-${role}.yaml`, root), "utf8")) as {
    metadata: { name: string };
    spec: Record<string, unknown>;
  };
const ING = "TailnetIngress.tailnet.internal/v1alpha1";
const TN = "Tailnet.tailnet.internal/v1alpha1";

function body(over: Record<string, unknown> = {}, role = "expose") {
  const c = dc(role);
  return {
    controller: { metadata: { name: c.metadata.name }, spec: c.spec, status: {} },
    object: service(),
    attachments: { [role === "expose" ? ING : "TailnetEgress.tailnet.internal/v1alpha1"]: {} },
    related: { [TN]: { home: tailnet("home") }, [ING]: {} },
    finalizing: false,
    ...over,
  };
}

async function world(t: { after: (fn: () => Promise<void> | void) => void }) {
  const events = memoryEventRecorder();
  const { app } = await build(t, { server: { deps: { events } } });
  const post = async (path: string, payload: unknown) => {
    const res = await app.inject({ method: "POST", url: path, payload: payload as object });
    return { code: res.statusCode, json: JSON.parse(res.body) as Record<string, unknown>, text: res.body };
  };
  return { app, events, post };
}

/** Requests the envelope refuses, each with the field its 400 names. */
const MALFORMED: { name: string; path?: string; payload: unknown; field: RegExp }[] = [
  { name: "no object", payload: body({ object: undefined }), field: /^object: required$/ },
  {
    name: "parent instead of object",
    payload: { ...body({ object: undefined }), parent: service() },
    field: /^object: required \(a DecoratorController/,
  },
  {
    name: "object of another kind",
    payload: body({ object: { ...service(), kind: "Pod" } }),
    field: /^object\.kind:/,
  },
  {
    name: "object of another apiVersion",
    payload: body({ object: { ...service(), apiVersion: "apps/v1" } }),
    field: /^object\.apiVersion:/,
  },
  {
    name: "object without namespace",
    payload: body({ object: { ...service(), metadata: { name: "x" } } }),
    field: /^object\.metadata\.namespace:/,
  },
  {
    name: "annotations not strings",
    payload: body({ object: { ...service(), metadata: { name: "x", namespace: "y", annotations: { a: 1 } } } }),
    field: /^object\.metadata\.annotations:/,
  },
  {
    name: "a port as a string",
    payload: body({ object: { ...service(), spec: { ports: [{ port: "80" }] } } }),
    field: /^object\.spec\.ports\[0\]\.port:/,
  },
  { name: "attachments as a list", payload: body({ attachments: [] }), field: /^attachments:/ },
  {
    name: "an attachment without a name",
    payload: body({ attachments: { [ING]: { x: { metadata: {} } } } }),
    field: /^attachments\[.*\]\.metadata\.name:/,
  },
  {
    name: "related with a bad type key",
    payload: body({ related: { tailnets: {} } }),
    field: /^related: key "tailnets"/,
  },
  { name: "finalizing not a boolean", payload: body({ finalizing: "yes" }), field: /^finalizing:/ },
  {
    name: "customize without parent",
    path: "/hooks/service-expose/customize",
    payload: { controller: {} },
    field: /^parent: required$/,
  },
];

describe("decorator hooks (annotated Services)", () => {
  it("sync answers labels, annotations and a TailnetIngress attachment — no status key — and records one Event", async (t) => {
    const w = await world(t);
    const r = await w.post("/hooks/service-expose/sync", body());
    assert.equal(r.code, 200, r.text);
    assert.deepEqual(Object.keys(r.json).sort(), ["annotations", "attachments", "labels"]);
    assert.deepEqual(r.json.labels, { "tailnet.internal/expose-state": "Pending" });
    // null is sent, not dropped: it deletes a key Metacontroller set before (decorator/controller.go updateStringMap)
    assert.match(r.text, /"tailnet\.internal\/dns-name":null/);
    const [att] = r.json.attachments as { kind: string; metadata: { name: string }; spec: { hostname: string } }[];
    assert.equal(att.kind, "TailnetIngress");
    assert.equal(att.spec.hostname, "grafana");
    assert.deepEqual(
      w.events.events.map((e) => [e.reason, e.type, e.regarding.kind, e.regarding.metadata.name]),
      [["Pending", "Normal", "Service", "grafana"]],
    );
    // the same state again (the label Metacontroller wrote): no second Event
    const again = body({ object: service({ labels: { "tailnet.internal/expose-state": "Pending" } }) });
    assert.equal((await w.post("/hooks/service-expose/sync", again)).code, 200);
    assert.equal(w.events.events.length, 1);
    // counted under its own kind label (series exist at 0 from the start), not as "unknown"
    const metrics = (await w.app.inject({ method: "GET", url: "/metrics" })).body;
    assert.match(metrics, /tailnet_hook_requests_total\{kind="service-expose",hook="sync",code="200"\} 2/);
    assert.match(metrics, /tailnet_hook_requests_total\{kind="service-target",hook="finalize",code="500"\} 0/);
  });

  it("a Tailnet that does not exist: a Warning Event, no attachment", async (t) => {
    const w = await world(t);
    const r = await w.post(
      "/hooks/service-expose/sync",
      body({
        object: service({ annotations: { "tailnet.internal/expose": "true", "tailnet.internal/tailnet": "work" } }),
      }),
    );
    assert.equal(r.code, 200, r.text);
    assert.deepEqual(r.json.attachments, []);
    assert.deepEqual(r.json.labels, { "tailnet.internal/expose-state": "NoTailnet" });
    assert.deepEqual(
      w.events.events.map((e) => [e.reason, e.type, e.message]),
      [["NoTailnet", "Warning", 'tailnet exposure: Tailnet "work" (tailnet.internal/tailnet) does not exist']],
    );
  });

  it("target: a TailnetEgress attachment and the in-cluster address", async (t) => {
    const w = await world(t);
    const object = service({
      name: "db",
      annotations: { "tailnet.internal/target": "db-1" },
      ports: [{ port: 5432 }],
    });
    const r = await w.post("/hooks/service-target/sync", body({ object }, "target"));
    assert.equal(r.code, 200, r.text);
    const [att] = r.json.attachments as { kind: string; spec: { targets: { name: string; host: string }[] } }[];
    assert.equal(att.kind, "TailnetEgress");
    assert.deepEqual(
      att.spec.targets.map((x) => [x.name, x.host]),
      [["db-tailnet", "db-1"]],
    );
    assert.equal(
      (r.json.annotations as Record<string, string>)["tailnet.internal/target-address"],
      "db-tailnet.monitoring.svc.cluster.local",
    );
  });
});

describe("decorator hooks (annotated Services): finalize, customize, malformed requests", () => {
  it("finalize: no attachment, everything written back deleted (null), finalized once nothing is attached", async (t) => {
    const w = await world(t);
    const pending = await w.post(
      "/hooks/service-expose/finalize",
      body({
        finalizing: true,
        attachments: {
          [ING]: {
            "monitoring/grafana": {
              apiVersion: "tailnet.internal/v1alpha1",
              kind: "TailnetIngress",
              metadata: { name: "grafana", namespace: "monitoring", deletionTimestamp: "2026-11-29T00:00:00Z" },
            },
          },
        },
      }),
    );
    assert.equal(pending.code, 200, pending.text);
    assert.equal(pending.json.finalized, false);
    assert.ok((pending.json.resyncAfterSeconds as number) > 0);
    const done = await w.post("/hooks/service-expose/finalize", body({ finalizing: true }));
    assert.deepEqual(Object.keys(done.json).sort(), ["annotations", "attachments", "finalized", "labels"]);
    assert.equal(done.json.finalized, true);
    assert.deepEqual(done.json.labels, { "tailnet.internal/expose-state": null });
    assert.deepEqual(done.json.attachments, []);
  });

  it("customize asks for every Tailnet, every TailnetIngress and every Service (the answer is cached per uid+generation)", async (t) => {
    const w = await world(t);
    const c = dc("expose");
    const r = await w.post("/hooks/service-expose/customize", {
      controller: { metadata: c.metadata, spec: c.spec },
      parent: service(),
    });
    assert.equal(r.code, 200, r.text);
    assert.deepEqual(r.json, {
      relatedResources: [
        { apiVersion: "tailnet.internal/v1alpha1", resource: "tailnets", labelSelector: {} },
        { apiVersion: "tailnet.internal/v1alpha1", resource: "tailnetingresses", labelSelector: {} },
        { apiVersion: "v1", resource: "services", labelSelector: {} },
      ],
    });
  });

  for (const m of MALFORMED) {
    it(`malformed: ${m.name} → 400 naming the field`, async (t) => {
      const w = await world(t);
      const r = await w.post(m.path ?? "/hooks/service-expose/sync", m.payload);
      assert.equal(r.code, 400, r.text);
      assert.match(r.json.error as string, m.field);
    });
  }
});
