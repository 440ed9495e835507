/**
 * POST /api/v1/node/{nodeId}/rename/{newName} as 0.29.3 answers it: hscontrol/state/state.go RenameNode
 * (types.ValidateGivenName → tailscale.com util/dnsname ValidLabel, then node_store.go setName's uniqueness
 * check), errors as plain Go errors (500, code 2) through hscontrol/grpcv1.go.
 */

import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { type FakeHeadscale, useFakeHeadscale } from "./index.js";

async function rename(fake: FakeHeadscale, id: string, name: string) {
  const res = await fetch(`${fake.url}/api/v1/node/${id}/rename/${encodeURIComponent(name)}`, {
    method: "POST",
    headers: { authorization: `Bearer ${fake.apiKey}` },
  });
  return { status: res.status, json: (await res.json()) as Record<string, unknown> };
}

const err = (message: string) => ({ status: 500, json: { code: 2, message, details: [] } });

describe("rename", () => {
  test("sets givenName (not the hostname) and answers the node", async (t) => {
    const fake = await useFakeHeadscale(t);
    const node = fake.addNode({ name: "shop-db", tags: ["tag:a"], givenName: "shop-db-1" });
    const res = await rename(fake, node.id, "shop-db-r1");
    assert.equal(res.status, 200);
    const answered = res.json.node as { id: string; name: string; givenName: string };
    assert.deepEqual([answered.id, answered.name, answered.givenName], [node.id, "shop-db", "shop-db-r1"]);
    assert.equal(fake.state.nodes.get(node.id)?.givenName, "shop-db-r1");
  });

  test("a name another node holds: 500 'node name is not unique: <name>'; its own name is fine", async (t) => {
    const fake = await useFakeHeadscale(t);
    fake.addNode({ name: "web", tags: ["tag:a"] });
    const node = fake.addNode({ name: "web", tags: ["tag:a"] });
    assert.equal(node.givenName, "web-1");
    assert.deepEqual(await rename(fake, node.id, "web"), err("node name is not unique: web"));
    assert.equal(node.givenName, "web-1", "nothing changed");
    assert.equal((await rename(fake, node.id, "web-1")).status, 200);
  });

  test("an invalid DNS label is refused with ValidLabel's words, before the node is looked up", async (t) => {
    const fake = await useFakeHeadscale(t);
    const node = fake.addNode({ name: "n", tags: ["tag:a"] });
    const rows: [string, string][] = [
      ["-web", '"-web" is not a valid DNS label: "-web" is not a valid DNS label: must start with a letter or number'],
      ["web-", '"web-" is not a valid DNS label: "web-" is not a valid DNS label: must end with a letter or number'],
      ["we_b", `"we_b" is not a valid DNS label: "we_b" is not a valid DNS label: contains invalid character '_'`],
      [
        "a".repeat(64),
        `"${"a".repeat(64)}" is not a valid DNS label: "${"a".repeat(64)}" is too long, max length is 63 bytes`,
      ],
    ];
    for (const [name, message] of rows) {
      assert.deepEqual(await rename(fake, node.id, name), err(`renaming node: ${message}`), name);
      assert.deepEqual(await rename(fake, "999", name), err(`renaming node: ${message}`), `${name} on no node`);
    }
    assert.equal(node.givenName, "n");
  });

  test("an unknown node: 500 'node no longer exists in NodeStore: <id>'", async (t) => {
    const fake = await useFakeHeadscale(t);
    assert.deepEqual(await rename(fake, "999", "web"), err("node no longer exists in NodeStore: 999"));
  });
});
