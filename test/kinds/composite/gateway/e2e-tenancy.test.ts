// Issue 23 for TailnetGateway through the Metacontroller emulator and the fake Headscale: a gateway in a
// namespace the Tailnet's spec.tenancy.namespaceSelector does not select is refused before anything is
// minted; selecting the namespace lets it run.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { parentObject } from "../../../fixtures/hooks.js";
import { applyGateway, child, cond, keySecrets, world, ZONE } from "./world.js";

const namespace = (labels: Record<string, string>) => ({
  apiVersion: "v1",
  kind: "Namespace",
  metadata: { name: "infra", labels },
});

describe("TailnetGateway tenancy (issue 23)", () => {
  it("an unselected namespace: NamespaceNotAllowed, nothing minted, no Deployment; selected: minted", async (t) => {
    const w = await world(t, { tailnet: false });
    w.mc.apply(
      parentObject("Tailnet", "home", {
        headscale: { url: w.fake.url, apiKeySecretRef: { namespace: "tailnet-system", name: "hs" } },
        policy: { mode: "Apply" },
        dns: { baseDomain: ZONE },
        tenancy: { namespaceSelector: { matchLabels: { "tailnet.internal/tenant": "true" } } },
      }),
    );
    w.mc.apply(namespace({}));
    applyGateway(w.mc);
    await w.mc.settle();
    const ready = cond(w.mc, "Ready");
    assert.equal(ready?.reason, "NamespaceNotAllowed", ready?.message);
    assert.match(
      ready?.message ?? "",
      /namespace infra is not selected by the Tailnet's spec\.tenancy\.namespaceSelector/,
    );
    assert.deepEqual(w.fake.writes(), [], "nothing written to Headscale");
    assert.deepEqual(keySecrets(w.mc), [], "no bootstrap key");
    assert.equal(child(w.mc, "Deployment", "gw-gateway"), undefined, "no gateway pods");
    assert.deepEqual(w.mc.errors, []);

    w.mc.apply(namespace({ "tailnet.internal/tenant": "true" }));
    await w.mc.settle();
    assert.notEqual(cond(w.mc, "Ready")?.reason, "NamespaceNotAllowed");
    assert.ok(
      w.fake.writes().some((r) => r.method === "POST" && r.path === "/api/v1/preauthkey"),
      "the selected namespace's gateway mints its key",
    );
    assert.equal(keySecrets(w.mc).length, 1);
  });
});
