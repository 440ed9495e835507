/**
 * One policy write per change across two `serve` processes (docs/architecture.md "Policy writes from several
 * replicas"). Each replica caches the live policy (here 60 s), so the replica that did not write still
 * believes the old policy is live; and a replica may still be working on an older request of the Tailnet
 * (Metacontroller gave up on it) while the other one already wrote a newer render. Both are guarded by a
 * fresh read of the live policy right before the PUT: equal to the render → no PUT (InSync); moved since
 * the sync observed it → no PUT (this render may be older), the next sync plans again.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { K8sObject } from "../../src/k8s/objects.js";
import { useFakeHeadscale } from "../fakes/headscale/index.js";
import { parentObject } from "../fixtures/hooks.js";
import { API, applyTailnet, lastSyncBody, replicas } from "./harness.js";

const CONFIG = "logLevel: warn\nheadscale: { timeoutSeconds: 15, cacheTTLSeconds: 60 }\n";
const EGRESS_TYPE = `TailnetEgress.${API}`;

const egress = (name: string) =>
  parentObject(
    "TailnetEgress",
    name,
    { tailnetRef: { name: "home" }, targets: [{ name: "pg", host: "100.64.0.20", ports: [{ port: 5432 }] }] },
    { namespace: "shop" },
  );

type Body = { parent: K8sObject; related: Record<string, Record<string, K8sObject>> };

/** A Tailnet sync request with more egresses in its related objects than `base`. */
function withEgresses(base: unknown, ...names: string[]): Body {
  const body = structuredClone(base) as Body;
  for (const n of names) body.related[EGRESS_TYPE][`shop/${n}`] = egress(n);
  return body;
}

type Answer = {
  status: { conditions: { type: string; status: string; reason: string; message: string }[] };
  resyncAfterSeconds?: number;
};
const applied = (a: Answer) => a.status.conditions.find((c) => c.type === "PolicyApplied");

describe("two replicas: one policy write per change", () => {
  it("the replica with a stale cache does not PUT the render the other one wrote; an older render never lands over a newer one", async (t) => {
    const fake = await useFakeHeadscale(t);
    const { mc, rr } = await replicas(t, 2, CONFIG);
    applyTailnet(mc, fake);
    mc.apply(egress("e1"));
    await mc.settle(10);
    assert.deepEqual(mc.errors, []);
    assert.equal(fake.policyWrites, 1);
    const puts = () => fake.requests.filter((r) => r.method === "PUT" && r.path === "/api/v1/policy");
    const tailnet = () => mc.get(API, "Tailnet", "home") as K8sObject;

    // Both replicas cache the live policy P1.
    const converged = lastSyncBody(mc, "Tailnet", "home");
    for (const i of [0, 1]) assert.equal((await rr.post(i, "/hooks/tailnet/sync", converged)).status, 200);

    // A change (a second egress): replica 0 writes P2, then replica 1 answers the next sync with P1 in its cache.
    mc.apply(egress("e2"));
    rr.pin(0);
    await mc.syncParent(tailnet());
    assert.equal(puts().length, 2, "replica 0 wrote the new render");
    rr.pin(1);
    await mc.syncParent(tailnet());
    rr.pin(undefined);
    assert.equal(puts().length, 2, "replica 1 found it live just before its PUT: no second PUT of the same hash");
    assert.equal(mc.condition("Tailnet", "home", "PolicyApplied")?.reason, "InSync");
    await mc.settle(10);
    assert.equal(puts().length, 2);

    // Replica 0 is slow with an older request (e3 added: P3) while replica 1 writes a newer one (e3, e4: P4).
    const base = lastSyncBody(mc, "Tailnet", "home");
    await fake.fault({ kind: "slow", method: "POST", path: /^\/api\/v1\/policy\/check$/, delayMs: 4000, times: 1 });
    const older = rr.post(0, "/hooks/tailnet/sync", withEgresses(base, "e3"));
    const deadline = Date.now() + 20_000;
    while (!fake.requests.some((r) => r.path === "/api/v1/policy/check" && r.status === undefined)) {
      assert.ok(Date.now() < deadline, "replica 0 reached policy/check");
      await new Promise((r) => setTimeout(r, 20));
    }
    // (held 4 s: long enough for replica 1 to finish a whole sync on a loaded machine)
    const newer = await rr.post(1, "/hooks/tailnet/sync", withEgresses(base, "e3", "e4"));
    assert.equal(newer.status, 200);
    assert.equal(applied(JSON.parse(newer.text) as Answer)?.reason, "Applied");
    const slow = await older;
    assert.equal(slow.status, 200);
    assert.equal(puts().length, 3, "only the newer render was written");
    const live = fake.state.policies.at(-1)?.text ?? "";
    assert.match(live, /tag:k8s-shop-e4/, "the newer render stays live");
    const answer = JSON.parse(slow.text) as Answer;
    assert.equal(applied(answer)?.status, "Unknown");
    assert.equal(applied(answer)?.reason, "ApplyFailed");
    assert.match(
      applied(answer)?.message ?? "",
      /^not written: the live policy changed from sha256:[0-9a-f]{64} to sha256:[0-9a-f]{64} while this sync was planning \(another operator replica or an administrator wrote it\); the next sync plans again from it$/,
    );
    assert.equal(answer.resyncAfterSeconds, 5);

    // The cluster catches up (both egresses exist): both replicas agree it is in sync, nothing more is written.
    mc.apply(egress("e3"));
    mc.apply(egress("e4"));
    await mc.settle(10);
    for (let i = 0; i < 3; i++) await mc.syncParent(tailnet());
    assert.equal(puts().length, 3);
    assert.equal(mc.condition("Tailnet", "home", "PolicyApplied")?.reason, "InSync");
    assert.deepEqual(mc.errors, []);
  });
});
