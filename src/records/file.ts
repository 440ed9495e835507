/**
 * Writing Headscale's records file so that it never reads half a file, and the sidecar's own state.
 *
 * Headscale 0.29.3 watches the file itself with fsnotify, not its folder (juanfont/headscale
 * hscontrol/dns/extrarecords.go: `watcher.Add(path)`), re-reads it on Create/Write/Chmod, and on
 * Remove/Rename waits until the path exists again, re-adds the watch and re-reads. It skips an empty read
 * ("the file is not complete") and a read whose sha256 equals the last one, and keeps its records when the
 * JSON does not parse. An in-place write could be read between truncate and the last byte; so the new text
 * goes to a temporary file in the same folder (same filesystem: rename is atomic), is fsynced, and is
 * renamed over the path. The rename unlinks the watched inode: inotify reports IN_ATTRIB (fsnotify Chmod,
 * Headscale re-reads the path, which is already the new file) and IN_DELETE_SELF (Remove: Headscale re-adds
 * the watch on the new inode and re-reads; the hash makes that second read a no-op). The path is never
 * missing, so Headscale's backoff never waits. Checked with fsnotify v1.10.1 (Headscale 0.29.3's go.mod):
 * a rename over the watched file gives CHMOD then REMOVE, and a read at CHMOD already sees the new text.
 */
import { randomBytes } from "node:crypto";
import { open, readFile, rename, rm } from "node:fs/promises";
import { basename, dirname } from "node:path";
import type { Owner } from "./merge.js";
import { type RecordEntry, sortRecords } from "./validate.js";

/** Writes `text` to `path` atomically (temp file in the same folder, fsync, rename, fsync the folder). */
export async function writeAtomic(path: string, text: string, mode = 0o644): Promise<void> {
  const dir = dirname(path);
  const tmp = `${dir}/.${basename(path)}.${process.pid}.${randomBytes(4).toString("hex")}.tmp`;
  const fh = await open(tmp, "wx", mode);
  try {
    await fh.writeFile(text);
    await fh.sync();
  } catch (e) {
    await fh.close().catch(() => undefined);
    await rm(tmp, { force: true });
    throw e;
  }
  await fh.close();
  try {
    await rename(tmp, path);
  } catch (e) {
    await rm(tmp, { force: true });
    throw e;
  }
  // the rename itself is durable once the folder is synced (a crash right after keeps the new file)
  const d = await open(dir, "r");
  try {
    await d.sync();
  } finally {
    await d.close();
  }
}

/** The file's text, or undefined when it does not exist. */
export async function readIfExists(path: string): Promise<string | undefined> {
  try {
    return await readFile(path, "utf8");
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw e;
  }
}

/** What survives a restart of the sidecar: each source's last good records, and who holds each name. */
export interface RecordsState {
  sources: Record<string, { records: RecordEntry[]; readAt: string }>;
  owners: Record<string, Owner>;
}

export const emptyState = (): RecordsState => ({ sources: {}, owners: {} });

const isObj = (x: unknown): x is Record<string, unknown> => typeof x === "object" && x !== null && !Array.isArray(x);

/**
 * Parses the state file; anything that is not the shape it writes gives the empty state (the next round reads
 * every source again). The records in it are re-checked by the caller before use: the file is ours, but a
 * changed claim must not keep a name the source may no longer publish.
 */
export function parseState(text: string | undefined): RecordsState {
  if (text === undefined) return emptyState();
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    return emptyState();
  }
  if (!isObj(raw) || !isObj(raw.sources) || !isObj(raw.owners)) return emptyState();
  const state = emptyState();
  for (const [name, s] of Object.entries(raw.sources)) {
    if (isObj(s) && Array.isArray(s.records) && typeof s.readAt === "string") {
      state.sources[name] = { records: s.records as RecordEntry[], readAt: s.readAt };
    }
  }
  for (const [name, o] of Object.entries(raw.owners)) {
    if (isObj(o) && typeof o.source === "string" && typeof o.since === "string") {
      state.owners[name] = { source: o.source, since: o.since };
    }
  }
  return state;
}

/** Deterministic text of the state (sorted keys), so an unchanged state is not rewritten. */
export function stateText(state: RecordsState): string {
  const sorted = <T>(o: Record<string, T>) =>
    Object.fromEntries(Object.entries(o).sort(([a], [b]) => (a < b ? -1 : 1)));
  const sources = Object.fromEntries(
    Object.entries(sorted(state.sources)).map(([k, v]) => [
      k,
      { readAt: v.readAt, records: sortRecords([...v.records]) },
    ]),
  );
  return `${JSON.stringify({ sources, owners: sorted(state.owners) }, null, 1)}\n`;
}
