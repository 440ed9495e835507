/**
 * Every source's records into one file (pure). A name belongs to one source at a time: the one that held it
 * at the last merge keeps it (`owners`, persisted with the state), and a name two sources start to publish in
 * the same round goes to the one listed first in the config. The other's records for that name are left out
 * and reported as a conflict, never merged in: two clusters answering one name would split its clients
 * between them (tailscale answers every record of a name), which is exactly how a compromised cluster would
 * take over another's name. A holder that stops publishing a name frees it at the next merge; a holder that
 * is unreachable keeps publishing its last good records, so it keeps its names.
 */
import { type RecordEntry, sortRecords } from "./validate.js";

/** Who holds a name, and since when (RFC 3339): what the next merge keeps. */
export interface Owner {
  source: string;
  since: string;
}

export interface SourceRecords {
  source: string;
  records: readonly RecordEntry[];
}

export interface Conflict {
  name: string;
  /** The source that keeps the name. */
  holder: string;
  /** The source whose records for the name were left out. */
  refused: string;
}

export interface MergeResult {
  records: RecordEntry[];
  owners: Record<string, Owner>;
  /** Sorted by name, then refused source. */
  conflicts: Conflict[];
}

/**
 * `sources` in config order (the tie-break), each with its current or last good records; `previous` is the
 * owners map of the last merge; `now` stamps names taken in this round.
 */
export function mergeSources(
  sources: readonly SourceRecords[],
  previous: Readonly<Record<string, Owner>>,
  now: string,
): MergeResult {
  const claimants = new Map<string, string[]>();
  for (const s of sources) {
    for (const name of new Set(s.records.map((r) => r.name))) {
      const list = claimants.get(name);
      if (list) list.push(s.source);
      else claimants.set(name, [s.source]);
    }
  }
  const owners: Record<string, Owner> = {};
  const conflicts: Conflict[] = [];
  for (const [name, list] of [...claimants].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
    const held = previous[name];
    const holder = held && list.includes(held.source) ? held.source : list[0];
    owners[name] = held && held.source === holder ? held : { source: holder, since: now };
    for (const other of list) if (other !== holder) conflicts.push({ name, holder, refused: other });
  }
  const records = sources.flatMap((s) => s.records.filter((r) => owners[r.name]?.source === s.source));
  return { records: sortRecords(records), owners, conflicts };
}
