import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { listNames, nodesWithTag } from "../../../src/kinds/shared/node-names.js";
import { hsNode } from "./fixtures.js";

describe("node names", () => {
  it("listNames caps long lists", () => {
    assert.equal(listNames(["a", "b"]), "a, b");
    assert.equal(listNames(["a", "b", "c", "d", "e", "f", "g"]), "a, b, c, d, e and 2 more");
  });

  it("nodesWithTag includes multi-tag nodes", () => {
    const nodes = [
      hsNode({ id: "1", name: "b", tags: ["tag:x"] }),
      hsNode({ id: "2", name: "a", tags: ["tag:x", "tag:y"] }),
      hsNode({ id: "3", name: "c", tags: ["tag:y"] }),
    ];
    assert.deepEqual(
      nodesWithTag(nodes, "tag:x").map((n) => n.name),
      ["a", "b"],
    );
  });
});
