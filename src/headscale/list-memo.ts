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

export interface ListMemo<T> {
  text: string;
  /** Index of the `]` closing the list in `text`. */
  close: number;
  items: readonly T[];
}

/** Remembers a decoded answer when its shape allows reuse (one top-level key holding the list). */
export function rememberList<T>(
  text: string,
  field: string,
  body: unknown,
  items: readonly T[],
): ListMemo<T> | undefined {
  if (!body || typeof body !== "object" || Array.isArray(body)) return undefined;
  const keys = Object.keys(body);
  if (keys.length !== 1 || keys[0] !== field) return undefined;
  const close = text.lastIndexOf("]");
  if (close < 0 || !/^\]\s*\}\s*$/.test(text.slice(close))) return undefined;
  return { text, close, items };
}

/**
 * The items of `text` reusing `memo`'s decoded items, or undefined when `text` is not `memo`'s answer with items
 * appended (decode it whole then). `decodeItem` decodes one new item (and throws on a bad one).
 */
export function reuseList<T>(
  memo: ListMemo<T> | undefined,
  text: string,
  decodeItem: (v: unknown) => T,
): T[] | undefined {
  if (!memo) return undefined;
  if (text === memo.text) return [...memo.items];
  const tail = memo.text.slice(memo.close);
  if (text.length <= memo.text.length || !text.endsWith(tail) || !text.startsWith(memo.text.slice(0, memo.close))) {
    return undefined;
  }
  let added = text.slice(memo.close, text.length - tail.length);
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
  return [...memo.items, ...values.map(decodeItem)];
}

/** Above this many characters of new items the whole answer is parsed in runs instead (json-chunks.ts). */
const MAX_REUSED_APPEND_CHARS = 256 * 1024;

/** One list call's decoder that remembers its last answer (a client holds one per list it reads). */
export class ReusingListDecoder<T> {
  private memo: ListMemo<T> | undefined;

  constructor(
    private readonly field: string,
    private readonly decodeItem: (v: unknown) => T,
  ) {}

  /** The items of `text` when it is the last answer with items appended; undefined: decode it whole. */
  tryReuse(text: string): T[] | undefined {
    const memo = this.memo;
    if (!memo || text.length - memo.text.length > MAX_REUSED_APPEND_CHARS) return undefined;
    const items = reuseList(memo, text, this.decodeItem);
    if (!items) return undefined;
    this.memo = { text, close: text.length - (memo.text.length - memo.close), items };
    // the caller's own array: a cache may append to it (the view adds its mints), the memo must stay the text's
    return [...items];
  }

  /** Keeps an answer decoded whole, for the next one (a copy: the caller's array may be appended to). */
  remember(text: string, body: unknown, items: readonly T[]): void {
    this.memo = rememberList(text, this.field, body, [...items]);
  }
}
