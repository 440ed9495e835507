/**
 * Decoding only what is new in a list answer. Headscale answers ListPreAuthKeys with every key, sorted by id
 * (juanfont/headscale hscontrol/grpcv1.go), and ids only grow, so while keys are only minted the next answer is
 * the previous one with items appended. A fresh install mints a key per object after a fresh read of that list
 * (src/kinds/shared/authkey.ts), so without this each read decoded the whole list again: O(n) per read, a
 * quadratic CPU cost over the install (issue 25).
 *
 * The answer is reused only when that is exactly what JSON.parse would give: the previous text was
 * `{"<field>":[…]}` (one key, so its last `]` closes the list), the new text starts with the previous one up to
 * that `]` and ends with the same closing characters, and what lies between is a comma-separated list of
 * values on its own. Then the whole text is the old items followed by the new ones. Anything else (a key
 * expired or used, which changes an item in place; an error answer) is decoded whole.
 */

import type { ByteRope } from "./byte-rope.js";

export interface ListMemo<T> {
  /** The answer's bytes as they arrived (no string of megabytes is kept or built per read; byte-rope.ts). */
  bytes: ByteRope;
  /** Index of the `]` closing the list in `bytes`. */
  close: number;
  /**
   * The answer's items: the first `length` of `items`. The array is the one the caller got, which a cache may append
   * to (the view adds its mints); giving it out instead of a copy saves a 160 KB array a read at 20,000 keys, and
   * an array that size goes straight into V8's old generation (issue 36).
   */
  items: readonly T[];
  length: number;
}

const CLOSE_BRACKET = 0x5d;

/**
 * Remembers a decoded answer when its shape allows reuse (one top-level key holding the list). Cutting the bytes
 * at an ASCII `]` is cutting the text there too: UTF-8 never uses an ASCII byte inside a multi-byte sequence, and
 * a decoder replaces a broken sequence before it without consuming the `]`.
 */
export function rememberList<T>(
  bytes: ByteRope,
  field: string,
  body: unknown,
  items: readonly T[],
): ListMemo<T> | undefined {
  if (!body || typeof body !== "object" || Array.isArray(body)) return undefined;
  const keys = Object.keys(body);
  if (keys.length !== 1 || keys[0] !== field) return undefined;
  const close = bytes.lastIndexOf(CLOSE_BRACKET);
  if (close < 0 || !/^\]\s*\}\s*$/.test(bytes.toString("latin1", close))) return undefined;
  return { bytes, close, items, length: items.length };
}

/**
 * The items of the answer `bytes` reusing `memo`'s decoded items, or undefined when it is not `memo`'s answer with
 * items appended (decode it whole then). `decodeItem` decodes one new item (and throws on a bad one). The old part
 * is compared byte for byte (a memcmp: a quarter of a millisecond at 20,000 keys, where a string compare and the
 * UTF-8 decode of the whole answer took 6 ms and a 4 MiB string per read).
 */
export function reuseList<T>(
  memo: ListMemo<T> | undefined,
  bytes: ByteRope,
  decodeItem: (v: unknown) => T,
): T[] | undefined {
  if (!memo) return undefined;
  const old = memo.bytes;
  if (bytes.equals(old)) return memo.items.slice(0, memo.length);
  const tailLength = old.length - memo.close;
  if (
    bytes.length <= old.length ||
    !bytes.equalsRange(bytes.length - tailLength, old, memo.close, tailLength) ||
    !bytes.equalsRange(0, old, 0, memo.close)
  ) {
    return undefined;
  }
  let added = bytes.toString("utf8", memo.close, bytes.length - tailLength);
  if (memo.items.length > 0) {
    // after the last old item comes a comma, then the new items
    if (!/^\s*,/.test(added)) return undefined;
    added = added.slice(added.indexOf(",") + 1);
  }
  let values: unknown;
  try {
    values = JSON.parse(`[${added}]`);
  } catch {
    return undefined;
  }
  if (!Array.isArray(values) || values.length === 0) return undefined;
  const decoded = values.map(decodeItem);
  // one copy: concat sizes the new array once
  return (memo.items.length === memo.length ? memo.items : memo.items.slice(0, memo.length)).concat(decoded);
}

/** Above this many bytes of new items the whole answer is parsed in runs instead (json-chunks.ts). */
const MAX_REUSED_APPEND_BYTES = 256 * 1024;

/** One list call's decoder that remembers its last answer (a client holds one per list it reads). */
export class ReusingListDecoder<T> {
  private memo: ListMemo<T> | undefined;

  constructor(
    private readonly field: string,
    private readonly decodeItem: (v: unknown) => T,
  ) {}

  /** The items of the answer `bytes` when it is the last answer with items appended; undefined: decode it whole. */
  tryReuse(bytes: ByteRope): T[] | undefined {
    const memo = this.memo;
    if (!memo || bytes.length - memo.bytes.length > MAX_REUSED_APPEND_BYTES) return undefined;
    const items = reuseList(memo, bytes, this.decodeItem);
    if (!items) return undefined;
    // the same bytes: the memo stays as it is (the new read's pieces die young)
    if (bytes.length === memo.bytes.length) return items;
    // the caller's own array, which a cache may append to: the memo counts the text's items. Its bytes are the old
    // ones up to the list's `]` and a copy of what the new answer adds from there on (byte-rope.ts)
    this.memo = {
      bytes: memo.bytes.spliceTail(memo.close, bytes, memo.close),
      close: bytes.length - (memo.bytes.length - memo.close),
      items,
      length: items.length,
    };
    return items;
  }

  /** Keeps an answer decoded whole, for the next one (the caller's array, whose items so far are the text's). */
  remember(bytes: ByteRope, body: unknown, items: readonly T[]): void {
    this.memo = rememberList(bytes, this.field, body, items);
  }
}
