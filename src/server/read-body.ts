/**
 * Reading a hook body within the hook server's limits (src/server/limits.ts): the buffer grows
 * as bytes arrive, every growth drawn from the request's lease, the whole body within a deadline.
 */
import {
  BodyError,
  BodyTooLargeError,
  dropUnread,
  parseHookText,
  type RelatedStatusReads,
  STREAM_DROP_BYTES,
  UnreadDropper,
} from "./body.js";
import { type Lease, OverloadedError } from "./limits.js";
import { type HookBodyAssembler, streamingParser } from "./stream-body.js";

/** 408: the body did not arrive in time (a slow or stalled sender). */
export class BodyTimeoutError extends Error {
  readonly statusCode = 408;
  readonly code = "TAILNET_BODY_TIMEOUT";
}

/** The first buffer of a body; it doubles as bytes arrive (never sized from Content-Length alone). */
const FIRST_CAPACITY = 64 * 1024;

export interface ReadBodyOptions {
  /** See dropUnread. */
  drop?: { relatedStatus?: RelatedStatusReads };
  /** Bytes are drawn from it before they are allocated (src/server/limits.ts); without it, no budget. */
  lease?: Lease;
  /** The whole body must arrive within this, else BodyTimeoutError (408). */
  timeoutMs?: number;
}

/**
 * Reads the request body up to `limit` bytes into one buffer that grows as bytes arrive: a
 * lying or huge Content-Length allocates nothing up front, and every growth is drawn from the
 * lease first (OverloadedError, 503, when the budget is spent). The buffer doubles up to the
 * announced length (Metacontroller always sends it), so an honest body ends in a buffer of
 * exactly its size. With `drop` (see dropUnread) the result is the body without the unread
 * members: a body announcing at least STREAM_DROP_BYTES is scanned while it arrives
 * (UnreadDropper, chunk by chunk, so a Tailnet sync of 20,000 workloads never blocks the event
 * loop for the whole scan and the scan overlaps the transfer); a smaller one once at the end.
 */
export function readBody(
  headers: Record<string, string | string[] | undefined>,
  payload: NodeJS.ReadableStream,
  limit: number,
  what: string,
  opts: ReadBodyOptions = {},
): Promise<Buffer> {
  return readInto(headers, payload, limit, what, opts, false) as Promise<Buffer>;
}

const declaredLength = (headers: Record<string, string | string[] | undefined>) => {
  const declared = Number(headers["content-length"]);
  return Number.isInteger(declared) && declared >= 0 ? declared : undefined;
};

/**
 * A hook body read and parsed within the limits (unread members dropped as in readBody). A body
 * announcing at least STREAM_DROP_BYTES (or no length) is parsed while it arrives, object by
 * object, and never held whole (src/server/stream-body.ts): what its lease holds is the kept text
 * of the objects parsed so far, the rest of the body and the bytes in flight. A smaller one is
 * read whole and parsed once. Invalid JSON is a BodyError (400) naming where, as soon as the scan
 * can tell; the rest of the body is then drained unread.
 */
export async function readHookBody(
  headers: Record<string, string | string[] | undefined>,
  payload: NodeJS.ReadableStream,
  limit: number,
  what: string,
  opts: ReadBodyOptions = {},
): Promise<unknown> {
  const known = declaredLength(headers);
  if (known !== undefined && known < STREAM_DROP_BYTES) {
    return parseHookText((await readBody(headers, payload, limit, what, opts)).toString("utf8"));
  }
  return readInto(headers, payload, limit, what, opts, true);
}

function readInto(
  headers: Record<string, string | string[] | undefined>,
  payload: NodeJS.ReadableStream,
  limit: number,
  what: string,
  opts: ReadBodyOptions,
  parse: boolean,
): Promise<Buffer | unknown> {
  const known = declaredLength(headers);
  if (known !== undefined && known > limit) return Promise.reject(new BodyTooLargeError(limit, what));
  const lease = opts.lease;
  const drop = opts.drop;
  return new Promise((resolve, reject) => {
    const ceiling = known ?? limit;
    let buf = Buffer.alloc(0);
    let assembler: HookBodyAssembler | undefined;
    let dropper: UnreadDropper | undefined;
    if (parse) ({ dropper, assembler } = streamingParser(buf, drop?.relatedStatus, lease));
    else if (drop && known !== undefined && known >= STREAM_DROP_BYTES)
      dropper = new UnreadDropper(buf, drop.relatedStatus);
    let received = 0; // bytes held in buf (dropped ones are compacted away)
    let arrived = 0; // bytes of the body so far
    const timer = opts.timeoutMs
      ? setTimeout(
          () =>
            finish(new BodyTimeoutError(`body: not received within ${opts.timeoutMs} ms (${arrived} bytes arrived)`)),
          opts.timeoutMs,
        )
      : undefined;
    const finish = (err?: Error, body?: unknown) => {
      clearTimeout(timer);
      payload.removeListener("data", onData);
      payload.removeListener("end", onEnd);
      payload.removeListener("error", onError);
      if (err) {
        // the bytes are dropped: nothing more is buffered, and the lease returns them
        payload.resume();
        buf = Buffer.alloc(0);
        lease?.close();
        reject(err);
      } else {
        // parsed, the buffer is garbage; read, it is the body and stays drawn until the answer
        if (parse) lease?.give(buf.length);
        resolve(body);
      }
    };
    const grow = (need: number): Error | undefined => {
      const capacity = Math.min(ceiling, Math.max(need, FIRST_CAPACITY, buf.length * 2));
      if (lease && !lease.take(capacity)) {
        return new OverloadedError(
          `overloaded: hook bodies in flight are at the budget; ${arrived} bytes of this body arrived, ${capacity} more cannot be held now`,
        );
      }
      const next = Buffer.allocUnsafe(capacity);
      buf.copy(next, 0, 0, received);
      lease?.give(buf.length);
      buf = next;
      dropper?.moveTo(next);
      return undefined;
    };
    const onData = (chunk: Buffer | string) => {
      const b = typeof chunk === "string" ? Buffer.from(chunk) : chunk;
      arrived += b.length;
      if (arrived > limit) return finish(new BodyTooLargeError(limit, what));
      if (known !== undefined && arrived > known) return finish(new BodyError("body: longer than its Content-Length"));
      // what was dropped (or, parsing, handed over) makes room before the buffer grows
      if (dropper && (assembler || received + b.length > buf.length)) received -= dropper.compact(received);
      if (received + b.length > buf.length) {
        const err = grow(received + b.length);
        if (err) return finish(err);
      }
      b.copy(buf, received);
      received += b.length;
      if (!dropper) return;
      try {
        dropper.feed(received);
      } catch (e) {
        return finish(e as Error);
      }
      if (dropper.isBroken) finish(new BodyError(`body: invalid JSON within the first ${arrived} bytes`));
    };
    const onEnd = () => {
      if (known !== undefined && arrived !== known)
        return finish(new BodyError("body: shorter than its Content-Length"));
      const body = buf.subarray(0, received);
      if (!assembler) {
        return finish(
          undefined,
          dropper ? dropper.finish(received) : drop ? dropUnread(body, drop.relatedStatus) : body,
        );
      }
      try {
        const rest = (dropper as UnreadDropper).finish(received);
        if ((dropper as UnreadDropper).isBroken) throw new BodyError("body: invalid JSON (incomplete at its end)");
        finish(undefined, assembler.finish(rest));
      } catch (e) {
        finish(e as Error);
      }
    };
    const onError = (e: Error) => finish(Object.assign(e, { statusCode: 400 }));
    payload.on("data", onData);
    payload.on("end", onEnd);
    payload.on("error", onError);
    payload.resume();
  });
}
