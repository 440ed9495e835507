/**
 * Issue 23 on the real Headscale 0.29.2: a namespace editor's TailnetEgress asking for `tag:db` — the tag the
 * admins' db-1 carries, registered through the CLI with an admin-made tagged key (world.ts) — is refused
 * (TagNotGranted; with a grant, TagInUse), no pre-auth key is minted with that tag, and deleting the egress
 * leaves db-1 registered and its key unexpired.
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { parentObject } from "../fixtures/hooks.js";
import { API, type RealOperator, startOperator, tailnetSpec } from "./operator.js";
import { DB_PORT, type RealWorld, startRealWorld, TAGS } from "./world.js";

type HsNode = { id: string | number; name: string; tags?: string[] };
type HsKey = {
  id: string | number;
  acl_tags?: string[];
  aclTags?: string[];
  expiration?: { seconds?: number } | string;
};

describe("tenancy on the real Headscale", { timeout: 600_000, concurrency: false }, () => {
  let world: RealWorld;
  let op: RealOperator;
  before(async () => {
    world = await startRealWorld({ id: "tenancy" });
    op = await startOperator(world, { tailnet: { allowedEgressTargets: [TAGS.db] } });
  });
  after(async () => {
    await op?.close();
    await world?.close();
  });

  const nodes = async () => (await world.headscale.json<HsNode[] | null>(["nodes", "list"])) ?? [];
  const dbKeys = async () =>
    ((await world.headscale.json<HsKey[] | null>(["preauthkeys", "list"])) ?? []).filter((k) =>
      (k.acl_tags ?? k.aclTags ?? []).includes(TAGS.db),
    );
  const egress = (namespace: string) =>
    parentObject(
      "TailnetEgress",
      "takeover",
      {
        tailnetRef: { name: "home" },
        tag: TAGS.db,
        targets: [{ name: "postgres", host: "db-1", ports: [{ port: DB_PORT }] }],
      },
      { namespace },
    );
  const ready = (namespace: string) =>
    (
      op.mc.get(API, "TailnetEgress", "takeover", namespace)?.status as
        | { conditions?: { type: string; reason: string; message: string }[] }
        | undefined
    )?.conditions?.find((c) => c.type === "Ready");

  it("tag:db without a grant: TagNotGranted, no key minted; the tenant's deletion leaves db-1 and its key", async () => {
    const db1 = (await nodes()).find((n) => n.tags?.includes(TAGS.db));
    assert.ok(db1, "the world's db-1 carries tag:db");
    const keysBefore = JSON.stringify(await dbKeys());
    op.mc.apply(egress("shop"));
    await op.mc.settle();
    assert.equal(ready("shop")?.reason, "TagNotGranted", ready("shop")?.message);
    assert.equal(JSON.stringify(await dbKeys()), keysBefore, "no pre-auth key with tag:db was minted or expired");

    op.mc.delete(API, "TailnetEgress", "takeover", "shop");
    await op.mc.settle();
    assert.equal(op.mc.get(API, "TailnetEgress", "takeover", "shop"), undefined);
    assert.ok(
      (await nodes()).some((n) => String(n.id) === String(db1.id)),
      "db-1 is still registered",
    );
    assert.equal(JSON.stringify(await dbKeys()), keysBefore, "the admins' tag:db key is not expired");
    assert.deepEqual(op.mc.errors, []);
  });

  it("tag:db granted to the namespace but carried by db-1: TagInUse, nothing minted, db-1 survives the deletion", async () => {
    op.mc.apply({ apiVersion: "v1", kind: "Namespace", metadata: { name: "dbteam", labels: { team: "db" } } });
    op.mc.apply(
      parentObject(
        "Tailnet",
        "home",
        tailnetSpec(world, {
          allowedEgressTargets: [TAGS.db],
          tenancy: { tags: [{ namespaceSelector: { matchLabels: { team: "db" } }, tags: [TAGS.db] }] },
        }),
      ),
    );
    const keysBefore = JSON.stringify(await dbKeys());
    op.mc.apply(egress("dbteam"));
    await op.mc.settle();
    assert.equal(ready("dbteam")?.reason, "TagInUse", ready("dbteam")?.message);
    assert.match(ready("dbteam")?.message ?? "", /tag:db is carried by db-1/);
    assert.equal(JSON.stringify(await dbKeys()), keysBefore);
    op.mc.delete(API, "TailnetEgress", "takeover", "dbteam");
    await op.mc.settle();
    assert.ok((await nodes()).some((n) => n.name === "db-1" && n.tags?.includes(TAGS.db)));
    assert.equal(JSON.stringify(await dbKeys()), keysBefore);
    assert.deepEqual(op.mc.errors, []);
  });
});
