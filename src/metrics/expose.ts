/**
 * GET /metrics written a chunk at a time. prom-client's Registry.metrics() builds every series'
 * labels object and line, then one string of them all: at 20,000 objects (about 200,000 series,
 * 25 MiB of text) that held the event loop for most of a second and drew about 200 MiB of heap at
 * once, the server's peak. Here each CompactGauge family is written from a snapshot of its series,
 * in chunks of 32 KiB, eight to a turn of the event loop; the other families (a few hundred series) are
 * prom-client's own text. The bytes are the ones Registry.metrics() writes for the same state
 * (test/metrics/expose.test.ts), under the operator's registry setup: the Prometheus content type
 * and no default labels (anything else is handed to prom-client whole).
 */
import { setImmediate as nextTurn } from "node:timers/promises";
import { Registry } from "prom-client";
import { CompactGauge, type SeriesSnapshot } from "./compact.js";

/**
 * Characters per chunk. A chunk stays a young-generation string: V8 puts a string over 128 KiB straight into the
 * old generation, so chunks of 300 KiB made the scrape of 200,000 series grow the old generation, and the RSS,
 * by 10 to 20 MiB (issue 36).
 */
const CHUNK_CHARS = 32 * 1024;
/** Chunks between turns of the event loop: about 2 ms of work. */
const CHUNKS_PER_TURN = 8;

// prom-client's escaping (lib/registry.js escapeString, escapeLabelValue) and number spelling (lib/util.js)
const escapeString = (s: string) => s.replace(/\\/g, "\\\\").replace(/\n/g, "\\n");
const NEEDS_ESCAPE = /[\\\n"]/;
const escapeLabelValue = (s: string) => (NEEDS_ESCAPE.test(s) ? escapeString(s).replace(/"/g, '\\"') : s);
function valueString(v: number): string {
  if (Number.isNaN(v)) return "Nan";
  if (!Number.isFinite(v)) return v < 0 ? "-Inf" : "+Inf";
  return `${v}`;
}

/** Whether this registry is set up as the operator's is; otherwise metrics() is used whole. */
function streamable(registry: Registry): boolean {
  const defaults = (registry as unknown as { _defaultLabels?: Record<string, string> })._defaultLabels;
  return registry.contentType === Registry.PROMETHEUS_CONTENT_TYPE && (!defaults || Object.keys(defaults).length === 0);
}

/** The exposition text of the registry, in chunks; concatenated, the string Registry.metrics() returns. */
export async function* exposition(registry: Registry, chunkChars = CHUNK_CHARS): AsyncGenerator<string> {
  if (!streamable(registry)) {
    yield await registry.metrics();
    return;
  }
  const families = registry.getMetricsAsArray() as unknown[];
  // every compact family's series at one moment (as metrics() reads them all before it awaits)
  const snapshots = new Map<unknown, SeriesSnapshot>();
  let chunks = 0;
  for (const f of families) if (f instanceof CompactGauge) snapshots.set(f, f.snapshot());
  for (let i = 0; i < families.length; i++) {
    const family = families[i];
    const sep = i === 0 ? "" : "\n\n";
    if (!(family instanceof CompactGauge)) {
      yield sep + (await registry.getSingleMetricAsString((family as { name: string }).name));
      continue;
    }
    const snap = snapshots.get(family) as SeriesSnapshot;
    snapshots.delete(family);
    const name = escapeString(family.name);
    const prefixes = family.labelNames.map((l, j) => `${j === 0 ? "" : ","}${l}="`);
    let lines: string[] = [`${sep}# HELP ${name} ${escapeString(family.help)}\n# TYPE ${name} gauge`];
    let chars = 0;
    for (let k = 0; k < snap.size; k++) {
      const parts = snap.labelValues(k);
      let line = `\n${name}`;
      if (prefixes.length) {
        line += "{";
        for (let j = 0; j < prefixes.length; j++) line += `${prefixes[j]}${escapeLabelValue(parts[j])}"`;
        line += "}";
      }
      line += ` ${valueString(snap.value(k))}`;
      lines.push(line);
      chars += line.length;
      if (chars >= chunkChars) {
        yield lines.join("");
        lines = [];
        chars = 0;
        if (++chunks % CHUNKS_PER_TURN === 0) await nextTurn(); // timers and sockets run between chunks
      }
    }
    if (lines.length) yield lines.join("");
  }
  yield "\n";
}
