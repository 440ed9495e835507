/**
 * A gauge for the per-object families (one series per object, condition type and reason; per egress
 * target and state; …): prom-client's Gauge keeps, per series, a labels object, a hash string and an
 * entry object (about 420 bytes of heap each), so 20,000 objects with their 13 resource series held
 * over 100 MiB. This one keeps one string of the label values and the number (about 100 bytes), and
 * builds prom-client's shape only while a scrape reads it. Registered in the same registries and
 * rendered by prom-client itself, so the exposition text is the one a Gauge writes, byte for byte.
 */
import type { Registry } from "prom-client";

const SEP = "\u0000"; // never in a Kubernetes name, a condition reason or a target name

export class CompactGauge<L extends string> {
  readonly type = "gauge";
  readonly aggregator = "sum";
  private readonly series = new Map<string, number>();

  constructor(config: { name: string; help: string; labelNames: readonly L[]; registers: Registry[] }) {
    this.name = config.name;
    this.help = config.help;
    this.labelNames = config.labelNames;
    // prom-client reads name, help, type, aggregator and get() (the interface of its Metric class)
    for (const r of config.registers) r.registerMetric(this as unknown as Parameters<Registry["registerMetric"]>[0]);
  }

  readonly name: string;
  readonly help: string;
  readonly labelNames: readonly L[];

  /** The label values joined: Array.join makes one flat string (`+=` would keep a tree of cons strings). */
  private key(labels: Partial<Record<L, string | number>>): string {
    const parts: string[] = new Array(this.labelNames.length);
    for (let i = 0; i < this.labelNames.length; i++) parts[i] = String(labels[this.labelNames[i]] ?? "");
    return parts.join(SEP);
  }

  set(labels: Partial<Record<L, string | number>>, value: number): void {
    this.series.set(this.key(labels), value);
  }

  inc(labels: Partial<Record<L, string | number>>, by = 1): void {
    const key = this.key(labels);
    this.series.set(key, (this.series.get(key) ?? 0) + by);
  }

  remove(labels: Partial<Record<L, string | number>>): void {
    this.series.delete(this.key(labels));
  }

  reset(): void {
    this.series.clear();
  }

  /** Number of series held. */
  get size(): number {
    return this.series.size;
  }

  /**
   * The series as they are now (the keys are the held strings, not copies: a few MiB at 200,000 series),
   * so an exposition written over several turns of the event loop shows one moment of this family.
   */
  snapshot(): { keys: string[]; values: Float64Array } {
    const keys: string[] = new Array(this.series.size);
    const values = new Float64Array(this.series.size);
    let i = 0;
    for (const [key, value] of this.series) {
      keys[i] = key;
      values[i++] = value;
    }
    return { keys, values };
  }

  /** The label values of a key from snapshot(), in labelNames order. */
  static labelValues(key: string): string[] {
    return key.split(SEP);
  }

  async get(): Promise<{
    name: string;
    help: string;
    type: "gauge";
    aggregator: "sum";
    values: { labels: Record<string, string>; value: number }[];
  }> {
    const values: { labels: Record<string, string>; value: number }[] = [];
    for (const [key, value] of this.series) {
      const parts = key.split(SEP);
      const labels: Record<string, string> = {};
      for (let i = 0; i < this.labelNames.length; i++) labels[this.labelNames[i]] = parts[i];
      values.push({ labels, value });
    }
    return { name: this.name, help: this.help, type: this.type, aggregator: this.aggregator, values };
  }
}
