/**
 * The atomic write of the records file (src/records/file.ts) and the state it keeps: a reader racing the
 * writer only ever sees a whole old or a whole new file, nothing is left behind, and a failed write keeps the
 * previous file.
 */
import assert from "node:assert/strict";
import { mkdir, mkdtemp, readdir, readFile, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { parseState, stateText, writeAtomic } from "../../src/records/file.js";

let dir: string;
before(async () => {
  dir = await mkdtemp(join(tmpdir(), "records-file-"));
});
after(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe("writeAtomic", () => {
  it("replaces the file with a new inode and leaves no temporary file", async () => {
    const path = join(dir, "records.json");
    await writeFile(path, "[]\n");
    const before = (await stat(path)).ino;
    await writeAtomic(path, '[{"name":"a.ts.test","type":"A","value":"100.64.0.1"}]\n');
    assert.equal(await readFile(path, "utf8"), '[{"name":"a.ts.test","type":"A","value":"100.64.0.1"}]\n');
    assert.notEqual((await stat(path)).ino, before, "a rename, not an in-place write");
    assert.equal((await stat(path)).mode & 0o777, 0o644);
    assert.deepEqual(await readdir(dir), ["records.json"]);
  });

  it("a reader racing 200 writes of 256 KiB files only ever reads one of the whole texts", async () => {
    const path = join(dir, "race.json");
    const texts = ["a", "b", "c"].map((c) => `${JSON.stringify(c.repeat(256 * 1024))}\n`);
    await writeAtomic(path, texts[0]);
    let stop = false;
    let reads = 0;
    const reader = (async () => {
      while (!stop) {
        const t = await readFile(path, "utf8");
        assert.ok(texts.includes(t), `a torn read of ${t.length} bytes`);
        reads++;
      }
    })();
    for (let i = 0; i < 200; i++) await writeAtomic(path, texts[i % 3]);
    stop = true;
    await reader;
    assert.ok(reads > 0);
    assert.deepEqual(
      (await readdir(dir)).filter((f) => f.startsWith(".race")),
      [],
    );
  });

  it("a write that cannot happen throws and keeps the previous file", async () => {
    const sub = join(dir, "blocked");
    await mkdir(sub);
    const path = join(sub, "records.json");
    await writeAtomic(path, "[]\n");
    // the target is now a folder: rename(file, non-empty folder) fails
    await rm(path);
    await mkdir(path);
    await writeFile(join(path, "x"), "");
    await assert.rejects(writeAtomic(path, "[1]\n"), /EISDIR|ENOTEMPTY|EEXIST/);
    assert.deepEqual((await readdir(sub)).sort(), ["records.json"]);
  });
});

describe("state", () => {
  it("round-trips, sorted, and anything else reads as the empty state", () => {
    const state = {
      sources: {
        b: {
          readAt: "2026-12-05T10:00:00.000Z",
          records: [{ name: "x.ts.test", type: "A" as const, value: "100.64.0.2" }],
        },
        a: { readAt: "2026-12-05T10:00:00.000Z", records: [] },
      },
      owners: { "x.ts.test": { source: "b", since: "2026-12-05T10:00:00.000Z" } },
    };
    const text = stateText(state);
    assert.deepEqual(Object.keys(JSON.parse(text).sources), ["a", "b"]);
    assert.deepEqual(parseState(text), state);
    assert.equal(stateText(parseState(text)), text);
    for (const bad of [undefined, "", "{", "[]", '{"sources":[]}', '{"sources":{},"owners":null}']) {
      assert.deepEqual(parseState(bad), { sources: {}, owners: {} }, String(bad));
    }
  });
});
