/** The in-memory Headscale `render` talks to: the rename write, as 0.29.3 RenameNode answers it. */

import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { EMPTY_SNAPSHOT, SnapshotHeadscale } from "../../../src/emulator/headscale/in-memory.js";

const node = (id: string, givenName: string) => ({ id, name: givenName, givenName, tags: ["tag:a"] });

function server() {
  return new SnapshotHeadscale(
    { ...EMPTY_SNAPSHOT, nodes: [node("1", "web"), node("2", "web-1")] },
    () => new Date("2026-12-01T00:00:00Z"),
  );
}

const body = (r: { data: string }) => JSON.parse(r.data) as Record<string, unknown>;

describe("SnapshotHeadscale rename", () => {
  test("renames the node in memory and records the write", () => {
    const hs = server();
    const r = hs.handle("POST", "/api/v1/node/2/rename/web-r1", "");
    assert.equal(r.statusCode, 200);
    assert.equal((body(r).node as { givenName: string }).givenName, "web-r1");
    assert.deepEqual(
      hs.state.nodes.map((n) => n.givenName),
      ["web", "web-r1"],
    );
    assert.deepEqual(hs.writes, ["POST /api/v1/node/2/rename/web-r1"]);
  });

  test("refuses a taken name, an invalid label (checked first) and a node that is gone, changing nothing", () => {
    const hs = server();
    const rows: [string, string][] = [
      ["/api/v1/node/2/rename/web", "node name is not unique: web"],
      ["/api/v1/node/9/rename/-web", 'renaming node: "-web" is not a valid DNS label'],
      ["/api/v1/node/9/rename/web", "node no longer exists in NodeStore: 9"],
    ];
    for (const [path, message] of rows) {
      const r = hs.handle("POST", path, "");
      assert.deepEqual([r.statusCode, body(r)], [500, { code: 2, message, details: [] }], path);
    }
    assert.equal(hs.handle("POST", "/api/v1/node/1/rename/web", "").statusCode, 200, "its own name is not taken");
    assert.deepEqual(
      hs.state.nodes.map((n) => n.givenName),
      ["web", "web-1"],
    );
    assert.deepEqual(hs.writes, ["POST /api/v1/node/1/rename/web"]);
  });
});
