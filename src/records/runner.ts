/**
 * One round of the records sidecar: read every source, keep each one's last good records, merge, and replace
 * Headscale's records file when (and only when) its content changed. A source that fails keeps its last good
 * records (from this run or the state file), so one unreachable cluster never takes its names — or anyone
 * else's — out of the file. Every round tries every source, so the first write comes after each was tried
 * once: a first start with one cluster down writes the others' names (there is nothing older to keep), a
 * restart never writes less than the state it kept.
 */

import type { RecordsConfig, SourceConfig } from "./config.js";
import { parseState, type RecordsState, readIfExists, stateText, writeAtomic } from "./file.js";
import type { RecordsLogger } from "./log.js";
import { type Conflict, mergeSources } from "./merge.js";
import type { RecordsMetrics } from "./metrics.js";
import { SourceError, type SourceReader, sourceReader } from "./sources.js";
import { checkRecords, REFUSALS, type RecordEntry, type RefusedRecord, recordsFileText } from "./validate.js";

export interface RunnerDeps {
  log: RecordsLogger;
  metrics: RecordsMetrics;
  now?: () => Date;
  /** Readers by source name (tests); default: built from each source's config. */
  readers?: Record<string, SourceReader>;
}

export interface RoundReport {
  /** Sources whose read failed this round (their last good records were used). */
  failed: string[];
  conflicts: Conflict[];
  /** True when the records file was replaced. */
  wrote: boolean;
  records: RecordEntry[];
}

export interface RecordsRunner {
  round(): Promise<RoundReport>;
  /** True once the records file is in place (written, or found equal) in this run. */
  ready(): boolean;
}

const conflictKey = (c: Conflict) => `${c.name} ${c.holder} ${c.refused}`;
const errorCode = (e: unknown) => (e as NodeJS.ErrnoException).code ?? (e as Error).message;

class Runner implements RecordsRunner {
  private isReady = false;
  private conflictsSeen = new Set<string>();
  /** Per source: the last thing logged about it (so a source failing every round logs once). */
  private readonly lastLogged = new Map<string, string>();
  private readonly readers = new Map<string, Promise<SourceReader>>();
  private readonly now: () => Date;

  constructor(
    private readonly config: RecordsConfig,
    private readonly deps: RunnerDeps,
    private readonly state: RecordsState,
    private persisted: string,
    private fileText: string | undefined,
  ) {
    this.now = deps.now ?? (() => new Date());
    for (const [k, v] of Object.entries(deps.readers ?? {})) this.readers.set(k, Promise.resolve(v));
  }

  ready(): boolean {
    return this.isReady;
  }

  async round(): Promise<RoundReport> {
    const ok = await Promise.all(this.config.sources.map((s) => this.readSource(s)));
    const failed = this.config.sources.filter((_, i) => !ok[i]).map((s) => s.name);
    const kept = this.config.sources.flatMap((s) => {
      const last = this.state.sources[s.name];
      return last ? [{ source: s.name, records: last.records }] : [];
    });
    const merged = mergeSources(kept, this.state.owners, this.now().toISOString());
    this.state.owners = merged.owners;
    this.reportConflicts(merged.conflicts);
    await this.persistState();
    const wrote = await this.writeRecords(recordsFileText(merged.records));
    this.deps.metrics.fileRecords.set(merged.records.length);
    return { failed, conflicts: merged.conflicts, wrote, records: merged.records };
  }

  private readerOf(s: SourceConfig): Promise<SourceReader> {
    let r = this.readers.get(s.name);
    if (!r) {
      r = sourceReader(s, this.config.timeoutMs);
      // a kubeconfig that is not mounted yet is tried again next round
      r.catch(() => this.readers.delete(s.name));
      this.readers.set(s.name, r);
    }
    return r;
  }

  private async readSource(s: SourceConfig): Promise<boolean> {
    const { metrics } = this.deps;
    const at = this.now();
    let list: unknown[];
    try {
      list = await this.bounded((async () => (await this.readerOf(s)).read())());
      if (list.length > this.config.maxRecords) {
        throw new SourceError(`${list.length} records, more than maxRecords ${this.config.maxRecords}`);
      }
    } catch (e) {
      metrics.sourceUp.set({ source: s.name }, 0);
      metrics.sourceReadErrors.inc({ source: s.name });
      const message = e instanceof SourceError ? e.message : `unexpected ${(e as Error).name}`;
      this.logOnce(s.name, message, () =>
        this.deps.log.warn("source read failed; its last good records stay", {
          source: s.name,
          error: message,
          kept: this.state.sources[s.name]?.records.length ?? 0,
        }),
      );
      return false;
    }
    const { records, refused } = checkRecords(list, s.claim, this.config);
    const prev = this.state.sources[s.name];
    if (!prev || recordsFileText(prev.records) !== recordsFileText(records)) {
      this.state.sources[s.name] = { records, readAt: at.toISOString() };
    }
    metrics.sourceUp.set({ source: s.name }, 1);
    metrics.sourceLastSuccess.set({ source: s.name }, Math.floor(at.getTime() / 1000));
    metrics.sourceRecords.set({ source: s.name }, records.length);
    for (const reason of REFUSALS) {
      metrics.refused.set({ source: s.name, reason }, refused.filter((r) => r.reason === reason).length);
    }
    this.logRefused(s.name, records.length, refused);
    return true;
  }

  /**
   * A read that outlives the config's timeout (plus a second for the reader's own) is a failed read: one
   * stuck source must not hold up the round, and with it every other cluster's changes.
   */
  private bounded<T>(p: Promise<T>): Promise<T> {
    const ms = this.config.timeoutMs + 1000;
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new SourceError(`no answer within ${ms} ms`)), ms);
    });
    return Promise.race([p, late]).finally(() => clearTimeout(timer));
  }

  private logRefused(source: string, accepted: number, refused: RefusedRecord[]) {
    const summary = refused.map((r) => `${r.reason} ${r.record}`).join("; ");
    const failedBefore = this.lastLogged.has(source) && !this.lastLogged.get(source)?.startsWith("ok ");
    this.logOnce(source, `ok ${summary}`, () => {
      if (refused.length)
        this.deps.log.warn("source records refused", { source, refused: refused.length, records: summary });
      else if (failedBefore) this.deps.log.info("source read again", { source, records: accepted });
    });
  }

  private logOnce(source: string, key: string, log: () => void) {
    if (this.lastLogged.get(source) === key) return;
    this.lastLogged.set(source, key);
    log();
  }

  private reportConflicts(conflicts: Conflict[]) {
    for (const c of conflicts) {
      if (this.conflictsSeen.has(conflictKey(c))) continue;
      this.deps.log.warn("name claimed by two sources; its first holder keeps it", {
        name: c.name,
        holder: c.holder,
        refused: c.refused,
      });
    }
    this.conflictsSeen = new Set(conflicts.map(conflictKey));
    for (const s of this.config.sources) {
      this.deps.metrics.conflicts.set({ source: s.name }, conflicts.filter((c) => c.refused === s.name).length);
    }
  }

  private async persistState() {
    const text = stateText(this.state);
    if (text === this.persisted) return;
    try {
      await writeAtomic(this.config.statePath, text, 0o600);
      this.persisted = text;
    } catch (e) {
      this.deps.log.error("state not written", { path: this.config.statePath, error: errorCode(e) });
    }
  }

  private async writeRecords(text: string): Promise<boolean> {
    if (text === this.fileText) {
      this.isReady = true;
      return false;
    }
    try {
      await writeAtomic(this.config.output, text);
    } catch (e) {
      this.deps.metrics.fileWriteErrors.inc();
      this.deps.log.error("records file not written; the previous one stays", {
        path: this.config.output,
        error: errorCode(e),
      });
      return false;
    }
    this.fileText = text;
    this.isReady = true;
    this.deps.metrics.fileWrites.inc();
    return true;
  }
}

/** Loads the state file (each source's last good records, re-checked against today's claims) and the current file. */
export async function createRunner(config: RecordsConfig, deps: RunnerDeps): Promise<RecordsRunner> {
  const state = parseState(await readIfExists(config.statePath));
  for (const name of Object.keys(state.sources)) {
    const source = config.sources.find((s) => s.name === name);
    // a claim may have narrowed since the state was written: what is kept passes today's checks or goes
    if (source) state.sources[name].records = checkRecords(state.sources[name].records, source.claim, config).records;
    else delete state.sources[name];
  }
  const fileText = await readIfExists(config.output);
  return new Runner(config, deps, state, stateText(state), fileText);
}
