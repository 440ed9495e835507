/**
 * The hook body parser (the reading itself, within the server's limits: read-body.ts). Metacontroller sends every object as its informer holds it: with
 * `metadata.managedFields` and, for objects made with `kubectl apply`, the
 * `kubectl.kubernetes.io/last-applied-configuration` annotation — about half the bytes of a
 * workload object, and no hook reads either. A Tailnet sync carries every workload object of the
 * cluster (tens of MiB at 20,000 workloads), so both are cut out of the raw bytes before
 * `JSON.parse`: never parsed, never held as objects. (Metacontroller's own
 * `metacontroller.k8s.io/last-applied-configuration` is kept: src/k8s/objects.ts reuseObserved
 * reads it.) So are the status members of related objects a kind never reads (RelatedStatusReads:
 * the Tailnet keeps 2 of a workload's status members, not its conditions). The rest is what `JSON.parse` gives, with fastify's default protection against
 * `__proto__` and `constructor.prototype` keys. The scan itself is src/server/dropper.ts; a large body
 * is parsed object by object as it arrives (src/server/stream-body.ts), to the same value.
 */

import { KUBECTL_LAST_APPLIED, MANAGED_FIELDS, type RelatedStatusReads, UnreadDropper } from "./dropper.js";

export { type CutSink, type RelatedStatusReads, STREAM_DROP_BYTES, UnreadDropper } from "./dropper.js";

/**
 * The body without what no hook reads, in one pass over the bytes: every `managedFields` and
 * `kubectl.kubernetes.io/last-applied-configuration` member wherever it appears as an object key,
 * and, for the related groups named in `relatedStatus`, each object's `status` but the members the
 * kind reads (RelatedStatusReads). The body
 * unchanged when anything looks malformed (then JSON.parse reports it). Works in place: `buf` is
 * overwritten (kept parts move left) and the result is a view of it.
 */
export function dropUnread(buf: Buffer, relatedStatus?: RelatedStatusReads): Buffer {
  // Nothing to drop (the usual egress, ingress, site or gateway resync): a native search instead of the scan.
  if (!relatedStatus?.size && buf.indexOf(MANAGED_FIELDS) === -1 && buf.indexOf(KUBECTL_LAST_APPLIED) === -1) {
    return buf;
  }
  return new UnreadDropper(buf, relatedStatus).finish();
}

/** dropUnread without related statuses: managedFields and kubectl's last-applied annotation. */
export const dropBookkeeping = (buf: Buffer): Buffer => dropUnread(buf);

const PROTO =
  /"(?:_|\\u005[Ff])(?:_|\\u005[Ff])(?:p|\\u0070)(?:r|\\u0072)(?:o|\\u006[Ff])(?:t|\\u0074)(?:o|\\u006[Ff])(?:_|\\u005[Ff])(?:_|\\u005[Ff])"\s*:/;
const CONSTRUCTOR =
  /"(?:c|\\u0063)(?:o|\\u006[Ff])(?:n|\\u006[Ee])(?:s|\\u0073)(?:t|\\u0074)(?:r|\\u0072)(?:u|\\u0075)(?:c|\\u0063)(?:t|\\u0074)(?:o|\\u006[Ff])(?:r|\\u0072)"\s*:/;

export class BodyError extends Error {
  readonly statusCode = 400;
}

/** The first own `__proto__` key, or `constructor` holding `prototype`, in a parsed value. */
function poisoned(value: unknown, proto: boolean, ctor: boolean): string | undefined {
  const stack: unknown[] = [value];
  while (stack.length) {
    const v = stack.pop();
    if (!v || typeof v !== "object") continue;
    if (proto && Object.hasOwn(v, "__proto__")) return "__proto__";
    if (ctor && Object.hasOwn(v, "constructor")) {
      const c = (v as Record<string, unknown>).constructor;
      if (c && typeof c === "object" && Object.hasOwn(c, "prototype")) return "constructor.prototype";
    }
    for (const x of Object.values(v)) if (x && typeof x === "object") stack.push(x);
  }
  return undefined;
}

/** The body's text without the bookkeeping members (see the file comment); the raw bytes are reused. */
export function hookBodyText(raw: Buffer, relatedStatus?: RelatedStatusReads): string {
  return dropUnread(raw, relatedStatus).toString("utf8");
}

/** Parses a hook body's text; throws BodyError (400) for invalid JSON or a poisoning key. */
export function parseHookText(text: string): unknown {
  if (text.trim() === "") throw new BodyError("body: empty; expected a JSON object");
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new BodyError("body: invalid JSON");
  }
  checkPoisoning(value, text, "");
  return value;
}

/** Throws BodyError when `value` (parsed from `text`) has a `__proto__` key or `constructor` holding `prototype`. */
export function checkPoisoning(value: unknown, text: string, where: string): void {
  const bad = poisonedKey(value, text);
  if (bad) throw new BodyError(`body: a ${bad} key is not allowed${where}`);
}

/** The poisoning key `value` (parsed from `text`) holds, if any: `__proto__` or `constructor.prototype`. */
export function poisonedKey(value: unknown, text: string): string | undefined {
  const proto = PROTO.test(text);
  const ctor = CONSTRUCTOR.test(text);
  return proto || ctor ? poisoned(value, proto, ctor) : undefined;
}

export const parseHookBody = (raw: Buffer): unknown => parseHookText(hookBodyText(raw));

/** A 413 naming the limit that applies to this kind's hooks. */
export class BodyTooLargeError extends Error {
  readonly statusCode = 413;
  readonly code = "TAILNET_BODY_TOO_LARGE";
  constructor(limit: number, what: string) {
    super(`body: larger than the limit of ${limit} bytes for ${what}`);
  }
}
