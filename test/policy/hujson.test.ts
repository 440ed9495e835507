import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { parseHuJson } from "../../src/policy/hujson.js";

describe("parseHuJson", () => {
  it("reads comments and trailing commas", () => {
    const text = `// base policy for the home tailnet
{
  /* who owns which tag */
  "tagOwners": {
    "tag:db": ["group:platform",], // trailing comma in a list
  },
  "acls": [
    {"action": "accept", "src": ["*"], "dst": ["*:*"]},
  ],
}
`;
    assert.deepEqual(parseHuJson(text), {
      ok: true,
      value: {
        tagOwners: { "tag:db": ["group:platform"] },
        acls: [{ action: "accept", src: ["*"], dst: ["*:*"] }],
      },
    });
  });

  it("reads plain JSON with nulls, numbers and nested objects", () => {
    const value = { a: null, b: 1.5, c: [true, false, { d: "e" }], "#note": "kept" };
    assert.deepEqual(parseHuJson(JSON.stringify(value)), { ok: true, value });
  });

  it("reads a blank or comment-only document as an empty object", () => {
    assert.deepEqual(parseHuJson(""), { ok: true, value: {} });
    assert.deepEqual(parseHuJson("  \n // nothing yet\n /* still nothing */ \n"), { ok: true, value: {} });
  });

  const errors: { name: string; text: string; message: string }[] = [
    { name: "missing comma", text: '{\n  "a": 1\n  "b": 2\n}', message: "line 3:3: comma expected" },
    { name: "unterminated string", text: '{"a": "x}', message: "line 1:7: unterminated string" },
    { name: "unterminated comment", text: '{"a": 1 /* no end', message: "line 1:9: unterminated comment" },
    { name: "missing value", text: '{\n"a": }', message: "line 2:6: value expected" },
    { name: "unclosed object", text: '{"a": [1, 2]', message: "line 1:13: closing brace expected" },
    { name: "two documents", text: "{} {}", message: "line 1:4: end of input expected" },
    { name: "single quotes", text: "{'a': 1}", message: "line 1:2: invalid symbol" },
    {
      name: "duplicate key",
      text: '{\n  "acls": [],\n  "acls": []\n}',
      message: 'line 3:3: duplicate key "acls"',
    },
    { name: "array at the top", text: "[1, 2]", message: "the top level must be an object, got an array" },
    { name: "string at the top", text: '"policy"', message: "the top level must be an object, got string" },
    { name: "null at the top", text: "// c\nnull", message: "the top level must be an object, got null" },
  ];
  for (const row of errors) {
    it(`reports ${row.name}`, () => {
      assert.deepEqual(parseHuJson(row.text), { ok: false, message: row.message });
    });
  }

  it("keeps a __proto__ key as data instead of changing the prototype", () => {
    const r = parseHuJson('{"hosts": {"__proto__": "10.0.0.1", "a": "10.0.0.2"}}');
    assert.ok(r.ok);
    const hosts = r.value.hosts as Record<string, unknown>;
    assert.equal(Object.getPrototypeOf(hosts), Object.prototype);
    assert.deepEqual(Object.keys(hosts), ["__proto__", "a"]);
    assert.equal(Object.getOwnPropertyDescriptor(hosts, "__proto__")?.value, "10.0.0.1");
  });

  it("keeps key order as written", () => {
    const r = parseHuJson('{"z": 1, "a": 2, "m": {"y": 1, "b": 2}}');
    assert.ok(r.ok);
    assert.deepEqual(Object.keys(r.value), ["z", "a", "m"]);
    assert.deepEqual(Object.keys(r.value.m as object), ["y", "b"]);
  });
});
