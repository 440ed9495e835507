/**
 * Two `serve` processes behind a round robin, one fake Headscale: once converged, resync rounds through both
 * replicas (each parent answered by one and then the other) write nothing to Headscale and change no status,
 * and the same sync request answered by either replica gives the same response, byte for byte — even though
 * each replica has its own snapshot cache (10 s), policy-check verdicts and write backoff.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { useFakeHeadscale } from "../fakes/headscale/index.js";
import { parentObject } from "../fixtures/hooks.js";
import { API, applyTailnet, lastSyncBody, replicas, statuses } from "./harness.js";

describe("two replicas: fixpoint", () => {
  it("quiet resync rounds through both replicas: no Headscale write, no status change, identical answers", async (t) => {
    const fake = await useFakeHeadscale(t);
    fake.addNode({ name: "router-1", tags: ["tag:router"], availableRoutes: ["192.168.10.0/24"] });
    const { mc, rr, replicas: list } = await replicas(t, 2);
    applyTailnet(mc, fake);
    mc.apply(
      parentObject(
        "TailnetEgress",
        "db",
        { tailnetRef: { name: "home" }, targets: [{ name: "pg", host: "100.64.0.20", ports: [{ port: 5432 }] }] },
        { namespace: "shop" },
      ),
    );
    mc.apply(
      parentObject(
        "TailnetIngress",
        "web",
        {
          tailnetRef: { name: "home" },
          hostname: "web",
          allowFrom: ["group:eng"],
          exposes: [{ name: "http", port: 80, backend: { service: "web", port: 8080 } }],
        },
        { namespace: "shop" },
      ),
    );
    mc.apply(
      parentObject(
        "TailnetSite",
        "lan",
        { tailnetRef: { name: "home" }, prefixes: ["192.168.10.0/24"], advertiserTags: ["tag:router"] },
        { namespace: "net" },
      ),
    );
    mc.apply(
      parentObject(
        "TailnetGateway",
        "gw",
        { tailnetRef: { name: "home" }, hostname: "gw", routes: [], dns: { zone: "ts.example.com" } },
        { namespace: "infra" },
      ),
    );
    await mc.settle(12);
    assert.deepEqual(mc.errors, []);
    assert.equal(
      fake.policyWrites,
      1,
      `the policy was written once while converging: ${JSON.stringify(mc.status(API, "Tailnet", "home")?.conditions)}`,
    );

    const writes = fake.writes().length;
    const before = statuses(mc);
    const parents = mc.parents();
    assert.equal(parents.length % 2, 1, "an odd number of parents: each round a parent goes to the other replica");
    const answered = new Map<string, Set<number>>();
    for (let round = 0; round < 4; round++) {
      for (const p of mc.parents()) {
        const at = rr.answeredBy.length;
        const changed = await mc.syncParent(p);
        assert.equal(changed, false, `round ${round}: ${p.kind} ${p.metadata.name} changed`);
        const key = `${p.kind}/${p.metadata.name}`;
        const set = answered.get(key) ?? new Set<number>();
        for (const i of rr.answeredBy.slice(at)) set.add(i);
        answered.set(key, set);
      }
    }
    for (const [key, set] of answered) assert.deepEqual([...set].sort(), [0, 1], `${key} answered by both replicas`);
    assert.deepEqual(mc.errors, []);
    assert.deepEqual(fake.writes().slice(writes), [], "no Headscale write in the quiet period");
    assert.equal(statuses(mc), before, "no status change in the quiet period");

    for (const p of parents) {
      const name = p.metadata.namespace ? `${p.metadata.namespace}/${p.metadata.name}` : p.metadata.name;
      const body = lastSyncBody(mc, p.kind, name);
      const hook = `/hooks/${p.kind.replace(/^Tailnet/, "").toLowerCase() || "tailnet"}/sync`;
      const [a, b] = [await rr.post(0, hook, body), await rr.post(1, hook, body)];
      assert.equal(a.status, 200, `${p.kind} ${name}: ${a.text}`);
      assert.equal(a.text, b.text, `${p.kind} ${name}: the same request, the same answer from either replica`);
    }
    assert.deepEqual(fake.writes().slice(writes), [], "nor while answering the same request twice");
    assert.ok(list.every((r) => r.calls > 0));
  });
});
