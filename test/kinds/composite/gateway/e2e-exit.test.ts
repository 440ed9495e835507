// Issue 27 part 3 through the Metacontroller emulator and the fake Headscale: a gateway with spec.exitNode
// advertises the exit pair only while the Tailnet's spec.tenancy.exitNodes selects its namespace, approves the
// pair on its own verified node, and never withdraws an approval — neither when Headscale cannot be read nor
// when the admins take the right back (the pods roll to a template without the pair).
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { K8sObject } from "../../../../src/k8s/objects.js";
import { parentObject } from "../../../fixtures/hooks.js";
import { applyGateway, child, cond, ROUTE, registerGateway, syncAgain, world, writesTo, ZONE } from "./world.js";

const PAIR = ["0.0.0.0/0", "::/0"];
const namespace = (labels: Record<string, string>): K8sObject => ({
  apiVersion: "v1",
  kind: "Namespace",
  metadata: { name: "infra", labels },
});

function tsRoutes(deployment: K8sObject | undefined): string | undefined {
  const spec = deployment?.spec as {
    template?: { spec?: { containers?: { name: string; env?: { name: string; value?: string }[] }[] } };
  };
  const ts = spec?.template?.spec?.containers?.find((c) => c.name === "tailscale");
  return ts?.env?.find((e) => e.name === "TS_ROUTES")?.value;
}

describe("TailnetGateway as an exit node (issue 27 part 3)", () => {
  it("selected namespace: the pair advertised and approved; deselected: no longer advertised, never withdrawn", async (t) => {
    const w = await world(t, { tailnet: false });
    w.mc.apply(
      parentObject("Tailnet", "home", {
        headscale: { url: w.fake.url, apiKeySecretRef: { namespace: "tailnet-system", name: "hs" } },
        policy: { mode: "Apply" },
        dns: { baseDomain: ZONE },
        allowedIngressSources: ["group:eng"],
        tenancy: { exitNodes: { namespaceSelector: { matchLabels: { "tailnet.internal/exit-nodes": "true" } } } },
      }),
    );
    w.mc.apply(namespace({ "tailnet.internal/exit-nodes": "true" }));
    applyGateway(w.mc, { exitNode: { allowFrom: ["group:eng"] } });
    await w.mc.settle();
    assert.equal(tsRoutes(child(w.mc, "StatefulSet", "gw-gateway-0")), `${ROUTE},0.0.0.0/0,::/0`);
    assert.equal(cond(w.mc, "ExitNode")?.reason, "NotAdvertised");

    const node = registerGateway(w);
    assert.deepEqual(node.availableRoutes, [ROUTE, ...PAIR], "the pod advertises what TS_ROUTES says");
    await w.mc.settle();
    const exit = cond(w.mc, "ExitNode");
    assert.deepEqual([exit?.status, exit?.reason], ["True", "Approved"], exit?.message);
    assert.deepEqual(w.fake.state.nodes.get(node.id)?.approvedRoutes.slice().sort(), [ROUTE, ...PAIR].sort());
    assert.deepEqual(
      writesTo(w.fake, "POST", /approve_routes$/).map((r) => (r.body as { routes: string[] }).routes),
      [[ROUTE], [ROUTE, ...PAIR]],
      "the route, then the pair: each a read-modify-write of the node's approved set",
    );
    assert.equal(cond(w.mc, "Ready")?.reason, "FreshRuntimeReady");

    // Headscale unreadable: nothing withdrawn, nothing written, the pod keeps the pair
    const writes = w.fake.writes().length;
    w.fake.setDatabaseDown(true);
    await syncAgain(w.mc);
    assert.equal(cond(w.mc, "ExitNode")?.reason, "NotObserved");
    assert.equal(tsRoutes(child(w.mc, "StatefulSet", "gw-gateway-0")), `${ROUTE},0.0.0.0/0,::/0`);
    assert.equal(w.fake.writes().length, writes);
    w.fake.setDatabaseDown(false);

    // the admins deselect the namespace: no exit routes in the next pod, no approval, the old one kept
    w.mc.apply(namespace({}));
    await w.mc.settle();
    assert.equal(cond(w.mc, "ExitNode")?.reason, "ExitNodeNotAllowed");
    assert.equal(cond(w.mc, "Ready")?.reason, "ExitNodeNotAllowed");
    assert.equal(tsRoutes(child(w.mc, "StatefulSet", "gw-gateway-0")), ROUTE);
    assert.deepEqual(w.fake.state.nodes.get(node.id)?.approvedRoutes.slice().sort(), [ROUTE, ...PAIR].sort());
    assert.equal(writesTo(w.fake, "POST", /approve_routes$/).length, 2);
    assert.deepEqual(w.mc.errors, []);
  });

  it("a default route in spec.routes is InvalidSpec and nothing is written for it", async (t) => {
    const w = await world(t);
    applyGateway(w.mc, { routes: ["0.0.0.0/0", "::/0"] }); // beside another route it is an overlap already
    await w.mc.settle();
    const ready = cond(w.mc, "Ready");
    assert.equal(ready?.reason, "InvalidSpec");
    // the CRD's CEL rule, judged at hook time by its twin (src/api/cel.ts)
    assert.match(ready?.message ?? "", /spec\.routes\[0\]: a default route .* use spec\.exitNode/);
    assert.deepEqual(w.fake.writes(), []);
  });

  it("routes that together cover the address space are an exit route: InvalidSpec, nothing written (issue 31 item 5)", async (t) => {
    const halves = ["0.0.0.0/1", "128.0.0.0/1", "::/1", "8000::/1"];
    const cases: [string[], string][] = [
      [halves, "0.0.0.0/1, 128.0.0.0/1, ::/1, 8000::/1 together cover 0.0.0.0/0, ::/0"],
      [["::/1", "8000::/1"], "::/1, 8000::/1 together cover ::/0"],
      [
        [0, 64, 128, 192].map((a) => `${a}.0.0.0/2`),
        "0.0.0.0/2, 64.0.0.0/2, 128.0.0.0/2, 192.0.0.0/2 together cover 0.0.0.0/0",
      ],
    ];
    for (const [routes, covers] of cases) {
      const w = await world(t);
      applyGateway(w.mc, { routes });
      await w.mc.settle();
      const ready = cond(w.mc, "Ready");
      assert.equal(ready?.reason, "InvalidSpec");
      assert.equal(
        ready?.message,
        `spec.routes: ${covers}: an exit route; set spec.exitNode to offer the gateway as an exit node (the Tailnet's spec.tenancy.exitNodes must select this namespace)`,
      );
      assert.deepEqual(w.fake.writes(), []);
    }
  });

  it("a route into the Tailnet's reservedNetworks is approved nowhere: RoutesInSync=False/OverlapsReserved (issue 31 item 5)", async (t) => {
    for (const [route, reserved] of [
      [ROUTE, "10.96.0.0/12"],
      ["169.254.169.254/32", "169.254.0.0/16"],
      ["10.0.0.0/8", "10.96.0.0/12"],
    ]) {
      const w = await world(t, { tailnet: false });
      w.mc.apply(
        parentObject("Tailnet", "home", {
          headscale: { url: w.fake.url, apiKeySecretRef: { namespace: "tailnet-system", name: "hs" } },
          policy: { mode: "Apply" },
          dns: { baseDomain: ZONE },
          reservedNetworks: ["192.0.2.0/24", reserved],
        }),
      );
      applyGateway(w.mc, { routes: ["192.168.50.0/24", route] });
      await w.mc.settle();
      const node = registerGateway(w);
      await w.mc.settle();
      const routes = cond(w.mc, "RoutesInSync");
      const message = `route ${route} of TailnetGateway infra/gw overlaps reserved network ${reserved} of Tailnet home; no route of this gateway is approved`;
      assert.deepEqual([routes?.status, routes?.reason, routes?.message], ["False", "OverlapsReserved", message]);
      assert.deepEqual([cond(w.mc, "Ready")?.reason, cond(w.mc, "Ready")?.message], ["OverlapsReserved", message]);
      assert.deepEqual(w.fake.state.nodes.get(node.id)?.approvedRoutes, []);
      assert.deepEqual(writesTo(w.fake, "POST", /approve_routes$/), []);
      assert.deepEqual(w.mc.errors, []);
    }
  });

  it("spec.exitNode.allowFrom is held to allowedIngressSources: ExitNode=False/PolicyDenied, no exit routes (issue 31 item 5)", async (t) => {
    const w = await world(t, { tailnet: false });
    w.mc.apply(
      parentObject("Tailnet", "home", {
        headscale: { url: w.fake.url, apiKeySecretRef: { namespace: "tailnet-system", name: "hs" } },
        policy: { mode: "Apply" },
        dns: { baseDomain: ZONE },
        allowedIngressSources: ["group:eng"],
        tenancy: { exitNodes: { namespaceSelector: { matchLabels: { "tailnet.internal/exit-nodes": "true" } } } },
      }),
    );
    w.mc.apply(namespace({ "tailnet.internal/exit-nodes": "true" }));
    applyGateway(w.mc, { exitNode: { allowFrom: ["group:eng", "autogroup:member", "*"] } });
    await w.mc.settle();
    const node = registerGateway(w);
    await w.mc.settle();
    const exit = cond(w.mc, "ExitNode");
    const message =
      "spec.exitNode.allowFrom: autogroup:member, * not in Tailnet home's spec.allowedIngressSources; the gateway is no exit node (nothing advertised, approved or granted)";
    assert.deepEqual([exit?.status, exit?.reason, exit?.message], ["False", "PolicyDenied", message]);
    assert.equal(cond(w.mc, "Ready")?.reason, "PolicyDenied");
    assert.equal(tsRoutes(child(w.mc, "StatefulSet", "gw-gateway-0")), ROUTE);
    assert.deepEqual(w.fake.state.nodes.get(node.id)?.approvedRoutes, [ROUTE]);

    // within the allowlist: an exit node as before
    applyGateway(w.mc, { exitNode: { allowFrom: ["group:eng"] } });
    await w.mc.settle();
    assert.equal(tsRoutes(child(w.mc, "StatefulSet", "gw-gateway-0")), `${ROUTE},0.0.0.0/0,::/0`);
    assert.deepEqual(w.mc.errors, []);
  });
});
