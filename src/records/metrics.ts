// The records sidecar's Prometheus families (docs/OPERATIONS.md, "Headscale outside the operator's namespace
// or cluster"). Labels are the configured source names and the refusal reasons only — never a DNS name or an
// address — so cardinality is bounded by the config and a scrape says nothing about the tailnet's names.
import { Counter, collectDefaultMetrics, Gauge, Registry } from "prom-client";
import { REFUSALS } from "./validate.js";

export interface RecordsMetrics {
  readonly registry: Registry;
  readonly sourceUp: Gauge<"source">;
  readonly sourceLastSuccess: Gauge<"source">;
  readonly sourceReadErrors: Counter<"source">;
  readonly sourceRecords: Gauge<"source">;
  readonly refused: Gauge<"source" | "reason">;
  readonly conflicts: Gauge<"source">;
  readonly fileRecords: Gauge;
  readonly fileWrites: Counter;
  readonly fileWriteErrors: Counter;
}

export function createRecordsMetrics(sources: readonly string[], defaults = true): RecordsMetrics {
  const registry = new Registry();
  if (defaults) collectDefaultMetrics({ register: registry });
  const registers = [registry];
  const m: RecordsMetrics = {
    registry,
    sourceUp: new Gauge({
      name: "tailnet_records_source_up",
      help: "1 when the last read of the source succeeded; 0 while it fails (its last good records stay in the file).",
      labelNames: ["source"],
      registers,
    }),
    sourceLastSuccess: new Gauge({
      name: "tailnet_records_source_last_success_timestamp_seconds",
      help: "Unix time of the source's last successful read.",
      labelNames: ["source"],
      registers,
    }),
    sourceReadErrors: new Counter({
      name: "tailnet_records_source_read_errors_total",
      help: "Reads of the source that failed (unreachable, refused, not a records list, too many records).",
      labelNames: ["source"],
      registers,
    }),
    sourceRecords: new Gauge({
      name: "tailnet_records_source_records",
      help: "Records of the source that passed validation (its last good read).",
      labelNames: ["source"],
      registers,
    }),
    refused: new Gauge({
      name: "tailnet_records_refused",
      help: "Records of the source's last good read that were refused, by reason (outside its claim, not a tailnet address, ...).",
      labelNames: ["source", "reason"],
      registers,
    }),
    conflicts: new Gauge({
      name: "tailnet_records_conflicts",
      help: "Names the source publishes that another source holds (first seen keeps them); left out of the file.",
      labelNames: ["source"],
      registers,
    }),
    fileRecords: new Gauge({ name: "tailnet_records_file_records", help: "Records in the written file.", registers }),
    fileWrites: new Counter({
      name: "tailnet_records_file_writes_total",
      help: "Times the records file was replaced (only when its content changed).",
      registers,
    }),
    fileWriteErrors: new Counter({
      name: "tailnet_records_file_write_errors_total",
      help: "Failed writes of the records file (the previous file stays).",
      registers,
    }),
  };
  // every series exists from the start, so an alert on a source that never answered has something to see
  for (const source of sources) {
    m.sourceUp.set({ source }, 0);
    m.sourceReadErrors.inc({ source }, 0);
    m.conflicts.set({ source }, 0);
    for (const reason of REFUSALS) m.refused.set({ source, reason }, 0);
  }
  return m;
}
