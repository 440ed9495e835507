/**
 * JSON.parse of a large Headscale answer without one long block of the event loop. A list of 20,000
 * pre-auth keys is ~6 MiB of JSON: one JSON.parse holds the loop for tens of milliseconds (more on a
 * loaded node), and every hook answered meanwhile waits. Headscale's lists are one object holding
 * arrays (`{"preAuthKeys":[…]}`, `{"nodes":[…]}`), so the arrays directly under the top-level object
 * are cut into runs of items and each run parsed on its own turn of the event loop. The value is the
 * one JSON.parse gives (same keys, order, duplicates resolved the same way), and it throws a
 * SyntaxError exactly when JSON.parse would: the text is the skeleton with each array's items put
 * back, so it is valid iff the skeleton and every run are.
 */
import { setImmediate as nextTurn } from "node:timers/promises";

/** From this length on the text is parsed in runs (smaller answers parse in well under a millisecond). */
export const CHUNKED_JSON_CHARS = 256 * 1024;
/** Characters scanned or parsed per turn of the event loop. */
const RUN_CHARS = 128 * 1024;

const QUOTE = 0x22;
const BACKSLASH = 0x5c;

interface SplitArray {
  /** Index of `[` and of its `]`. */
  open: number;
  close: number;
  /** Start and end of each item's text (commas excluded, whitespace kept). */
  items: [number, number][];
}

/** JSON.parse(text), in runs of about `runChars` characters with a turn of the event loop between them. */
export async function parseJsonInRuns(text: string, runChars = RUN_CHARS): Promise<unknown> {
  const arrays = await splitArrays(text, runChars);
  if (!arrays?.length) return JSON.parse(text);
  // the skeleton: every split array replaced by [index] (no other array sits directly under the top
  // level, so every array value there is one of ours)
  const parts: string[] = [];
  let at = 0;
  arrays.forEach((a, i) => {
    parts.push(text.slice(at, a.open), `[${i}]`);
    at = a.close + 1;
  });
  parts.push(text.slice(at));
  const top = JSON.parse(parts.join("")) as Record<string, unknown>;
  const values: unknown[][] = [];
  for (const a of arrays) {
    const out: unknown[] = [];
    const { items } = a;
    // one whitespace-only item is an empty array; a blank item beside others (`[1,]`) is what JSON.parse refuses
    const blank = (k: number) => {
      let c = items[k][0];
      while (c < items[k][1] && isSpace(text.charCodeAt(c))) c++;
      return c === items[k][1];
    };
    if (items.length > 1) for (let k = 0; k < items.length; k++) if (blank(k)) return JSON.parse(text);
    if (!(items.length === 1 && blank(0))) {
      for (let i = 0; i < items.length; ) {
        let j = i;
        while (j + 1 < items.length && items[j + 1][1] - items[i][0] <= runChars) j++;
        // the run's text holds the commas between its items: `[` + it + `]` is valid iff each item is
        for (const v of JSON.parse(`[${text.slice(items[i][0], items[j][1])}]`) as unknown[]) out.push(v);
        i = j + 1;
        if (i < items.length) await nextTurn();
      }
    }
    values.push(out);
  }
  for (const key of Object.keys(top)) {
    const v = top[key];
    // defineProperty: an own "__proto__" key (JSON.parse makes one) must stay a plain property
    if (Array.isArray(v))
      Object.defineProperty(top, key, {
        value: values[v[0] as number],
        writable: true,
        enumerable: true,
        configurable: true,
      });
  }
  return top;
}

/**
 * The arrays directly under a top-level object and their items' spans, scanning `runChars` per turn;
 * undefined when the text is not a top-level object (then JSON.parse judges it whole). Strings are
 * skipped with their escapes; structure outside them is trusted only as far as JSON.parse later
 * confirms it.
 */
async function splitArrays(text: string, runChars: number): Promise<SplitArray[] | undefined> {
  let i = 0;
  const len = text.length;
  while (i < len && isSpace(text.charCodeAt(i))) i++;
  if (text.charCodeAt(i) !== 0x7b) return undefined;
  const arrays: SplitArray[] = [];
  let depth = 0;
  let current: SplitArray | undefined;
  let itemStart = 0;
  let inString = false;
  let budget = runChars;
  for (; i < len; i++) {
    if (--budget === 0) {
      budget = runChars;
      await nextTurn();
    }
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === BACKSLASH) i++;
      else if (c === QUOTE) inString = false;
      continue;
    }
    if (c === QUOTE) inString = true;
    else if (c === 0x7b || c === 0x5b) {
      depth++;
      if (depth === 2 && c === 0x5b) {
        current = { open: i, close: -1, items: [] };
        itemStart = i + 1;
      }
    } else if (c === 0x7d || c === 0x5d) {
      // a split array closed by `}`: its content would be judged out of place; JSON.parse refuses the whole
      if (depth === 2 && current && c === 0x7d) return undefined;
      if (depth === 2 && current) {
        current.items.push([itemStart, i]);
        current.close = i;
        arrays.push(current);
        current = undefined;
      }
      depth--;
      if (depth < 0) return undefined;
    } else if (c === 0x2c && depth === 2 && current) {
      current.items.push([itemStart, i]);
      itemStart = i + 1;
    }
  }
  // an array left open: the text is invalid, JSON.parse says so
  return current ? undefined : arrays;
}

const isSpace = (c: number) => c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;
