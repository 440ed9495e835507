/**
 * Annotated Services end to end: the Metacontroller emulator plays the repo's DecoratorControllers
 * (decoratorcontrollers/*.yaml) and CompositeControllers against the real hook server and the fake
 * Headscale. Annotating a Service makes a TailnetIngress that registers, reaches the backend through a
 * real agent and reports Ready back on the Service; removing the annotation removes it through the
 * ingress's own finalize (its Headscale node deleted). Every reason of the Service table is reached.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { SERVICE_REASONS } from "../../../../src/conditions/tables/service.js";
import { decoratorControllers } from "../../../../src/emulator/metacontroller/controllers.js";
import { DECORATOR_ANNOTATION } from "../../../../src/kinds/decorators/service/annotations.js";
import { startEchoServer } from "../../../fakes/agent/echo.js";
import { tailnet } from "../../composite/ingress/fixtures.js";
import { ingressAgent } from "../../composite/ingress/world.js";
import { lbService, NS, service } from "./fixtures.js";
import { nodeDeletedSince, pingThrough, type ServiceWorld, serviceWorld } from "./world.js";

const T = "tailnet.internal";
const seen = new Set<string>();

async function settle(w: ServiceWorld): Promise<number> {
  const rounds = await w.mc.settle(20);
  for (const s of w.mc.list("Service")) {
    for (const role of ["expose", "target"]) {
      const state = s.metadata.labels?.[`${T}/${role}-state`];
      if (state) seen.add(state);
    }
  }
  // every state a Service went through is an Event (one per change), transient ones included
  for (const e of w.events) if (e.regarding.kind === "Service") seen.add(e.reason);
  assert.deepEqual(w.mc.errors, [], "every hook answered 200");
  return rounds;
}
const state = (w: ServiceWorld, name: string, role = "expose") => {
  const s = w.svc(name);
  return {
    state: s?.metadata.labels?.[`${T}/${role}-state`],
    message: s?.metadata.annotations?.[`${T}/${role}-message`],
  };
};
const exposed = (
  name: string,
  extra: Record<string, string> = {},
  ports: { name?: string; port: number; protocol?: string }[] = [{ name: "postgres", port: 5432 }],
) => service({ name, annotations: { [`${T}/expose`]: "true", ...extra }, ports, uid: `uid-svc-${name}` });

describe("annotated Services end to end", () => {
  it("annotate → TailnetIngress → registered → Ready on the Service; stable; un-annotate → the ingress's finalize cleans Headscale", async (t) => {
    const w = await serviceWorld(t);
    const echo = await startEchoServer();
    t.after(() => echo.close());
    w.mc.apply(exposed("grafana", { [`${T}/allow-from`]: "group:eng" }));
    await settle(w);
    const ing = w.attachment("TailnetIngress", "grafana");
    assert.ok(ing, "a TailnetIngress attachment");
    assert.equal(ing.metadata.ownerReferences?.[0]?.uid, "uid-svc-grafana");
    assert.equal(ing.metadata.annotations?.[DECORATOR_ANNOTATION], "tailnet-operator-service-expose");
    assert.deepEqual(ing.spec, {
      tailnetRef: { name: "home" },
      hostname: "grafana",
      mode: "tcp",
      allowFrom: ["group:eng"],
      exposes: [{ name: "postgres", port: 5432, backend: { service: "grafana", port: 5432 } }],
    });
    assert.deepEqual(state(w, "grafana"), {
      state: "NotReady",
      message:
        "TailnetIngress monitoring/grafana: NotRegistered: no Headscale node carries tag:k8s-monitoring-grafana yet",
    });
    assert.ok(w.mc.get("apps/v1", "StatefulSet", "grafana-agent-0", NS), "the ingress built its agent");

    w.register("grafana");
    const agent = await ingressAgent(t, ing, { backendPort: echo.port });
    w.pointPodsAt(agent.metricsPort);
    await settle(w);
    assert.deepEqual(state(w, "grafana"), {
      state: "Ready",
      message: "reachable on the tailnet as grafana.ts.example.com",
    });
    assert.equal(w.svc("grafana")?.metadata.annotations?.[`${T}/dns-name`], "grafana.ts.example.com");
    const echoed = await pingThrough(t, agent.ports.exposes[0].listenPort);
    assert.equal(echoed, "ping", "bytes reach the Service's backend through the agent");
    assert.deepEqual(w.eventsOn("grafana"), [
      "Pending: tailnet exposure: TailnetIngress monitoring/grafana is being created",
      "NotReady: tailnet exposure: TailnetIngress monitoring/grafana: NotRegistered: no Headscale node carries tag:k8s-monitoring-grafana yet",
      "Ready: tailnet exposure: reachable on the tailnet as grafana.ts.example.com",
    ]);
    const before = JSON.stringify(w.svc("grafana")?.metadata);
    assert.equal(await settle(w), 1, "a repeat sync changes nothing");
    assert.equal(JSON.stringify(w.svc("grafana")?.metadata), before);
    assert.equal(w.eventsOn("grafana").length, 3, "no Event for a repeated state");

    // kubectl annotate svc grafana tailnet.internal/expose-
    const live = structuredClone(w.svc("grafana"));
    assert.ok(live?.metadata.annotations);
    delete live.metadata.annotations[`${T}/expose`];
    w.mc.apply(live);
    const writesBefore = w.hs.writes().length;
    await settle(w);
    assert.equal(w.attachment("TailnetIngress", "grafana"), undefined, "the exposure is gone");
    assert.equal(w.mc.get("apps/v1", "StatefulSet", "grafana-agent-0", NS), undefined, "and its agent");
    assert.ok(nodeDeletedSince(w.hs, writesBefore), "the ingress's finalize deleted its Headscale node");
    const after = w.svc("grafana");
    assert.ok(after, "the Service itself stays");
    assert.equal(after.metadata.labels?.[`${T}/expose-state`], undefined, "the state label is removed");
    assert.deepEqual(
      Object.keys(after.metadata.annotations ?? {}).filter((k) => k.startsWith(`${T}/`)),
      [`${T}/allow-from`],
      "nothing the operator wrote is left (the user's own annotation stays)",
    );
    const finalizes = w.mc.calls.filter((c) => c.hook === "finalize" && c.kind === "Service");
    assert.ok(finalizes.length >= 2, "finalize waited for the ingress to go before finalized: true");
    assert.equal((finalizes.at(-1)?.response as { finalized?: boolean } | undefined)?.finalized, true);
  });
});

describe("annotated Services end to end: refusals", () => {
  it("refusals: a clear Event and no exposure — no Tailnet, ambiguous, both ways, twice, bad annotations, ports, a taken name", async (t) => {
    const w = await serviceWorld(t);
    w.mc.apply(exposed("grafana"));
    await settle(w);
    w.mc.apply(exposed("nowhere", { [`${T}/tailnet`]: "work" }));
    w.mc.apply(exposed("both", { [`${T}/target`]: "db-1" }));
    w.mc.apply(exposed("twice", { [`${T}/hostname`]: "grafana" }));
    w.mc.apply(exposed("badname", { [`${T}/hostname`]: "Bad_Name" }));
    w.mc.apply(exposed("udp", {}, [{ name: "dns", port: 53, protocol: "UDP" }]));
    w.mc.apply(
      lbService({ name: "ranges", uid: "uid-svc-ranges", spec: { loadBalancerSourceRanges: ["10.0.0.0/8"] } }),
    );
    w.mc.apply({
      apiVersion: "tailnet.internal/v1alpha1",
      kind: "TailnetIngress",
      metadata: { name: "taken", namespace: NS },
      spec: {
        tailnetRef: { name: "home" },
        hostname: "someone-else",
        exposes: [{ name: "web", port: 80, backend: { service: "x", port: 80 } }],
      },
    });
    w.mc.apply(exposed("taken"));
    await settle(w);
    const expect: Record<string, string> = {
      nowhere: 'NoTailnet: tailnet exposure: Tailnet "work" (tailnet.internal/tailnet) does not exist',
      twice:
        "HostnameTaken: tailnet exposure: hostname grafana (grafana.ts.example.com) is already claimed by TailnetIngress monitoring/grafana in Tailnet home; set tailnet.internal/hostname",
      badname:
        'InvalidAnnotation: tailnet exposure: tailnet.internal/hostname: "Bad_Name" is not a DNS-1035 label (the tailnet node name)',
      udp: "UnsupportedPorts: tailnet exposure: spec.ports: no TCP port (1 of other protocols; the tailnet agents forward TCP only)",
      ranges:
        "UnsupportedField: tailnet exposure: spec.loadBalancerSourceRanges cannot be enforced on the tailnet (the agent sees tailnet addresses, not the client's network); remove it and name who may connect with tailnet.internal/allow-from",
      taken:
        "NameTaken: tailnet exposure: TailnetIngress monitoring/taken already exists and was not made for this Service; rename or delete it",
    };
    for (const [name, event] of Object.entries(expect)) {
      assert.deepEqual(w.eventsOn(name), [event], name);
      assert.equal(w.attachment("TailnetIngress", name)?.metadata.ownerReferences?.[0]?.uid, undefined, name);
    }
    // both ways: each DecoratorController refuses; one Event per direction, no attachment of either kind
    assert.equal(state(w, "both").state, "ConflictingAnnotations");
    assert.equal(state(w, "both", "target").state, "ConflictingAnnotations");
    assert.equal(w.attachment("TailnetIngress", "both"), undefined);
    assert.equal(w.attachment("TailnetEgress", "both"), undefined);
    assert.equal(w.eventsOn("both").length, 2);
    assert.ok(w.eventsOn("both")[0].startsWith("ConflictingAnnotations: "));
    assert.equal(state(w, "grafana").state, "NotReady", "the first claimant keeps its exposure");
    for (const name of Object.keys(expect).filter((n) => n !== "taken")) {
      assert.equal(w.mc.get("apps/v1", "StatefulSet", `${name}-agent-0`, NS), undefined, `${name}: no agent`);
    }

    // a second Tailnet appears: the un-named exposure keeps its attachment (an observation never drops
    // it), a new un-named one is refused
    w.mc.apply(tailnet("work", { headscale: { url: w.hs.url, apiKeySecretRef: { namespace: "x", name: "y" } } }));

    w.mc.apply(exposed("late"));
    await settle(w);
    assert.match(
      w.eventsOn("late")[0],
      /^AmbiguousTailnet: tailnet exposure: 2 Tailnets exist \(home, work\); name one/,
    );
    assert.equal(w.attachment("TailnetIngress", "late"), undefined);
    assert.ok(w.attachment("TailnetIngress", "grafana"), "the existing exposure is kept");
    assert.equal(state(w, "grafana").state, "AmbiguousTailnet");
  });
});

describe("annotated Services end to end: the target role, another machine's name", () => {
  it("target: an ExternalName Service annotated tailnet.internal/target gets a TailnetEgress; a wrong externalName is named", async (t) => {
    const w = await serviceWorld(t, { tags: ["tag:k8s-monitoring-db"] });
    w.mc.apply(
      service({
        name: "db",
        uid: "uid-svc-db",
        annotations: { [`${T}/target`]: "db-1" },
        type: "ExternalName",
        externalName: "placeholder.example",
        ports: [{ name: "pg", port: 5432 }],
      }),
    );
    await settle(w);
    const eg = w.attachment("TailnetEgress", "db");
    assert.ok(eg, "a TailnetEgress attachment");
    assert.deepEqual(eg.spec, {
      tailnetRef: { name: "home" },
      targets: [{ name: "db-tailnet", host: "db-1", ports: [{ port: 5432, protocol: "TCP" }] }],
    });
    assert.ok(w.mc.get("v1", "Service", "db-tailnet", NS), "the egress made its target Service");
    assert.equal(state(w, "db", "target").state, "ExternalNameMismatch");
    assert.match(state(w, "db", "target").message ?? "", /set it to db-tailnet\.monitoring\.svc\.cluster\.local/);
    assert.equal(w.svc("db")?.metadata.annotations?.[`${T}/target-address`], "db-tailnet.monitoring.svc.cluster.local");

    const fixed = structuredClone(w.svc("db"));
    assert.ok(fixed);
    (fixed.spec as { externalName: string }).externalName = "db-tailnet.monitoring.svc.cluster.local";
    w.mc.apply(fixed);
    await settle(w);
    const s = state(w, "db", "target");
    assert.equal(s.state, "NotReady", s.message);
    assert.match(s.message ?? "", /^TailnetEgress monitoring\/db: NotRegistered: /);

    // kubectl delete svc db: the decorator's finalize waits for the egress's own, then the Service goes
    w.mc.delete("v1", "Service", "db", NS);
    await settle(w);
    assert.equal(w.svc("db"), undefined);
    assert.equal(w.attachment("TailnetEgress", "db"), undefined);
    assert.equal(w.mc.get("v1", "Service", "db-tailnet", NS), undefined);
  });

  it("an annotation naming another machine: HostnameReserved with an Event; the fix (another hostname) is published", async (t) => {
    const w = await serviceWorld(t, { tags: ["tag:k8s-monitoring-files"] });
    w.hs.addUser({ name: "alice" });
    const laptop = w.hs.addNode({ name: "db-1", user: "alice" });
    w.mc.apply(exposed("files", { [`${T}/hostname`]: "db-1" }));
    await settle(w);
    const s = state(w, "files");
    assert.equal(s.state, "HostnameReserved", s.message);
    assert.match(
      s.message ?? "",
      new RegExp(
        `^hostname db-1 is the name of another machine \\(TailnetIngress monitoring/files: the name of another machine: db-1\\.ts\\.example\\.com \\(Headscale node ${laptop.id}\\);`,
      ),
    );
    assert.ok(
      w.eventsOn("files").some((e) => e.startsWith("HostnameReserved: ")),
      "an Event",
    );
    assert.equal(w.svc("files")?.metadata.annotations?.[`${T}/dns-name`], undefined, "no address written back");
    assert.equal(
      (w.attachment("TailnetIngress", "files")?.status as { dnsName?: string } | undefined)?.dnsName,
      undefined,
    );

    const fixed = structuredClone(w.svc("files"));
    assert.ok(fixed);
    (fixed.metadata.annotations as Record<string, string>)[`${T}/hostname`] = "files";
    w.mc.apply(fixed);
    await settle(w);
    assert.equal(
      (w.attachment("TailnetIngress", "files")?.status as { dnsName?: string } | undefined)?.dnsName,
      "files.ts.example.com",
    );
    assert.notEqual(state(w, "files").state, "HostnameReserved");
  });
});

describe("annotated Services end to end: tenancy, and every reason reached", () => {
  it("tenancy (issue 23): an ungranted, a taken tag, an unselected namespace: the Service names the refusal, nothing minted", async (t) => {
    const w = await serviceWorld(t, { tags: ["tag:db"] });
    const home = (spec: Record<string, unknown>) =>
      tailnet("home", { headscale: { url: w.hs.url, apiKeySecretRef: { namespace: "x", name: "y" } }, ...spec });
    const keyPosts = () => w.hs.writes().filter((r) => r.method === "POST" && r.path === "/api/v1/preauthkey");
    w.mc.apply({ apiVersion: "v1", kind: "Namespace", metadata: { name: NS, labels: {} } });
    w.mc.apply(exposed("pg", { [`${T}/tags`]: "tag:db" }));
    await settle(w);
    assert.equal(
      (w.attachment("TailnetIngress", "pg")?.spec as { tag?: string } | undefined)?.tag,
      "tag:db",
      "the attachment asks for the tag",
    );
    const refused = (reason: string, why: RegExp) => {
      const s = state(w, "pg");
      assert.equal(s.state, reason, s.message);
      assert.match(s.message ?? "", why);
      assert.ok(
        w.eventsOn("pg").some((e) => e.startsWith(`${reason}: `)),
        `an Event ${reason}: ${w.eventsOn("pg")}`,
      );
    };
    refused("TagNotGranted", /^TailnetIngress monitoring\/pg: tag:db is not granted to namespace monitoring/);

    // granted, but an administrator's server carries tag:db
    w.hs.addNode({ name: "db-srv", tags: ["tag:db"] });
    w.mc.apply(home({ tenancy: { tags: [{ namespaceSelector: {}, tags: ["tag:db"] }] } }));
    await settle(w);
    refused(
      "TagInUse",
      /^TailnetIngress monitoring\/pg: tag:db is carried by db-srv, which this ingress did not register/,
    );

    w.mc.apply(home({ tenancy: { namespaceSelector: { matchLabels: { tenant: "yes" } } } }));
    await settle(w);
    refused("NamespaceNotAllowed", /^TailnetIngress monitoring\/pg: namespace monitoring is not selected/);
    assert.deepEqual(keyPosts(), [], "nothing minted");
    assert.equal(w.mc.get("apps/v1", "StatefulSet", "pg-agent-0", NS), undefined, "no agent");
  });

  it("reached every reason of the Service table", () => {
    assert.deepEqual([...seen].sort(), Object.keys(SERVICE_REASONS.Exposed).sort());
  });
});

describe("two Services claim one hostname in one apply (issue 24)", () => {
  it("the newer one's attachment is never created, even when both are synced concurrently", async (t) => {
    const w = await serviceWorld(t);
    const older = exposed("b-web", { [`${T}/hostname`]: "web" });
    const newer = exposed("a-web", { [`${T}/hostname`]: "web" });
    newer.metadata.creationTimestamp = "2026-11-02T00:00:00Z";
    w.mc.apply(older);
    w.mc.apply(newer);
    // Metacontroller's workers sync both before either attachment exists
    const dc = decoratorControllers().find((d) => d.metadata.name === "tailnet-operator-service-expose");
    if (!dc) throw new Error("no expose DecoratorController");
    const live = [w.svc("a-web"), w.svc("b-web")].filter((s) => s !== undefined);
    await Promise.all(live.map((s) => w.mc.syncDecorated(dc, s)));
    await settle(w);
    const answers = w.mc.calls.filter((c) => c.hook === "sync" && c.parent === `${NS}/a-web`);
    assert.ok(answers.length > 0);
    for (const a of answers) assert.deepEqual((a.response as { attachments?: unknown[] }).attachments, []);
    assert.equal(w.attachment("TailnetIngress", "a-web"), undefined);
    assert.ok(w.attachment("TailnetIngress", "b-web"), "the older Service keeps the hostname");
    assert.equal(state(w, "a-web").state, "HostnameTaken");
    assert.match(state(w, "a-web").message ?? "", /monitoring\/b-web/);
  });
});
