/**
 * Values that many holders share while they are equal: at 20,000 objects most objects of a kind publish the same
 * condition types with the same reasons, so the per-object record of them (metrics/resource.ts) and the series of an object
 * (metrics/compact.ts with groupBy) are a few hundred distinct values held 20,000 times (issue 36). A value is frozen when it
 * is first held, so no holder can change what another holds: a holder that changes its value holds a new one and
 * releases the old. Counted per holder, so a value is forgotten with its last holder and the table never holds more
 * than the values held now, however many came and went over a month of changes.
 */
export class SharedValues<T extends object> {
  private readonly byKey = new Map<string, { value: T; holders: number }>();
  private keys = new WeakMap<T, string>();

  /** `keyOf` must be injective over the values held: equal keys mean interchangeable values. */
  constructor(private readonly keyOf: (value: T) => string) {}

  /** The shared value equal to `value` (frozen; `value` itself when none is held), counted as held once more. */
  hold(value: T): T {
    const key = this.keyOf(value);
    const had = this.byKey.get(key);
    if (had) {
      had.holders++;
      return had.value;
    }
    Object.freeze(value);
    this.byKey.set(key, { value, holders: 1 });
    this.keys.set(value, key);
    return value;
  }

  /** A holder lets go of `old` (if any) and holds `next`: what each holder does when its value changes. */
  swap(old: T | undefined, next: T): T {
    this.release(old);
    return this.hold(next);
  }

  /** One holder less of a value `hold` returned; anything else is ignored. */
  release(value: T | undefined): void {
    if (value === undefined) return;
    const key = this.keys.get(value);
    const had = key === undefined ? undefined : this.byKey.get(key);
    if (!had || had.value !== value) return;
    had.holders--;
    if (had.holders === 0) this.byKey.delete(key as string);
  }

  /** Distinct values held now. */
  get size(): number {
    return this.byKey.size;
  }

  clear(): void {
    this.byKey.clear();
    this.keys = new WeakMap();
  }
}

/** A number as a key: distinct for every value a gauge can hold (-0 and 0 too, which `String` merges). */
export const numberKey = (n: number): string => (Object.is(n, -0) ? "-0" : String(n));

/** A record of strings as one key (its entries in order). */
export const recordKey = (record: Readonly<Record<string, string>>): string =>
  stringsKey(Object.entries(record).flat());

/** Strings as one key, each length-prefixed so that no choice of separators can make two lists collide. */
export const stringsKey = (parts: readonly string[]): string => {
  let key = "";
  for (const p of parts) key += `${p.length}:${p}`;
  return key;
};
