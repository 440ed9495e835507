/**
 * A large hook body parsed as it arrives, never held whole (src/server/read-body.ts readHookBody).
 * A Tailnet sync carries every workload object of the cluster (74 MiB at 20,000): read into one
 * buffer, turned into one string and parsed, the body, its text and its objects were all alive at
 * the parse's peak. Here the byte scan that drops the unread members (src/server/dropper.ts) also
 * cuts out each object of `related.<group>` and `children.<group>` as soon as its closing brace
 * arrives; each is parsed by JSON.parse on its own (a few KiB), and the rest of the body (parent,
 * controller, the group maps) is kept as text with a placeholder `{"i":N}` where object N was. At
 * the end the rest is parsed and every placeholder replaced by its object. What is held at once is
 * the objects parsed so far, the rest's text and one object in flight, each drawn from the
 * request's lease.
 *
 * The value is the one JSON.parse gives for the whole body (after the drops): a placeholder stands
 * where a complete value stood, so the rest is valid JSON exactly when the body is; duplicate keys
 * keep JSON.parse's rule (the last value, at the first key's place) because the rest is parsed by
 * JSON.parse too and its last placeholder names the last object; keys are compared decoded.
 */
import { BodyError, checkPoisoning, poisonedKey, type RelatedStatusReads } from "./body.js";
import { type CutSink, UnreadDropper } from "./dropper.js";
import { type Lease, OverloadedError } from "./limits.js";

/** Bytes drawn per parsed object beyond its text: its header in the heap, its placeholder in the rest. */
const OBJECT_OVERHEAD = 64;

const isPlainObject = (v: unknown): v is Record<string, unknown> =>
  v !== null && typeof v === "object" && !Array.isArray(v);

/** A key of an error message: quoted, and short (keys are names, never secret values; none in a malformed body). */
const shown = (key: string | undefined) =>
  JSON.stringify((key ?? "").length > 80 ? `${(key ?? "").slice(0, 80)}…` : (key ?? ""));

export class HookBodyAssembler implements CutSink {
  private rest_ = Buffer.alloc(0);
  private restLength = 0;
  private readonly objects: unknown[] = [];
  /** Objects holding a poisoning key, with where they were: refused only if the value keeps them (a later duplicate may replace one). */
  private readonly poisoned = new Map<number, string>();

  constructor(private readonly lease?: Lease) {}

  rest(buf: Buffer, n: number): void {
    this.append(buf, n);
  }

  object(buf: Buffer, n: number, top: string, group: string, name: string): void {
    const where = `${top}[${shown(group)}][${shown(name)}]`;
    const text = buf.toString("utf8", 0, n);
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch {
      throw new BodyError(`body: invalid JSON in ${where}`);
    }
    const bad = poisonedKey(value, text);
    if (bad) this.poisoned.set(this.objects.length, `body: a ${bad} key is not allowed in ${where}`);
    // the parsed object stays until the answer is sent: its kept text's size stands for it in the lease,
    // plus what an object and its placeholder cost whatever their text (a body of many `{}` is no cheaper)
    if (this.lease && !this.lease.take(n + OBJECT_OVERHEAD)) {
      throw new OverloadedError(
        `overloaded: hook bodies in flight are at the budget; ${this.objects.length} objects of this body parsed, the next (${n} bytes) cannot be held now`,
      );
    }
    const placeholder = `{"i":${this.objects.length}}`;
    this.reserve(placeholder.length);
    this.restLength += this.rest_.write(placeholder, this.restLength, "latin1");
    this.objects.push(value);
  }

  /** The value of the whole body, once the dropper's finish() gave the last settled bytes. */
  finish(last: Buffer): unknown {
    this.append(last, last.length);
    const text = this.rest_.toString("utf8", 0, this.restLength);
    this.lease?.give(this.rest_.length);
    this.rest_ = Buffer.alloc(0);
    if (text.trim() === "") throw new BodyError("body: empty; expected a JSON object");
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch {
      throw new BodyError("body: invalid JSON (outside the related and children objects)");
    }
    checkPoisoning(value, text, "");
    if (!isPlainObject(value)) return value;
    for (const top of ["related", "children"]) {
      const section = Object.hasOwn(value, top) ? value[top] : undefined;
      if (!isPlainObject(section)) continue;
      for (const group of Object.keys(section)) {
        const objects = section[group];
        if (!isPlainObject(objects)) continue;
        for (const name of Object.keys(objects)) {
          // every object at this place was cut: an object here is a placeholder
          const at = objects[name];
          if (!isPlainObject(at)) continue;
          const i = at.i as number;
          const bad = this.poisoned.get(i);
          if (bad) throw new BodyError(bad);
          const object = this.objects[i];
          // `constructor` holding `prototype` spans the cut (checkPoisoning sees each side alone)
          if (name === "constructor" && isPlainObject(object) && Object.hasOwn(object, "prototype"))
            throw new BodyError("body: a constructor.prototype key is not allowed");
          objects[name] = object;
        }
      }
    }
    return value;
  }

  /** Appends `buf[0, n)` to the rest. */
  private append(buf: Buffer, n: number): void {
    this.reserve(n);
    buf.copy(this.rest_, this.restLength, 0, n);
    this.restLength += n;
  }

  /** Room for `n` more bytes of the rest, its buffer grown from the lease. */
  private reserve(n: number): void {
    const need = this.restLength + n;
    if (need <= this.rest_.length) return;
    const capacity = Math.max(need, 4096, this.rest_.length * 2);
    if (this.lease && !this.lease.take(capacity)) {
      throw new OverloadedError(
        `overloaded: hook bodies in flight are at the budget; ${capacity} more bytes of this body cannot be held now`,
      );
    }
    const next = Buffer.allocUnsafe(capacity);
    this.rest_.copy(next, 0, 0, this.restLength);
    this.lease?.give(this.rest_.length);
    this.rest_ = next;
  }
}

/** A dropper that cuts for an assembler (see the file comment). */
export function streamingParser(
  buf: Buffer,
  relatedStatus: RelatedStatusReads | undefined,
  lease: Lease | undefined,
): { dropper: UnreadDropper; assembler: HookBodyAssembler } {
  const assembler = new HookBodyAssembler(lease);
  return { dropper: new UnreadDropper(buf, relatedStatus, assembler), assembler };
}
