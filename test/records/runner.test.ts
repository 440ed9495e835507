/**
 * The records sidecar's rounds (src/records/runner.ts) with scripted sources: both clusters' names in one
 * file; a failing source keeps its last good records (also across a restart, from the state file); a name
 * another source holds is refused with one log line and a metric; an unchanged round writes nothing.
 */
import assert from "node:assert/strict";
import { mkdtemp, readFile, rm, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, it } from "node:test";
import { parseRecordsConfig, type RecordsConfig } from "../../src/records/config.js";
import { jsonLogger } from "../../src/records/log.js";
import { createRecordsMetrics } from "../../src/records/metrics.js";
import { createRunner } from "../../src/records/runner.js";
import { SourceError, type SourceReader } from "../../src/records/sources.js";

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), "records-runner-"));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

const rec = (name: string, value: string) => ({ name, type: "A", value });

/** A source whose next answer the test sets: a list, or an error message. */
class Scripted implements SourceReader {
  next: unknown[] | string = [];
  async read(): Promise<unknown[]> {
    if (typeof this.next === "string") throw new SourceError(this.next);
    return this.next;
  }
}

function config(extra: Record<string, unknown> = {}, claimA = ["*.a.ts.test", "shared.ts.test"]): RecordsConfig {
  return parseRecordsConfig({
    output: join(dir, "records.json"),
    baseDomain: "ts.test",
    sources: [
      { name: "cluster-a", names: claimA, file: "/unused/a.json" },
      { name: "cluster-b", names: ["*.b.ts.test", "shared.ts.test"], file: "/unused/b.json" },
    ],
    ...extra,
  });
}

async function world(cfg = config()) {
  const a = new Scripted();
  const b = new Scripted();
  const lines: Record<string, unknown>[] = [];
  const metrics = createRecordsMetrics(["cluster-a", "cluster-b"], false);
  const log = jsonLogger("debug", (l) => lines.push(JSON.parse(l)));
  const runner = await createRunner(cfg, { log, metrics, readers: { "cluster-a": a, "cluster-b": b } });
  const file = async () => JSON.parse(await readFile(cfg.output, "utf8")) as unknown[];
  const metric = async (name: string) =>
    (await metrics.registry.getSingleMetricAsString(name)).split("\n").filter((l) => !l.startsWith("#"));
  return { a, b, lines, metrics, runner, file, metric, cfg };
}

describe("records runner", () => {
  it("writes both sources' names once, then leaves an unchanged file alone", async () => {
    const w = await world();
    w.a.next = [rec("web.a.ts.test", "100.64.0.2")];
    w.b.next = [rec("api.b.ts.test", "100.64.0.3")];
    assert.equal(w.runner.ready(), false);
    const r = await w.runner.round();
    assert.deepEqual(r, {
      failed: [],
      conflicts: [],
      wrote: true,
      records: [rec("api.b.ts.test", "100.64.0.3"), rec("web.a.ts.test", "100.64.0.2")],
    });
    assert.equal(w.runner.ready(), true);
    assert.deepEqual(await w.file(), r.records);
    const ino = (await stat(w.cfg.output)).ino;
    assert.equal((await w.runner.round()).wrote, false);
    assert.equal((await stat(w.cfg.output)).ino, ino);
    assert.deepEqual(await w.metric("tailnet_records_file_writes_total"), ["tailnet_records_file_writes_total 1"]);
  });

  it("a failing source keeps its last good records; the failure is logged once and counted", async () => {
    const w = await world();
    w.a.next = [rec("web.a.ts.test", "100.64.0.2")];
    w.b.next = [rec("api.b.ts.test", "100.64.0.3")];
    await w.runner.round();
    w.b.next = "GET configmap tailnet-system/tailnet-home-dns-records: connect ECONNREFUSED";
    w.a.next = [rec("web.a.ts.test", "100.64.0.2"), rec("new.a.ts.test", "100.64.0.4")];
    const r1 = await w.runner.round();
    const r2 = await w.runner.round();
    assert.deepEqual(r1.failed, ["cluster-b"]);
    assert.equal(r2.wrote, false);
    assert.deepEqual(
      (await w.file()).map((x) => (x as { name: string }).name),
      ["api.b.ts.test", "new.a.ts.test", "web.a.ts.test"],
    );
    assert.equal(w.lines.filter((l) => l.msg === "source read failed; its last good records stay").length, 1);
    assert.deepEqual(
      w.lines.find((l) => l.msg === "source read failed; its last good records stay"),
      {
        ...w.lines.find((l) => l.msg === "source read failed; its last good records stay"),
        source: "cluster-b",
        kept: 1,
      },
    );
    assert.ok(
      (await w.metric("tailnet_records_source_up")).includes('tailnet_records_source_up{source="cluster-b"} 0'),
    );
    assert.ok(
      (await w.metric("tailnet_records_source_read_errors_total")).includes(
        'tailnet_records_source_read_errors_total{source="cluster-b"} 2',
      ),
    );
    w.b.next = [];
    await w.runner.round();
    assert.deepEqual(
      (await w.file()).map((x) => (x as { name: string }).name),
      ["new.a.ts.test", "web.a.ts.test"],
    );
    assert.ok(w.lines.some((l) => l.msg === "source read again" && l.source === "cluster-b"));
  });

  it("after a restart with a source down, its names come back from the state file, not from nowhere", async () => {
    const w1 = await world();
    w1.a.next = [rec("web.a.ts.test", "100.64.0.2")];
    w1.b.next = [rec("api.b.ts.test", "100.64.0.3")];
    await w1.runner.round();
    const before = await readFile(w1.cfg.output, "utf8");
    const w2 = await world();
    w2.a.next = [rec("web.a.ts.test", "100.64.0.2")];
    w2.b.next = "unreachable";
    const r = await w2.runner.round();
    assert.equal(r.wrote, false);
    assert.equal(w2.runner.ready(), true, "the file in place is the one to keep");
    assert.equal(await readFile(w2.cfg.output, "utf8"), before);
  });

  it("a first start with a source down writes the others' names and is ready", async () => {
    const w = await world();
    w.a.next = [rec("web.a.ts.test", "100.64.0.2")];
    w.b.next = "unreachable";
    await w.runner.round();
    assert.deepEqual(await w.file(), [rec("web.a.ts.test", "100.64.0.2")]);
    assert.equal(w.runner.ready(), true);
  });

  it("a name the other source holds is refused with one log line and a metric; holding survives a restart", async () => {
    const w = await world();
    w.b.next = [rec("shared.ts.test", "100.64.0.3")];
    w.a.next = [];
    await w.runner.round();
    w.a.next = [rec("shared.ts.test", "100.64.0.66"), rec("web.a.ts.test", "100.64.0.2")];
    await w.runner.round();
    await w.runner.round();
    assert.deepEqual(await w.file(), [rec("shared.ts.test", "100.64.0.3"), rec("web.a.ts.test", "100.64.0.2")]);
    const logged = w.lines.filter((l) => l.msg === "name claimed by two sources; its first holder keeps it");
    assert.equal(logged.length, 1);
    assert.equal(logged[0].name, "shared.ts.test");
    assert.equal(logged[0].holder, "cluster-b");
    assert.equal(logged[0].refused, "cluster-a");
    assert.ok(
      (await w.metric("tailnet_records_conflicts")).includes('tailnet_records_conflicts{source="cluster-a"} 1'),
    );
    // cluster-a is listed first, yet after a restart cluster-b still holds the name (owners in the state file)
    const w2 = await world();
    w2.a.next = [rec("shared.ts.test", "100.64.0.66")];
    w2.b.next = [rec("shared.ts.test", "100.64.0.3")];
    assert.deepEqual((await w2.runner.round()).records, [rec("shared.ts.test", "100.64.0.3")]);
  });

  it("records outside the claim are refused with their reason; the rest is kept", async () => {
    const w = await world();
    w.a.next = [
      rec("web.a.ts.test", "100.64.0.2"),
      rec("api.b.ts.test", "100.64.0.66"),
      rec("db-1.ts.test", "100.64.0.66"),
      rec("x.a.ts.test", "10.0.0.1"),
    ];
    w.b.next = [];
    const r = await w.runner.round();
    assert.deepEqual(r.records, [rec("web.a.ts.test", "100.64.0.2")]);
    const refused = await w.metric("tailnet_records_refused");
    assert.ok(
      refused.includes('tailnet_records_refused{source="cluster-a",reason="outside_claim"} 2'),
      refused.join("\n"),
    );
    assert.ok(refused.includes('tailnet_records_refused{source="cluster-a",reason="not_tailnet_address"} 1'));
  });

  it("more records than maxRecords is a failed read; the last good records stay", async () => {
    const w = await world(config({ maxRecords: 2 }));
    w.a.next = [rec("web.a.ts.test", "100.64.0.2")];
    w.b.next = [];
    await w.runner.round();
    w.a.next = [1, 2, 3].map((i) => rec(`w${i}.a.ts.test`, `100.64.0.${i}`));
    const r = await w.runner.round();
    assert.deepEqual(r.failed, ["cluster-a"]);
    assert.deepEqual(await w.file(), [rec("web.a.ts.test", "100.64.0.2")]);
    assert.ok(w.lines.some((l) => l.error === "3 records, more than maxRecords 2"));
  });

  it("a source that never answers fails the round's read after the timeout; the others still arrive", async () => {
    const w = await world(config({ timeout: "100ms" }));
    w.a.next = [rec("web.a.ts.test", "100.64.0.2")];
    w.b.read = () => new Promise(() => undefined);
    const t0 = Date.now();
    const r = await w.runner.round();
    assert.ok(Date.now() - t0 < 3000, `${Date.now() - t0} ms`);
    assert.deepEqual(r.failed, ["cluster-b"]);
    assert.deepEqual(await w.file(), [rec("web.a.ts.test", "100.64.0.2")]);
    assert.ok(w.lines.some((l) => l.source === "cluster-b" && l.error === "no answer within 1100 ms"));
  });

  it("a narrowed claim drops the kept records it no longer allows at the next start", async () => {
    const w1 = await world();
    w1.a.next = [rec("shared.ts.test", "100.64.0.2"), rec("web.a.ts.test", "100.64.0.2")];
    w1.b.next = [];
    await w1.runner.round();
    const w2 = await world(config({}, ["*.a.ts.test"]));
    w2.a.next = "unreachable";
    w2.b.next = [];
    assert.deepEqual((await w2.runner.round()).records, [rec("web.a.ts.test", "100.64.0.2")]);
  });
});
