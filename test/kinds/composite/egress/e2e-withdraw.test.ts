// Issue 31 item 6 for agents: when the administrators withdraw a namespace's tag grant (or stop selecting the
// namespace), the next sync of the refused egress expires the keys it minted — never another key with the tag —
// and mints nothing; the agent's children are kept as observed.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { K8sObject } from "../../../../src/k8s/objects.js";
import { parentObject } from "../../../fixtures/hooks.js";
import { adminKey as mintAdminKey, policyText, reasons, type World, world } from "./world.js";

const GRANTED = "tag:shop-db";

const namespace = (labels: Record<string, string>): K8sObject => ({
  apiVersion: "v1",
  kind: "Namespace",
  metadata: { name: "shop", labels },
});
const tailnet = (w: World, tenancy: Record<string, unknown>): K8sObject =>
  parentObject("Tailnet", "home", {
    headscale: { url: w.fake.url, apiKeySecretRef: { namespace: "tailnet-system", name: "hs" } },
    dns: { baseDomain: "ts.example.com" },
    tenancy,
  });
const valid = (w: World, id: string) =>
  (w.fake.state.preAuthKeys.get(id)?.expiration.getTime() ?? 0) > w.clock.now.getTime();

/** An administrator's key with the granted tag, minted before the egress. */
const adminKeyOf = (w: World) => mintAdminKey(w.fake, GRANTED);

describe("TailnetEgress: a withdrawn grant expires the keys it minted (issue 31)", () => {
  for (const [what, withdraw, reason] of [
    [
      "the tag grant",
      (w: World) => w.mc.apply(namespace({ team: "other", "tailnet.internal/tenant": "true" })),
      "TagNotGranted",
    ],
    ["the namespace", (w: World) => w.mc.apply(namespace({ team: "db" })), "NamespaceNotAllowed"],
  ] as const) {
    it(`withdrawing ${what}: ${reason}, its key expired on the next sync, the admin's key and the children kept`, async (t) => {
      const w = await world(t, { applyEgress: false });
      w.fake.setPolicy(policyText([GRANTED, "tag:router"]));
      const admin = adminKeyOf(w);
      w.mc.apply(
        tailnet(w, {
          namespaceSelector: { matchLabels: { "tailnet.internal/tenant": "true" } },
          tags: [{ namespaceSelector: { matchLabels: { team: "db" } }, tags: [GRANTED] }],
        }),
      );
      w.mc.apply(namespace({ team: "db", "tailnet.internal/tenant": "true" }));
      w.mc.apply(parentObject("TailnetEgress", "db", { ...w.spec, tag: GRANTED }, { namespace: "shop" }));
      await w.settle();
      const ours = w.keySecret()?.metadata.annotations?.["tailnet.internal/key-id"];
      assert.ok(ours);
      assert.ok(valid(w, ours));
      const children = w.mc.childrenOf(w.egress()).map((c) => `${c.kind} ${c.metadata.name}`);

      withdraw(w);
      await w.settle();
      assert.equal(reasons(w).Ready, reason);
      assert.ok(!valid(w, ours), "the key minted under the withdrawn grant is still valid");
      assert.ok(valid(w, admin), "the administrator's key with the same tag was expired");
      assert.deepEqual(
        w.fake
          .writes()
          .filter((r) => r.path.startsWith("/api/v1/preauthkey"))
          .map((r) => r.path),
        ["/api/v1/preauthkey", "/api/v1/preauthkey/expire"],
      );
      assert.deepEqual(
        w.mc.childrenOf(w.egress()).map((c) => `${c.kind} ${c.metadata.name}`),
        children,
        "the refusal dropped children",
      );
      // a later sync writes nothing more
      const writes = w.fake.writes().length;
      await w.settle();
      assert.equal(w.fake.writes().length, writes);
      assert.deepEqual(w.mc.errors, []);
    });
  }
});
