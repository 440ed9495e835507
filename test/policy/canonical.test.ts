import assert from "node:assert/strict";
import { describe, it } from "node:test";
import fc from "fast-check";
import { canonicalJson, hashOfLivePolicy, policyHash } from "../../src/policy/canonical.js";

describe("canonicalJson", () => {
  it("sorts object keys recursively and keeps array order", () => {
    const value = { z: [3, 1, 2], a: { y: true, b: null }, m: [{ q: 1, p: 2 }, "s"] };
    assert.equal(canonicalJson(value), '{"a":{"b":null,"y":true},"m":[{"p":2,"q":1},"s"],"z":[3,1,2]}');
  });

  it("sorts integer-like keys as strings too", () => {
    assert.equal(canonicalJson({ "9": 1, "10": 2, a: 3 }), '{"10":2,"9":1,"a":3}');
  });

  it("sorts by UTF-16 code units, not locale", () => {
    assert.equal(canonicalJson({ b: 1, B: 2, "#x": 3, é: 4 }), '{"#x":3,"B":2,"b":1,"é":4}');
  });

  it("escapes strings like JSON and drops undefined members", () => {
    assert.equal(canonicalJson({ s: 'a"b\n', u: undefined, e: {}, l: [] }), '{"e":{},"l":[],"s":"a\\"b\\n"}');
  });

  it("is the same for the same content in any key order", () => {
    const a = { tagOwners: { "tag:a": ["x"], "tag:b": ["y"] }, acls: [{ action: "accept", src: ["*"] }] };
    const b = { acls: [{ src: ["*"], action: "accept" }], tagOwners: { "tag:b": ["y"], "tag:a": ["x"] } };
    assert.equal(canonicalJson(a), canonicalJson(b));
  });

  it("pretty-prints with the same order when asked", () => {
    assert.equal(
      canonicalJson({ b: [1, { d: 1, c: 2 }], a: {} }, 2),
      '{\n  "a": {},\n  "b": [\n    1,\n    {\n      "c": 2,\n      "d": 1\n    }\n  ]\n}',
    );
    assert.deepEqual(JSON.parse(canonicalJson({ b: [1], a: { c: null } }, 2)), { a: { c: null }, b: [1] });
  });

  it("keeps a __proto__ key", () => {
    const obj: Record<string, unknown> = {};
    Object.defineProperty(obj, "__proto__", { value: 1, enumerable: true });
    assert.equal(canonicalJson(obj), '{"__proto__":1}');
  });
});

/** Reference: the definition, written the simplest way. */
function reference(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(reference).join(",")}]`;
  if (v !== null && typeof v === "object") {
    const o = v as Record<string, unknown>;
    const keys = Object.keys(o)
      .filter((k) => o[k] !== undefined)
      .sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${keys.map((k) => `${JSON.stringify(k)}:${reference(o[k])}`).join(",")}}`;
  }
  return JSON.stringify(v);
}

describe("canonicalJson properties", () => {
  // JSON values, with integer-like keys mixed in (they take the hand-written path).
  const key = fc.oneof(
    fc.string(),
    fc.nat({ max: 5000 }).map(String),
    fc.constantFrom("__proto__", "tag:a", "10.0.0.0/8"),
  );
  const { json } = fc.letrec((tie) => ({
    json: fc.oneof(
      { depthSize: "small" },
      fc.oneof(
        fc.string(),
        fc.integer(),
        fc.double({ noNaN: true, noDefaultInfinity: true }),
        fc.boolean(),
        fc.constant(null),
      ),
      fc.array(tie("json"), { maxLength: 4 }),
      fc.array(fc.tuple(key, tie("json")), { maxLength: 4 }).map((entries) => {
        const o: Record<string, unknown> = {};
        for (const [k, v] of entries)
          Object.defineProperty(o, k, { value: v, enumerable: true, writable: true, configurable: true });
        return o;
      }),
    ),
  }));

  it("equals the reference definition, compact and indented", () => {
    fc.assert(
      fc.property(json, (v) => {
        const c = canonicalJson(v);
        assert.equal(c, reference(v));
        assert.deepEqual(JSON.parse(canonicalJson(v, 2)), JSON.parse(c));
      }),
      { numRuns: 500 },
    );
  });

  it("does not depend on key insertion order", () => {
    fc.assert(
      fc.property(json, (v) => {
        const reversed = JSON.parse(reverseKeysText(v));
        assert.equal(canonicalJson(reversed), canonicalJson(JSON.parse(JSON.stringify(v))));
      }),
      { numRuns: 300 },
    );
  });
});

/** JSON text of v with every object's keys written in reverse order. */
function reverseKeysText(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(reverseKeysText).join(",")}]`;
  if (v !== null && typeof v === "object") {
    const o = v as Record<string, unknown>;
    return `{${Object.keys(o)
      .reverse()
      .map((k) => `${JSON.stringify(k)}:${reverseKeysText(o[k])}`)
      .join(",")}}`;
  }
  return JSON.stringify(v);
}

describe("policyHash / hashOfLivePolicy", () => {
  it("hashes the canonical text with sha256", () => {
    assert.equal(policyHash("{}"), "sha256:44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a");
  });

  it("ignores comments, whitespace, trailing commas and key order of the live text", () => {
    const written = canonicalJson({
      acls: [{ action: "accept", dst: ["*:*"], src: ["*"] }],
      tagOwners: { "tag:a": [] },
    });
    const live = `{
      // edited by hand, same meaning
      "tagOwners": { "tag:a": [], },
      "acls": [ { "src": ["*"], "dst": ["*:*"], "action": "accept" }, ],
    }`;
    const r = hashOfLivePolicy(live);
    assert.ok(r.ok);
    assert.equal(r.hash, policyHash(written));
  });

  it("keeps the answers for the live policy and the one before it only (each key is a whole policy text)", () => {
    const texts = [1, 2, 3].map((i) => `{"tagOwners": {"tag:memo-${i}": []}}`);
    const first = texts.map((t) => hashOfLivePolicy(t));
    assert.equal(hashOfLivePolicy(texts[2]), first[2], "the live one is answered from the memo");
    assert.equal(hashOfLivePolicy(texts[1]), first[1], "and the one before it");
    const again = hashOfLivePolicy(texts[0]);
    assert.notEqual(again, first[0], "an older text was let go, and is parsed again");
    assert.deepEqual(again, first[0]);
  });

  it("changes when an array's order changes", () => {
    const a = hashOfLivePolicy('{"acls": [{"src": ["a"]}, {"src": ["b"]}]}');
    const b = hashOfLivePolicy('{"acls": [{"src": ["b"]}, {"src": ["a"]}]}');
    assert.ok(a.ok && b.ok);
    assert.notEqual(a.hash, b.hash);
  });

  it("reports a live text that is not HuJSON", () => {
    assert.deepEqual(hashOfLivePolicy('{"acls": [}'), {
      ok: false,
      message: "live policy is not valid HuJSON: line 1:11: value expected",
    });
  });
});
