import assert from "node:assert/strict";
import { Readable } from "node:stream";
import { describe, it } from "node:test";
import fc from "fast-check";
import {
  BodyError,
  dropBookkeeping,
  dropUnread,
  parseHookBody,
  STREAM_DROP_BYTES,
  UnreadDropper,
} from "../../src/server/body.js";
import { ByteBudget, RESERVE_BYTES } from "../../src/server/limits.js";
import { readBody } from "../../src/server/read-body.js";

const LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration";
const MC_LAST_APPLIED = "metacontroller.k8s.io/last-applied-configuration";

/** What dropBookkeeping must amount to, on the parsed value. */
function stripped(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(stripped);
  if (!v || typeof v !== "object") return v;
  return Object.fromEntries(
    Object.entries(v)
      .filter(([k]) => k !== "managedFields" && k !== LAST_APPLIED)
      .map(([k, x]) => [k, stripped(x)]),
  );
}
const drop = (text: string) => JSON.parse(dropBookkeeping(Buffer.from(text)).toString("utf8")) as unknown;

/** dropUnread against parse-then-strip with the related status kept per group. */
function keepsOnlyNamedRelatedStatus() {
  const groups = new Map([
    ["TailnetEgress.tailnet.internal/v1alpha1", ["tag", "preAuthKeyIds"]],
    ["TailnetSite.tailnet.internal/v1alpha1", []],
  ]);
  const isObject = (v: unknown): v is Record<string, unknown> => !!v && typeof v === "object" && !Array.isArray(v);
  const reference = (body: Record<string, unknown>) => {
    const out = stripped(body) as Record<string, unknown>;
    const related = out.related;
    if (!isObject(related)) return out;
    for (const [g, group] of Object.entries(related)) {
      const keep = groups.get(g);
      if (!keep || !isObject(group)) continue;
      for (const o of Object.values(group)) {
        if (!isObject(o) || !("status" in o)) continue;
        if (!keep.length) delete o.status;
        else if (isObject(o.status))
          o.status = Object.fromEntries(Object.entries(o.status).filter(([k]) => keep.includes(k)));
      }
    }
    return out;
  };
  const key = fc.oneof(
    fc.constantFrom("status", "managedFields", "spec", "metadata", "tag", "preAuthKeyIds"),
    fc.string({ maxLength: 4 }),
  );
  const object = fc.dictionary(
    key,
    fc.oneof(fc.jsonValue({ maxDepth: 2 }), fc.dictionary(key, fc.jsonValue({ maxDepth: 1 }))),
    {
      maxKeys: 5,
    },
  );
  const groupKey = fc.constantFrom(...groups.keys(), "TailnetGateway.tailnet.internal/v1alpha1", "Secret.v1");
  const section = fc.dictionary(groupKey, fc.dictionary(fc.string({ maxLength: 6 }), object, { maxKeys: 3 }), {
    maxKeys: 3,
  });
  const body = fc.record(
    { parent: object, children: section, related: section, finalizing: fc.boolean() },
    { requiredKeys: [] },
  );
  fc.assert(
    fc.property(body, fc.boolean(), (b, pretty) => {
      const text = JSON.stringify(b, null, pretty ? 2 : undefined);
      const got = JSON.parse(dropUnread(Buffer.from(text), groups).toString("utf8")) as unknown;
      assert.deepEqual(got, reference(JSON.parse(text)));
    }),
    { numRuns: 2000 },
  );
}

/** UnreadDropper fed chunk by chunk, compacting as it goes, against dropUnread on the whole body. */
function chunkedScanEqualsOneShot() {
  const groups = new Map([["TailnetEgress.tailnet.internal/v1alpha1", ["tag"]]]);
  const key = fc.oneof(fc.constantFrom("managedFields", LAST_APPLIED, "status", "related", "tag", "a\\"), fc.string());
  const value = fc.letrec((tie) => ({
    node: fc.oneof(
      { depthSize: "small" },
      fc.jsonValue(),
      fc.array(tie("node"), { maxLength: 4 }),
      fc.dictionary(key, tie("node"), { maxKeys: 5 }),
    ),
  })).node;
  const related = fc.record({
    related: fc.dictionary(
      fc.constantFrom(...groups.keys(), "Secret.v1"),
      fc.dictionary(fc.string({ maxLength: 3 }), value),
    ),
    rest: value,
  });
  // valid bodies and cut or corrupted ones (a malformed body must come out the same too)
  const text = fc.oneof(
    fc.tuple(related, fc.boolean()).map(([v, pretty]) => JSON.stringify(v, null, pretty ? 1 : undefined)),
    fc.tuple(related, fc.nat(), fc.constantFrom("", "{", "]", ",", '"', "\\", ":")).map(([v, at, junk]) => {
      const t = JSON.stringify(v);
      const i = at % (t.length + 1);
      return t.slice(0, i) + junk + t.slice(i + (junk ? 1 : 0));
    }),
  );
  fc.assert(
    fc.property(
      text,
      fc.array(fc.integer({ min: 1, max: 9 }), { minLength: 1, maxLength: 8 }),
      fc.array(fc.boolean(), { minLength: 1, maxLength: 5 }),
      (t, steps, compacts) => {
        const bytes = Buffer.from(t);
        const expected = Buffer.from(dropUnread(Buffer.from(bytes), groups));
        const buf = Buffer.alloc(bytes.length);
        const d = new UnreadDropper(buf, groups);
        // n bytes of the body arrived; `held` of them are in buf (compact() moves out what was dropped)
        let n = 0;
        let held = 0;
        for (let i = 0; n < bytes.length; i++) {
          const next = Math.min(bytes.length, n + steps[i % steps.length]);
          if (compacts[i % compacts.length]) held -= d.compact(held);
          bytes.copy(buf, held, n, next);
          held += next - n;
          n = next;
          d.feed(held);
        }
        assert.deepEqual(d.finish(held), expected, t);
      },
    ),
    { numRuns: 1000 },
  );
}

/** A body over the byte budget whose kept part fits is read through one lease. */
async function readBodyHoldsOnlyKept() {
  const conditions = Array.from({ length: 6 }, (_, i) => ({
    type: `C${i}`,
    status: "True",
    message: "x".repeat(200),
  }));
  const served = {
    metadata: { name: "db", managedFields: [{ manager: "kubectl", fieldsV1: { "f:spec": { "f:x": {} } } }] },
    spec: { x: "y" },
    status: { tag: "tag:db", conditions },
  };
  const groups = new Map([["TailnetEgress.tailnet.internal/v1alpha1", ["tag"]]]);
  const objects: Record<string, unknown> = {};
  for (let i = 0; i < 4000; i++) objects[`ns/o${i}`] = served;
  const raw = Buffer.from(JSON.stringify({ related: { "TailnetEgress.tailnet.internal/v1alpha1": objects } }));
  const expected = dropUnread(Buffer.from(raw), groups);
  assert.ok(raw.length > 5 * 2 ** 20 && expected.length < 2 ** 20, `${raw.length} bytes, ${expected.length} kept`);
  // one slot: its reserve plus 2 MiB of pool, under half the body
  const budget = new ByteBudget(RESERVE_BYTES + 2 * 2 ** 20, 1);
  const chunks: Buffer[] = [];
  for (let i = 0; i < raw.length; i += 65536) chunks.push(raw.subarray(i, i + 65536));
  const got = await readBody({ "content-length": String(raw.length) }, Readable.from(chunks), raw.length, "x", {
    drop: { relatedStatus: groups },
    lease: budget.lease(),
  });
  assert.deepEqual(got, expected);
}

/** dropBookkeeping against parse-then-strip on arbitrary JSON. */
function equalsParseThenStrip() {
  const key = fc.oneof(fc.constantFrom("managedFields", LAST_APPLIED, "name", "a\\", '"'), fc.string());
  const value = fc.letrec((tie) => ({
    node: fc.oneof(
      { depthSize: "small" },
      fc.jsonValue(),
      fc.array(tie("node"), { maxLength: 4 }),
      fc.dictionary(key, tie("node"), { maxKeys: 5 }),
    ),
  })).node;
  fc.assert(
    fc.property(value, fc.boolean(), (v, pretty) => {
      const text = JSON.stringify(v, null, pretty ? 1 : undefined);
      assert.deepEqual(drop(text), stripped(JSON.parse(text)));
    }),
    { numRuns: 2000 },
  );
}

describe("hook body: managedFields and kubectl's last-applied annotation are never parsed", () => {
  const served = {
    apiVersion: "tailnet.internal/v1alpha1",
    kind: "TailnetEgress",
    metadata: {
      managedFields: [{ manager: "kubectl", fieldsV1: { "f:spec": { "f:targets": {} } }, time: "t" }],
      name: "db",
      annotations: {
        [LAST_APPLIED]: '{"apiVersion":"tailnet.internal/v1alpha1","spec":{"x":"a \\"quoted\\" \\\\"}}\n',
        [MC_LAST_APPLIED]: '{"kind":"Service"}',
        note: 'looks like a key: "managedFields": [1]',
      },
      namespace: "shop",
    },
    spec: { managedFields: "a spec field of that name is dropped too", targets: [] },
  };
  it("drops them as first, middle and last members, keeps everything else byte for byte", () => {
    for (const text of [JSON.stringify(served), JSON.stringify(served, null, 2)]) {
      assert.deepEqual(drop(text), stripped(served));
    }
    const out = drop(JSON.stringify(served)) as typeof served;
    assert.equal(out.metadata.annotations[MC_LAST_APPLIED], '{"kind":"Service"}', "Metacontroller's own is read");
    assert.equal(out.metadata.annotations.note, 'looks like a key: "managedFields": [1]');
    assert.deepEqual(drop('{"managedFields":[]}'), {});
    assert.deepEqual(drop('{ "managedFields" : null , "a": 1 }'), { a: 1 });
    assert.deepEqual(drop('{"a":1,"managedFields":{"b":"}"}}'), { a: 1 });
  });
  it("equals parse-then-strip on arbitrary JSON (property)", equalsParseThenStrip);
  it(
    "keeps of related objects' status only the members named for their group, nowhere else (property)",
    keepsOnlyNamedRelatedStatus,
  );

  it(
    "scanned chunk by chunk while the body arrives, gives the bytes the one-shot scan gives (property)",
    chunkedScanEqualsOneShot,
  );
  it("readBody drops while a large body arrives in chunks and answers the bytes dropUnread gives", async () => {
    const served = {
      metadata: { name: "db", managedFields: [{ manager: "kubectl", fieldsV1: { "f:spec": {} } }] },
      status: { conditions: [] },
      spec: { x: "y" },
    };
    const groups = new Map([["TailnetEgress.tailnet.internal/v1alpha1", []]]);
    const objects: Record<string, unknown> = {};
    for (let i = 0; Object.keys(objects).length * 200 < STREAM_DROP_BYTES * 1.5; i++) objects[`ns/o${i}`] = served;
    const text = JSON.stringify({ related: { "TailnetEgress.tailnet.internal/v1alpha1": objects } });
    const raw = Buffer.from(text);
    assert.ok(raw.length > STREAM_DROP_BYTES);
    const chunks: Buffer[] = [];
    for (let i = 0; i < raw.length; i += 1000 + (i % 7)) chunks.push(raw.subarray(i, i + 1000 + (i % 7)));
    const got = await readBody({ "content-length": String(raw.length) }, Readable.from(chunks), raw.length, "x", {
      drop: { relatedStatus: groups },
    });
    assert.deepEqual(got, dropUnread(Buffer.from(raw), groups));
    const parsed = JSON.parse(got.toString("utf8")) as { related: Record<string, Record<string, typeof served>> };
    assert.deepEqual(parsed.related["TailnetEgress.tailnet.internal/v1alpha1"]["ns/o0"], {
      metadata: { name: "db" },
      spec: { x: "y" },
    });
  });

  it(
    "readBody holds what is kept, not the whole body: a body larger than the budget whose kept part fits is read",
    readBodyHoldsOnlyKept,
  );

  it("leaves malformed bodies to JSON.parse: 400 body: invalid JSON", () => {
    for (const text of ['{"managedFields":[', '{"a":1 "managedFields":[]}', '{"managedFields":', "{"]) {
      assert.throws(
        () => parseHookBody(Buffer.from(text)),
        (e: unknown) => e instanceof BodyError && e.message === "body: invalid JSON",
        text,
      );
    }
  });
  it("refuses __proto__ and constructor.prototype keys as fastify's own parser does", () => {
    for (const [text, key] of [
      ['{"parent":{"__proto__":{"x":1}}}', "__proto__"],
      ['{"a":{"\\u005f_proto__":1}}', "__proto__"],
      ['{"constructor":{"prototype":{"x":1}}}', "constructor.prototype"],
    ]) {
      assert.throws(
        () => parseHookBody(Buffer.from(text)),
        (e: unknown) => e instanceof BodyError && e.message === `body: a ${key} key is not allowed`,
        text,
      );
    }
    assert.deepEqual(parseHookBody(Buffer.from('{"note":"\\"__proto__\\": is text","constructor":"x"}')), {
      note: '"__proto__": is text',
      constructor: "x",
    });
  });
});
