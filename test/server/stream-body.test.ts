import assert from "node:assert/strict";
import { Readable } from "node:stream";
import { describe, it } from "node:test";
import fc from "fast-check";
import { dropUnread, parseHookText, type RelatedStatusReads } from "../../src/server/body.js";
import { ByteBudget, RESERVE_BYTES } from "../../src/server/limits.js";
import { readHookBody } from "../../src/server/read-body.js";

const GROUPS: RelatedStatusReads = new Map([
  ["TailnetEgress.tailnet.internal/v1alpha1", ["tag"]],
  ["TailnetSite.tailnet.internal/v1alpha1", []],
]);

type Outcome = { value: unknown } | { status: number; message: string };

/** The streamed parse: no Content-Length (so the body is streamed whatever its size), the bytes in the chunks given. */
async function streamed(bytes: Buffer, cuts: number[], groups?: RelatedStatusReads): Promise<Outcome> {
  const chunks: Buffer[] = [];
  let at = 0;
  for (const c of [...cuts].sort((a, b) => a - b)) {
    if (c > at && c < bytes.length) chunks.push(bytes.subarray(at, c));
    if (c > at && c < bytes.length) at = c;
  }
  chunks.push(bytes.subarray(at));
  try {
    return { value: await readHookBody({}, Readable.from(chunks), 2 ** 30, "x", { drop: { relatedStatus: groups } }) };
  } catch (e) {
    const err = e as Error & { statusCode?: number };
    return { status: err.statusCode ?? 500, message: err.message };
  }
}

/** What reading the body whole gives: JSON.parse of the body without its unread members, or 400. */
function whole(bytes: Buffer, groups?: RelatedStatusReads): Outcome {
  try {
    return { value: parseHookText(dropUnread(Buffer.from(bytes), groups).toString("utf8")) };
  } catch (e) {
    const err = e as Error & { statusCode?: number };
    return { status: err.statusCode ?? 500, message: err.message };
  }
}

function sameOutcome(got: Outcome, want: Outcome, text: string): void {
  if ("value" in want) {
    assert.ok("value" in got, `${text}: ${JSON.stringify(got)}`);
    assert.deepStrictEqual(got.value, want.value, text);
    // deepStrictEqual ignores key order; JSON.parse's order (first key's place) must hold too
    assert.equal(JSON.stringify(got.value), JSON.stringify(want.value), text);
  } else {
    assert.ok("status" in got, `${text}: parsed to ${JSON.stringify((got as { value: unknown }).value)}`);
    assert.equal(got.status, 400, `${text}: ${got.message}`);
    assert.match(got.message, /^body: /);
  }
}

// A JSON text built with the freedoms JSON.parse allows: whitespace anywhere between tokens, any
// character escaped, numbers in every form, duplicate keys. Values are trees of pairs, not objects,
// so duplicates survive until the text.
type Tree = { pairs: [string, Tree][] } | { items: Tree[] } | { scalar: string; str?: string };
type Style = { ws: number[]; esc: number[]; n: number };

const WS = ["", " ", "\n", "\t", "\r\n  "];
function pick<T>(xs: T[], s: Style, from: number[]): T {
  s.n++;
  return xs[from.length ? from[s.n % from.length] % xs.length : 0];
}
function quote(str: string, s: Style): string {
  let out = '"';
  for (const ch of str) {
    const code = ch.codePointAt(0) as number;
    const e = pick([0, 0, 0, 1, 2], s, s.esc);
    if (ch === '"' || ch === "\\" || code < 0x20 || (code >= 0xd800 && code <= 0xdfff))
      out += JSON.stringify(ch).slice(1, -1);
    else if (e === 1 && code < 0x10000) out += `\\u${code.toString(16).padStart(4, pick(["0"], s, s.esc))}`;
    else if (e === 1) out += JSON.stringify(ch).slice(1, -1);
    else if (e === 2 && ch === "/") out += "\\/";
    else out += ch;
  }
  return `${out}"`;
}
const scalar = fc
  .oneof(
    fc.constantFrom(
      "true",
      "false",
      "null",
      "0",
      "-0",
      "1e5",
      "-1.5E-3",
      "1.0E+2",
      "123456789012345678901234567890",
      "0.1",
    ),
    fc.double({ noNaN: true, noDefaultInfinity: true }).map((d) => JSON.stringify(d)),
    fc
      .oneof(
        fc.string({ unit: "binary", maxLength: 6 }),
        fc.constantFrom("\ud800", "x\udc00", "😀", "é", "\u2028", 'a\\b"c'),
      )
      .map((str) => ({ str })),
  )
  .map((x) => (typeof x === "string" ? { scalar: x } : { scalar: "", str: x.str }));

const key = fc.oneof(
  fc.constantFrom("status", "spec", "metadata", "tag", "name", "a", "constructor", "prototype"),
  fc.string({ unit: "binary", maxLength: 4 }),
);
const { tree } = fc.letrec<{ tree: Tree }>((tie) => ({
  tree: fc.oneof(
    { depthSize: "small", withCrossShrink: true },
    scalar as fc.Arbitrary<Tree>,
    fc.array(tie("tree"), { maxLength: 3 }).map((items) => ({ items })),
    fc.array(fc.tuple(key, tie("tree")), { maxLength: 4 }).map((pairs) => ({ pairs })),
  ),
}));
const objectTree = fc.array(fc.tuple(key, tree), { maxLength: 4 }).map((pairs): Tree => ({ pairs }));
const groupKey = fc.constantFrom(...GROUPS.keys(), "Secret.v1", "ConfigMap.v1", "");
// a name maps to an object mostly (what is cut), sometimes to something else (kept in the rest)
const named = fc.array(fc.tuple(fc.string({ maxLength: 5 }), fc.oneof({ weight: 4, arbitrary: objectTree }, tree)), {
  maxLength: 4,
});
const section = fc.oneof(
  {
    weight: 6,
    arbitrary: fc
      .array(fc.tuple(groupKey, fc.oneof({ weight: 5, arbitrary: named.map((pairs): Tree => ({ pairs })) }, tree)), {
        maxLength: 3,
      })
      .map((pairs): Tree => ({ pairs })),
  },
  tree,
);
const topKey = fc.constantFrom("related", "children", "parent", "controller", "finalizing", "rel\\u0061ted");
const body = fc.oneof(
  {
    weight: 9,
    arbitrary: fc.array(fc.tuple(topKey, fc.oneof(section, tree)), { maxLength: 5 }).map((pairs): Tree => ({ pairs })),
  },
  tree,
);

/** The tree as a JSON text in the style given; `rel\u0061ted` stays an escaped key. */
function write(t: Tree, s: Style): string {
  if ("scalar" in t) {
    const str = t.str;
    return str === undefined ? t.scalar : quote(str, s);
  }
  const w = () => pick(WS, s, s.ws);
  if ("items" in t) return `[${w()}${t.items.map((x) => `${w()}${write(x, s)}${w()}`).join(",")}${w()}]`;
  return `{${w()}${t.pairs
    .map(
      ([k, v]) => `${w()}${k === "rel\\u0061ted" ? '"rel\\u0061ted"' : quote(k, s)}${w()}:${w()}${write(v, s)}${w()}`,
    )
    .join(",")}${w()}}`;
}

const style = fc.record({
  ws: fc.array(fc.nat(), { maxLength: 7 }),
  esc: fc.array(fc.nat(), { maxLength: 5 }),
  n: fc.constant(0),
});

describe("a large hook body parsed as it arrives gives what JSON.parse of the whole body gives", () => {
  it("on generated bodies, cut into chunks anywhere (property)", async () => {
    await fc.assert(
      fc.asyncProperty(body, style, fc.array(fc.nat(), { maxLength: 12 }), async (t, s, cuts) => {
        const bytes = Buffer.from(write(t, s));
        const text = bytes.toString("utf8");
        const at = cuts.map((c) => c % (bytes.length + 1));
        sameOutcome(await streamed(bytes, at), whole(bytes), text);
        sameOutcome(await streamed(bytes, at, GROUPS), whole(bytes, GROUPS), text);
      }),
      { numRuns: 1500 },
    );
  });

  it("equals plain JSON.parse when nothing is droppable (property)", async () => {
    await fc.assert(
      fc.asyncProperty(body, style, fc.array(fc.nat(), { maxLength: 6 }), async (t, s, cuts) => {
        const text = write(t, s);
        fc.pre(
          !text.includes("managedFields") && !text.includes("last-applied") && !/__proto__|constructor|\\u/.test(text),
        );
        const bytes = Buffer.from(text);
        let want: Outcome;
        try {
          want = { value: JSON.parse(text) };
        } catch {
          want = { status: 400, message: "body: invalid JSON" };
        }
        if (text.trim() === "") want = { status: 400, message: "body: empty" };
        sameOutcome(
          await streamed(
            bytes,
            cuts.map((c) => c % (bytes.length + 1)),
          ),
          want,
          text,
        );
      }),
      { numRuns: 800 },
    );
  });

  it("malformed bodies (a byte cut, changed or added anywhere) are a 400 naming the problem, never a 5xx or a hang", async () => {
    const valid = fc.tuple(body, style).map(([t, s]) => write(t, s));
    await fc.assert(
      fc.asyncProperty(
        valid,
        fc.nat(),
        fc.constantFrom("", "{", "}", "]", "[", ",", '"', "\\", ":", "x", "\u0001"),
        fc.array(fc.nat(), { maxLength: 5 }),
        async (t, at, junk, cuts) => {
          const i = at % (t.length + 1);
          const bytes = Buffer.from(t.slice(0, i) + junk + t.slice(i + (junk === "" ? 1 : 0)));
          const c = cuts.map((x) => x % (bytes.length + 1));
          sameOutcome(await streamed(bytes, c, GROUPS), whole(bytes, GROUPS), bytes.toString());
        },
      ),
      { numRuns: 1500 },
    );
  });
});

/** Small bodies with edges JSON.parse must agree on, each cut at every byte (two chunks) and byte by byte. */
const CORPUS = [
  '{"related":{"G":{"a":{"x":1},"a":{"y":2}}}}',
  '{"related":{"G":{"a":{"x":1},"a":3}}}',
  '{"related":{"G":{"a":3,"a":{"x":1}}}}',
  '{"related":{"G":{"a":{"x":1}}},"related":{"G":{"b":{"y":2}}}}',
  '{"related":{"G":{"a":{"x":1}}},"related":5}',
  '{"rel\\u0061ted":{"G":{"a":{"x":{"y":[1,{"z":"}"}]}}}}}',
  '{"children":{"Secret.v1":{"ns/s":{"data":{"k":"\\"}{\\\\"}}}},"parent":{"spec":{}}}',
  ' \n{ "related" : { "G" : { "a" : { } , "b" : [ { } ] , "c" : "{" } } } \r\n',
  '{"related":{"G":{"\\ud83d\\ude00":{"s":"\\ud800","t":"😀","u":"\\u2028"}}}}',
  '{"related":{"G":{"n":{"a":-0,"b":1E400,"c":-1e-400,"d":12345678901234567890,"e":0.1e1}}}}',
  '{"related":{"G":{"a":{"managedFields":[{"x":1}],"metadata":{"managedFields":{}}}}}}',
  '{"related":{"TailnetEgress.tailnet.internal/v1alpha1":{"a":{"status":{"conditions":[],"tag":"t","x":{"tag":1}}}}}}',
  '{"related":{"TailnetSite.tailnet.internal/v1alpha1":{"a":{"status":{"x":1},"spec":{}}}}}',
  '{"related":{"G":{"1":{"a":1},"0":{"b":2},"x":{"c":3}}},"0":1}',
  '{"related":[{"G":{"a":{"x":1}}}]}',
  '[{"related":{"G":{"a":{"x":1}}}}]',
  '{"related":{"G":[{"a":{"x":1}}]}}',
  '{"related":{"G":{"constructor":{"prototype":{}}}}}',
  '{"related":{"G":{"a":{"__proto__":{"x":1}}}}}',
  '{"related":{"G":{"a":{"constructor":{"prototype":1}}}}}',
  '{"related":{"constructor":{"prototype":{"x":1}}}}',
  '{"related":{"G":{"a":{"x":1}}}',
  '{"related":{"G":{"a":{"x":1}}}}}',
  '{"related":{"G":{"a":{"x":1}}}} x',
  '{"related":{"G":{"a":{"x":1]}}}',
  '{"related":{"G":{"a":{"x":"\u0001"}}}}',
  '{"related":{"G":{"a":{"x":1,}}}}',
  '{"related":{"G":{"a":{"x":tru}}}}',
  '{"related":{"G":{"a":{"x":"\\q"}}}}',
  "",
  "   ",
  "{}",
  "null",
  '"x"',
];

describe("a streamed hook body: corpus of edges, cut at every byte", () => {
  it("agrees with reading the whole body on every edge and every cut", async () => {
    for (const text of CORPUS) {
      const bytes = Buffer.from(text);
      const want = whole(bytes, GROUPS);
      const every = Array.from({ length: bytes.length }, (_, i) => i);
      sameOutcome(await streamed(bytes, every, GROUPS), want, `${text} (byte by byte)`);
      for (let i = 0; i <= bytes.length; i++)
        sameOutcome(await streamed(bytes, [i], GROUPS), want, `${text} (cut at ${i})`);
    }
  });

  it("names where the JSON is invalid", async () => {
    const bad = await streamed(Buffer.from('{"related":{"G":{"ns/db":{"x":1,}}}}'), []);
    assert.deepEqual(bad, { status: 400, message: 'body: invalid JSON in related["G"]["ns/db"]' });
    const rest = await streamed(Buffer.from('{"parent":{"x":1,},"related":{}}'), []);
    assert.deepEqual(rest, { status: 400, message: "body: invalid JSON (outside the related and children objects)" });
    const poison = await streamed(Buffer.from('{"related":{"G":{"a":{"__proto__":{}}}}}'), []);
    assert.deepEqual(poison, { status: 400, message: 'body: a __proto__ key is not allowed in related["G"]["a"]' });
  });
});

describe("a streamed hook body holds the parsed objects, not the raw body", () => {
  it("a body far over the budget whose kept part fits is parsed through one lease; one whose kept part does not is 503", async () => {
    const served = {
      metadata: {
        name: "db",
        managedFields: [{ manager: "kubectl", fieldsV1: { "f:spec": { "f:x": "y".repeat(400) } } }],
      },
      spec: { x: "y" },
      status: { tag: "tag:db", conditions: [{ type: "Ready", message: "m".repeat(600) }] },
    };
    const objects: Record<string, unknown> = {};
    for (let i = 0; i < 6000; i++) objects[`ns/o${i}`] = served;
    const raw = Buffer.from(
      JSON.stringify({ parent: { spec: {} }, related: { "TailnetEgress.tailnet.internal/v1alpha1": objects } }),
    );
    const kept = dropUnread(Buffer.from(raw), GROUPS).length;
    assert.ok(raw.length > 6 * 2 ** 20 && kept < 2 ** 20, `${raw.length} bytes, ${kept} kept`);
    const chunks: Buffer[] = [];
    for (let i = 0; i < raw.length; i += 65536) chunks.push(raw.subarray(i, i + 65536));
    const headers = { "content-length": String(raw.length) };
    // the kept text, the rest's buffer and one chunk in flight: 2 MiB of pool is enough for 6 MiB of body
    const budget = new ByteBudget(RESERVE_BYTES + 2 * 2 ** 20, 1);
    const lease = budget.lease();
    const got = await readHookBody(headers, Readable.from(chunks), raw.length, "x", {
      drop: { relatedStatus: GROUPS },
      lease,
    });
    assert.deepStrictEqual(got, JSON.parse(dropUnread(Buffer.from(raw), GROUPS).toString()));
    // the objects' kept text and 64 bytes each (the rest's buffer and the bytes in flight were given back)
    assert.ok(
      lease.held > 0.8 * kept && lease.held <= kept + 6000 * 64,
      `lease holds ${lease.held} for ${kept} kept bytes`,
    );
    lease.close();
    const small = new ByteBudget(RESERVE_BYTES + kept / 2, 1);
    await assert.rejects(
      readHookBody(headers, Readable.from(chunks), raw.length, "x", {
        drop: { relatedStatus: GROUPS },
        lease: small.lease(),
      }),
      (e: Error & { statusCode?: number }) => e.statusCode === 503 && /at the budget/.test(e.message),
    );
    assert.equal(small.free, kept / 2, "a refused body returns every byte it drew");
  });
});
