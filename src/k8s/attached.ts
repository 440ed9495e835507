/**
 * A memo kept on the object it is about (a list read, a registry, a recorder), under a symbol private to its
 * caller: it lives exactly as long as that object, as with a WeakMap, but as an ordinary non-enumerable property.
 *
 * Why not a WeakMap: V8 marks each WeakMap entry as an ephemeron (its value is live only while its key is), and the
 * values of entries whose key it reaches late in a marking cycle are marked inside the collector's final pause. At
 * 20,000 objects the key and node lists' indexes and the per-registry maps are hundreds of thousands of small
 * objects reachable only that way, and a full collection held the hook server's event loop for up to 20 ms on them
 * alone (issue 36; `node --trace-gc-nvp`, `mark.ephemeron.marking`). An object that takes no new property (frozen,
 * sealed) keeps its memo in a WeakMap instead.
 */
export interface AttachedMemo<K extends object, V> {
  /** The memo of `owner`, made by `make` on its first use (and kept from then on). */
  of(owner: K, make: () => V): V;
  /** The memo of `owner` if it has one. */
  peek(owner: K): V | undefined;
}

export function attachedMemo<K extends object, V>(name: string): AttachedMemo<K, V> {
  const slot = Symbol(name);
  const fallback = new WeakMap<K, V>();
  const peek = (owner: K): V | undefined =>
    Object.hasOwn(owner, slot) ? (owner as K & { [slot]: V })[slot] : fallback.get(owner);
  return {
    peek,
    of(owner, make) {
      if (Object.hasOwn(owner, slot) || fallback.has(owner)) return peek(owner) as V;
      const value = make();
      if (Object.isExtensible(owner)) Object.defineProperty(owner, slot, { value, enumerable: false });
      else fallback.set(owner, value);
      return value;
    },
  };
}
