/**
 * The view's caching rules across two `serve` processes (issue 25). A replica's own mint joins its cached key
 * list instead of dropping it, and key and node lists are indexed; each replica's cache and indexes are its
 * own, so the other one holds a list from before the mint or the approval. What must keep holding: one key
 * per object and rotation (the stale replica reads the list fresh before minting, never from its cache), no
 * approval lost (the stale replica reads the node list fresh before an approve_routes read-modify-write), no
 * write for a change already made.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { K8sObject } from "../../src/k8s/objects.js";
import { AUTHKEY_LABEL } from "../../src/kinds/shared/authkey.js";
import { useFakeHeadscale } from "../fakes/headscale/index.js";
import { parentObject } from "../fixtures/hooks.js";
import { API, applyTailnet, lastSyncBody, replicas } from "./harness.js";

const egress = (name: string) =>
  parentObject(
    "TailnetEgress",
    name,
    { tailnetRef: { name: "home" }, targets: [{ name: "pg", host: "100.64.0.20", ports: [{ port: 5432 }] }] },
    { namespace: "shop" },
  );
const secretsIn = (text: string) =>
  (JSON.parse(text) as { children: K8sObject[] }).children.filter(
    (c) => c.kind === "Secret" && c.metadata.labels?.[AUTHKEY_LABEL],
  );

describe("two replicas, each with its own view cache and indexes", () => {
  it("one replica mints and caches the key; the other, holding a key list from before, does not mint again", async (t) => {
    const fake = await useFakeHeadscale(t);
    const { mc, rr } = await replicas(t, 2);
    applyTailnet(mc, fake);
    await mc.settle(10);
    const live = (name: string) => mc.get(API, "TailnetEgress", name, "shop") as K8sObject;
    const mints = () => fake.count("POST", /^\/api\/v1\/preauthkey$/);
    const listReads = () => fake.count("GET", /^\/api\/v1\/preauthkey$/);

    // both replicas hold a cached key list (TTL 10 s) from before "db" exists
    mc.apply(egress("warm"));
    rr.pin(1);
    await mc.syncParent(live("warm"));
    rr.pin(0);
    await mc.syncParent(live("warm"));

    mc.apply(egress("db"));
    const before = mints();
    await mc.syncParent(live("db"));
    assert.equal(mints(), before + 1, "replica 0 minted db's key");

    // replica 0's own mint is in its cached list: its next sync reads no list
    const reads = listReads();
    await mc.syncParent(live("warm"));
    assert.equal(listReads(), reads, "replica 0 did not re-read the key list after its mint");

    // replica 1 answers the request replica 0 answered (db's Secret not observed yet), with its old cache
    const answer = await rr.post(1, "/hooks/egress/sync", lastSyncBody(mc, "TailnetEgress", "shop/db"));
    assert.equal(answer.status, 200, answer.text);
    assert.equal(mints(), before + 1, "replica 1 found the key in a fresh read and did not mint a second one");
    assert.deepEqual(secretsIn(answer.text), []);

    rr.pin(undefined);
    for (let i = 0; i < 4; i++) await mc.syncParent(live("db"));
    assert.equal(mints(), before + 1, "both replicas reuse the one key");
    assert.deepEqual(mc.errors, []);
    fake.assertNoViolations();
  });

  it("an approval made by one replica is not lost by the other's stale node list, nor written twice", async (t) => {
    const fake = await useFakeHeadscale(t);
    const router = fake.addNode({
      name: "router-1",
      tags: ["tag:router"],
      availableRoutes: ["10.1.0.0/24", "10.2.0.0/24"],
    });
    const { mc, rr } = await replicas(t, 2);
    applyTailnet(mc, fake);
    mc.apply(egress("warm"));
    await mc.settle(10);
    // both replicas cache the node list with nothing approved
    const warm = mc.get(API, "TailnetEgress", "warm", "shop") as K8sObject;
    for (const i of [0, 1]) {
      rr.pin(i);
      await mc.syncParent(warm);
    }
    assert.deepEqual(fake.state.nodes.get(router.id)?.approvedRoutes, []);

    const site = (name: string, prefix: string) =>
      parentObject(
        "TailnetSite",
        name,
        { tailnetRef: { name: "home" }, prefixes: [prefix], advertiserTags: ["tag:router"] },
        { namespace: "net" },
      );
    mc.apply(site("a", "10.1.0.0/24"));
    mc.apply(site("b", "10.2.0.0/24"));
    rr.pin(0);
    await mc.settle(10);
    const approved = () => [...(fake.state.nodes.get(router.id)?.approvedRoutes ?? [])].sort();
    assert.deepEqual(approved(), ["10.1.0.0/24", "10.2.0.0/24"], "both sites' prefixes approved through replica 0");
    const approvals = fake.count("POST", /^\/api\/v1\/node\/\d+\/approve_routes$/);

    // replica 1, whose cached node list has nothing approved, syncs both sites
    rr.pin(1);
    for (const name of ["a", "b"]) await mc.syncParent(mc.get(API, "TailnetSite", name, "net") as K8sObject);
    assert.deepEqual(approved(), ["10.1.0.0/24", "10.2.0.0/24"], "no approval lost");
    assert.equal(
      fake.count("POST", /^\/api\/v1\/node\/\d+\/approve_routes$/),
      approvals,
      "and none written again for a change already made",
    );
    assert.deepEqual(mc.errors, []);
  });
});
