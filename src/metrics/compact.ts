/**
 * A gauge for the per-object families (one series per object, condition type and reason; per egress
 * target and state; …): prom-client's Gauge keeps, per series, a labels object, a hash string and an
 * entry object (about 420 bytes of heap each), so 20,000 objects with their 13 resource series held
 * over 100 MiB. This one keeps one string of the label values and the number (about 100 bytes), and
 * builds prom-client's shape only while a scrape reads it. Registered in the same registries and
 * rendered by prom-client itself, so the exposition text is the one a Gauge writes, byte for byte.
 *
 * A family with many series per object (`groupBy`: how many leading labels name the object, e.g. kind,
 * namespace and name of tailnet_resource_condition, about 8 series an object) keeps one string per object and
 * its series as [rest of the labels, value] pairs, the rest interned (a condition type and reason are shared by
 * thousands of objects): about 35 bytes a series instead of 100 (issue 36). The pairs themselves are shared
 * between objects holding the same ones (shared-values.ts: most objects of a kind hold the same types, reasons and
 * values), so an object costs its labels' string and an entry. Its lines come grouped by object, in the order
 * objects were first set, the same lines a Gauge writes in another order.
 */
import type { Registry } from "prom-client";
import { numberKey, SharedValues, stringsKey } from "../k8s/shared-values.js";

const SEP = "\u0000"; // never in a Kubernetes name, a condition reason or a target name
/** An object's series: [label tail, value, label tail, value, …]. */
type Pairs = readonly (string | number)[];
const pairsKey = (pairs: Pairs): string => stringsKey(pairs.map((x) => (typeof x === "number" ? numberKey(x) : x)));
/** Distinct label tails interned per family; past it a tail is kept as it comes (still correct, not shared). */
const MAX_INTERNED_TAILS = 4096;

/** The series of one family at one moment, read by index (src/metrics/expose.ts). */
export interface SeriesSnapshot {
  readonly size: number;
  /** Label values in labelNames order. */
  labelValues(i: number): string[];
  value(i: number): number;
}

export class CompactGauge<L extends string> {
  readonly type = "gauge";
  readonly aggregator = "sum";
  /** Without groupBy: label values joined → value. */
  private readonly series = new Map<string, number>();
  /** With groupBy: the object's label values joined → [tail, value, tail, value, …], shared and frozen. */
  private readonly groups = new Map<string, Pairs>();
  private readonly sharedPairs = new SharedValues<Pairs>(pairsKey);
  private readonly tails = new Map<string, string>();
  private grouped = 0;
  private readonly groupBy: number;

  constructor(config: {
    name: string;
    help: string;
    labelNames: readonly L[];
    registers: Registry[];
    /** Leading labels that name an object with several series (kept once per object). */
    groupBy?: number;
  }) {
    this.name = config.name;
    this.help = config.help;
    this.labelNames = config.labelNames;
    this.groupBy = config.groupBy && config.groupBy < config.labelNames.length ? config.groupBy : 0;
    // prom-client reads name, help, type, aggregator and get() (the interface of its Metric class)
    for (const r of config.registers) r.registerMetric(this as unknown as Parameters<Registry["registerMetric"]>[0]);
  }

  readonly name: string;
  readonly help: string;
  readonly labelNames: readonly L[];

  /** The label values from `from` to `to`, joined: Array.join makes one flat string (`+=` keeps a cons tree). */
  private join(labels: Partial<Record<L, string | number>>, from: number, to: number): string {
    const parts: string[] = new Array(to - from);
    for (let i = from; i < to; i++) parts[i - from] = String(labels[this.labelNames[i]] ?? "");
    return parts.join(SEP);
  }

  private key(labels: Partial<Record<L, string | number>>): string {
    return this.join(labels, 0, this.labelNames.length);
  }

  /** The object's pairs and the index of the tail's value in them (-1: not there). */
  private find(labels: Partial<Record<L, string | number>>): {
    head: string;
    tail: string;
    pairs?: Pairs;
    at: number;
  } {
    const head = this.join(labels, 0, this.groupBy);
    const tail = this.join(labels, this.groupBy, this.labelNames.length);
    const pairs = this.groups.get(head);
    if (pairs) for (let i = 0; i < pairs.length; i += 2) if (pairs[i] === tail) return { head, tail, pairs, at: i + 1 };
    return { head, tail, pairs, at: -1 };
  }

  private intern(tail: string): string {
    const had = this.tails.get(tail);
    if (had !== undefined) return had;
    if (this.tails.size < MAX_INTERNED_TAILS) this.tails.set(tail, tail);
    return tail;
  }

  /** The object's series become `next` (none: it has no series left), shared with the objects holding the same. */
  private replace(head: string, old: Pairs | undefined, next: (string | number)[]): void {
    if (next.length) this.groups.set(head, this.sharedPairs.swap(old, next));
    else {
      this.sharedPairs.release(old);
      this.groups.delete(head);
    }
  }

  private put(labels: Partial<Record<L, string | number>>, value: (old: number) => number): void {
    const f = this.find(labels);
    if (f.pairs && f.at >= 0) {
      const v = value(f.pairs[f.at] as number);
      if (Object.is(v, f.pairs[f.at])) return;
      const next = [...f.pairs];
      next[f.at] = v;
      this.replace(f.head, f.pairs, next);
      return;
    }
    this.grouped++;
    this.replace(f.head, f.pairs, [...(f.pairs ?? []), this.intern(f.tail), value(0)]);
  }

  set(labels: Partial<Record<L, string | number>>, value: number): void {
    if (this.groupBy) this.put(labels, () => value);
    else this.series.set(this.key(labels), value);
  }

  inc(labels: Partial<Record<L, string | number>>, by = 1): void {
    if (this.groupBy) this.put(labels, (old) => old + by);
    else {
      const key = this.key(labels);
      this.series.set(key, (this.series.get(key) ?? 0) + by);
    }
  }

  remove(labels: Partial<Record<L, string | number>>): void {
    if (!this.groupBy) {
      this.series.delete(this.key(labels));
      return;
    }
    const f = this.find(labels);
    if (!f.pairs || f.at < 0) return;
    this.grouped--;
    this.replace(
      f.head,
      f.pairs,
      f.pairs.filter((_, i) => i !== f.at - 1 && i !== f.at),
    );
  }

  reset(): void {
    this.series.clear();
    this.groups.clear();
    this.sharedPairs.clear();
    this.grouped = 0;
  }

  /** Number of series held. */
  get size(): number {
    return this.groupBy ? this.grouped : this.series.size;
  }

  /**
   * The series as they are now (the held strings, not copies), so an exposition written over several turns of
   * the event loop shows one moment of this family.
   */
  snapshot(): SeriesSnapshot {
    return this.groupBy ? this.groupedSnapshot() : this.flatSnapshot();
  }

  private flatSnapshot(): SeriesSnapshot {
    const keys: string[] = new Array(this.series.size);
    const values = new Float64Array(this.series.size);
    let i = 0;
    for (const [key, value] of this.series) {
      keys[i] = key;
      values[i++] = value;
    }
    return { size: keys.length, labelValues: (k) => keys[k].split(SEP), value: (k) => values[k] };
  }

  private groupedSnapshot(): SeriesSnapshot {
    const heads: string[] = [];
    const headOf = new Int32Array(this.grouped);
    const tailOf: string[] = new Array(this.grouped);
    const values = new Float64Array(this.grouped);
    let i = 0;
    for (const [head, pairs] of this.groups) {
      heads.push(head);
      for (let p = 0; p < pairs.length; p += 2) {
        headOf[i] = heads.length - 1;
        tailOf[i] = pairs[p] as string;
        values[i++] = pairs[p + 1] as number;
      }
    }
    return {
      size: i,
      labelValues: (k) => [...heads[headOf[k]].split(SEP), ...tailOf[k].split(SEP)],
      value: (k) => values[k],
    };
  }

  async get(): Promise<{
    name: string;
    help: string;
    type: "gauge";
    aggregator: "sum";
    values: { labels: Record<string, string>; value: number }[];
  }> {
    const snap = this.snapshot();
    const values: { labels: Record<string, string>; value: number }[] = [];
    for (let k = 0; k < snap.size; k++) {
      const parts = snap.labelValues(k);
      const labels: Record<string, string> = {};
      for (let i = 0; i < this.labelNames.length; i++) labels[this.labelNames[i]] = parts[i];
      values.push({ labels, value: snap.value(k) });
    }
    return { name: this.name, help: this.help, type: this.type, aggregator: this.aggregator, values };
  }
}
