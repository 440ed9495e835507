import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { parentObject } from "../fixtures/hooks.js";
import { build } from "../helpers/server.js";
import { FakeMetacontroller } from "./metacontroller.js";

describe("the Metacontroller emulator against the real server", () => {
  it("syncs every kind to a fixpoint with a stable status, then finalizes", async (t) => {
    const { app } = await build(t);
    const mc = new FakeMetacontroller({ app });
    mc.apply(
      parentObject("Tailnet", "home", {
        headscale: { url: "https://hs.example.com", apiKeySecretRef: { namespace: "tailnet-system", name: "hs" } },
      }),
    );
    mc.apply(
      parentObject(
        "TailnetSite",
        "lan",
        { tailnetRef: { name: "home" }, prefixes: ["192.168.1.0/24"], advertiserTags: ["tag:router"] },
        { namespace: "net" },
      ),
    );
    const rounds = await mc.settle();
    assert.ok(rounds <= 3, `settled in ${rounds} rounds`);
    assert.deepEqual(mc.errors, []);
    const before = JSON.stringify(mc.status("tailnet.internal/v1alpha1", "TailnetSite", "lan", "net"));
    assert.equal(await mc.settle(), 1);
    assert.equal(JSON.stringify(mc.status("tailnet.internal/v1alpha1", "TailnetSite", "lan", "net")), before);
    assert.equal(mc.calls.filter((c) => c.hook === "customize").length, 2, "customize is cached per uid+generation");
    mc.delete("tailnet.internal/v1alpha1", "TailnetSite", "lan", "net");
    await mc.settle();
    assert.equal(mc.get("tailnet.internal/v1alpha1", "TailnetSite", "lan", "net"), undefined);
    assert.ok(mc.calls.some((c) => c.hook === "finalize" && c.parent === "net/lan"));
  });

  it("rejects a status the CRD would prune (the hot-loop guard)", async (t) => {
    const { kindModules } = await import("../../src/kinds/index.js");
    const base = kindModules.get("site");
    assert.ok(base);
    const kinds = new Map(kindModules);
    kinds.set("site", { ...base, sync: async () => ({ status: { bogus: 1 }, children: [] }) });
    const { app } = await build(t, { server: { kinds } });
    const mc = new FakeMetacontroller({ app });
    mc.apply(
      parentObject(
        "TailnetSite",
        "lan",
        { tailnetRef: { name: "home" }, prefixes: ["10.0.0.0/8"], advertiserTags: ["tag:r"] },
        { namespace: "n" },
      ),
    );
    await assert.rejects(mc.settle(), /fields the CRD prunes/);
  });
});
