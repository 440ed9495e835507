// Issue 27 part 3 through the Metacontroller emulator and the fake Headscale: a gateway with spec.exitNode
// advertises the exit pair only while the Tailnet's spec.tenancy.exitNodes selects its namespace, approves the
// pair on its own verified node, and never withdraws an approval — neither when Headscale cannot be read nor
// when the admins take the right back (the pods roll to a template without the pair).
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { K8sObject } from "../../../src/k8s/objects.js";
import { parentObject } from "../../fixtures/hooks.js";
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
        tenancy: { exitNodes: { namespaceSelector: { matchLabels: { "tailnet.internal/exit-nodes": "true" } } } },
      }),
    );
    w.mc.apply(namespace({ "tailnet.internal/exit-nodes": "true" }));
    applyGateway(w.mc, { exitNode: { allowFrom: ["group:eng"] } });
    await w.mc.settle();
    assert.equal(tsRoutes(child(w.mc, "Deployment", "gw-gateway")), `${ROUTE},0.0.0.0/0,::/0`);
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
    assert.equal(tsRoutes(child(w.mc, "Deployment", "gw-gateway")), `${ROUTE},0.0.0.0/0,::/0`);
    assert.equal(w.fake.writes().length, writes);
    w.fake.setDatabaseDown(false);

    // the admins deselect the namespace: no exit routes in the next pod, no approval, the old one kept
    w.mc.apply(namespace({}));
    await w.mc.settle();
    assert.equal(cond(w.mc, "ExitNode")?.reason, "ExitNodeNotAllowed");
    assert.equal(cond(w.mc, "Ready")?.reason, "ExitNodeNotAllowed");
    assert.equal(tsRoutes(child(w.mc, "Deployment", "gw-gateway")), ROUTE);
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
    assert.match(ready?.message ?? "", /0\.0\.0\.0\/0, ::\/0 is an exit route; set spec\.exitNode/);
    assert.deepEqual(w.fake.writes(), []);
  });
});
