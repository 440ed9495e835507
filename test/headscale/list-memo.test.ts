import assert from "node:assert/strict";
import { describe, test } from "node:test";
import fc from "fast-check";
import { ByteRope } from "../../src/headscale/byte-rope.js";
import { createHeadscaleClient } from "../../src/headscale/client.js";
import { ReusingListDecoder, rememberList, reuseList } from "../../src/headscale/list-memo.js";
import { decodePreAuthKey } from "../../src/headscale/types.js";
import { useFakeHeadscale } from "../fakes/headscale/index.js";

const item = (id: number) => ({
  user: null,
  id: String(id),
  key: `hskey-auth-${String(id).padStart(12, "0")}-***`,
  reusable: true,
  ephemeral: true,
  used: false,
  expiration: "2026-12-01T00:00:00Z",
  createdAt: "2026-11-01T00:00:00Z",
  aclTags: [`tag:k${id}`],
});
const answer = (ids: number[]) => JSON.stringify({ preAuthKeys: ids.map(item) });
/** An answer as the socket hands it over: in pieces (here of 7 bytes, so every comparison crosses their edges). */
const piecesOf = (b: Buffer, size = 7) => {
  const pieces: Buffer[] = [];
  for (let i = 0; i < b.length; i += size) pieces.push(b.subarray(i, i + size));
  return new ByteRope(pieces);
};
const bytes = (text: string) => piecesOf(Buffer.from(text));
const decodeAll = (text: string) =>
  (JSON.parse(text) as { preAuthKeys: unknown[] }).preAuthKeys.map((k) => decodePreAuthKey(k));

function memoOf(ids: number[]) {
  const text = answer(ids);
  const body = JSON.parse(text);
  return rememberList(bytes(text), "preAuthKeys", body, decodeAll(text));
}

describe("list answers decoded by reusing the previous one", () => {
  test("items appended: the old items are reused as they are, the new ones decoded; equal to a whole decode", () => {
    for (const before of [[], [1], [1, 2, 3]]) {
      const memo = memoOf(before);
      assert.ok(memo);
      const text = answer([...before, 4, 5]);
      const items = reuseList(memo, bytes(text), decodePreAuthKey);
      assert.deepEqual(items, decodeAll(text), `from ${before.length} items`);
      for (const [i, old] of memo.items.entries()) assert.equal(items?.[i], old, "the same object");
    }
  });

  test("anything but an append is decoded whole", () => {
    const memo = memoOf([1, 2, 3]);
    const changed = JSON.stringify({ preAuthKeys: [item(1), { ...item(2), used: true }, item(3), item(4)] });
    assert.equal(reuseList(memo, bytes(changed), decodePreAuthKey), undefined, "an item changed in place");
    assert.equal(reuseList(memo, bytes(answer([1, 2])), decodePreAuthKey), undefined, "an item gone");
    const base = answer([1, 2, 3]);
    const sneaky = `${base.slice(0, -2)},${JSON.stringify(item(4))}],"other":[${JSON.stringify(item(5))}]}`;
    assert.equal(reuseList(memo, bytes(sneaky), decodePreAuthKey), undefined, "a second list after the first");
    assert.equal(reuseList(memo, bytes(`${base.slice(0, -2)},]}`), decodePreAuthKey), undefined, "a trailing comma");
    const two = JSON.stringify({ preAuthKeys: [item(1)], more: [] });
    assert.equal(rememberList(bytes(two), "preAuthKeys", JSON.parse(two), []), undefined, "two keys: never remembered");
  });

  test("the client's key list after mints decodes only the new keys (the old ones are the same objects)", async (t) => {
    const fake = await useFakeHeadscale(t);
    const client = createHeadscaleClient({ url: fake.url, apiKey: fake.apiKey, timeoutMs: 5000 });
    t.after(() => client.close());
    const mint = (tag: string) =>
      client.preAuthKeys.create({
        aclTags: [tag],
        reusable: true,
        ephemeral: true,
        expiration: new Date(Date.now() + 3600_000),
      });
    await mint("tag:a");
    const first = await client.preAuthKeys.list();
    await mint("tag:b");
    await mint("tag:c");
    const second = await client.preAuthKeys.list();
    assert.deepEqual(
      second.map((k) => k.aclTags[0]),
      ["tag:a", "tag:b", "tag:c"],
    );
    assert.equal(second[0], first[0], "the first key was not decoded again");
    await client.preAuthKeys.expire(second[1].id);
    const third = await client.preAuthKeys.list();
    assert.notEqual(third[1].expiration, second[1].expiration, "a key changed in place is read as it is now");
    const decoder = new ReusingListDecoder("preAuthKeys", decodePreAuthKey);
    assert.equal(decoder.tryReuse(bytes(answer([1]))), undefined, "nothing remembered yet");
  });

  test("the caller's array is not copied, and what its holder appends (a cache's own mints) is never the text's", () => {
    const decoder = new ReusingListDecoder("preAuthKeys", decodePreAuthKey);
    const first = decodeAll(answer([1, 2]));
    decoder.remember(bytes(answer([1, 2])), JSON.parse(answer([1, 2])), first);
    first.push(decodePreAuthKey(item(9)));
    const second = decoder.tryReuse(bytes(answer([1, 2, 3])));
    assert.deepEqual(second, decodeAll(answer([1, 2, 3])), "the appended key 9 is not in the next answer's items");
    assert.equal(second?.[0], first[0], "the old items are reused");
    second?.push(decodePreAuthKey(item(8)));
    assert.deepEqual(decoder.tryReuse(bytes(answer([1, 2, 3]))), decodeAll(answer([1, 2, 3])), "the same bytes again");
    const third = decoder.tryReuse(bytes(answer([1, 2, 3, 4])));
    assert.deepEqual(third, decodeAll(answer([1, 2, 3, 4])));
    assert.notEqual(third, second, "every read is an array of its own");
  });

  test("a long run of reads that add keys: each equal to the whole decode, the memo's pieces bounded", () => {
    const decoder = new ReusingListDecoder("preAuthKeys", decodePreAuthKey);
    const ids = [1, 2];
    decoder.remember(bytes(answer(ids)), JSON.parse(answer(ids)), decodeAll(answer(ids)));
    for (let n = 3; n < 200; n++) {
      ids.push(n);
      const text = answer(ids);
      assert.deepEqual(decoder.tryReuse(piecesOf(Buffer.from(text), 64 + (n % 50))), decodeAll(text), `read ${n}`);
      const memo = (decoder as unknown as { memo: { bytes: ByteRope } }).memo;
      assert.equal(memo.bytes.toString("utf8"), text, "the memo's bytes are the answer's");
      assert.ok(memo.bytes.pieces.length <= 65, `${memo.bytes.pieces.length} pieces`);
    }
  });

  test("differential: a reused answer is exactly the whole decode of its bytes, across spacing, non-ASCII and broken UTF-8", () => {
    const tag = fc.string({ unit: fc.constantFrom("a", "é", "€", "😀", '"', "\\", "]", ","), maxLength: 6 });
    const key = fc.record({ id: fc.nat(999).map(String), tag });
    const space = fc.constantFrom("", " ", "\n", "\t ", "\r\n");
    const render = (keys: { id: string; tag: string }[], s: string) =>
      `{${s}"preAuthKeys"${s}:${s}[${keys.map((k) => JSON.stringify({ ...item(1), id: k.id, aclTags: [k.tag] })).join(`${s},`)}${s}]${s}}${s}`;
    // what undici's text() gives: UTF-8, a leading byte order mark skipped, broken sequences replaced
    const wholeDecode = (b: Buffer) =>
      (JSON.parse(new TextDecoder().decode(b)) as { preAuthKeys: unknown[] }).preAuthKeys.map((k) =>
        decodePreAuthKey(k),
      );
    fc.assert(
      fc.property(
        fc.array(key, { maxLength: 4 }),
        fc.array(key, { maxLength: 3 }),
        space,
        space,
        fc.constantFrom("none", "bom", "flip", "cut", "junk"),
        fc.nat(),
        (before, added, s1, s2, change, at) => {
          const oldBytes = Buffer.from(render(before, s1));
          const memo = rememberList(
            piecesOf(oldBytes, 1 + (at % 13)),
            "preAuthKeys",
            JSON.parse(oldBytes.toString()),
            wholeDecode(oldBytes),
          );
          assert.ok(memo);
          let next = Buffer.from(render([...before, ...added], s2));
          if (change === "bom") next = Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), next]);
          if (change === "flip" && next.length) next[at % next.length] ^= 0x80;
          if (change === "cut") next = next.subarray(0, at % (next.length + 1));
          if (change === "junk") next = Buffer.concat([next.subarray(0, -1), Buffer.from([0xc3]), next.subarray(-1)]);
          const reused = reuseList(memo, piecesOf(next, 1 + (at % 11)), decodePreAuthKey);
          let whole: unknown;
          try {
            whole = wholeDecode(next);
          } catch {
            whole = undefined;
          }
          if (reused !== undefined) assert.deepEqual(reused, whole);
          // compact JSON, as grpc-gateway writes it: an append is always reused
          if (change === "none" && s1 === "" && s2 === "" && added.length > 0) assert.ok(reused, "an append is reused");
        },
      ),
      { numRuns: 2000 },
    );
  });
});
