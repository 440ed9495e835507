/**
 * One part of the Headscale view's cache (view.ts): a value loaded lazily, kept for a TTL, and single-flight, so
 * concurrent syncs share one request. Failures are observations, never thrown, and are kept only briefly.
 */
import { asHeadscaleError } from "./capabilities.js";
import type { HeadscaleError, Obs } from "./errors.js";

/** Failures are cached at most this long, so recovery is noticed within seconds even with a long TTL. */
const MAX_FAILURE_TTL_MS = 2000;

/** One lazily loaded, TTL-cached, single-flight value. */
export class CachedPart<T> {
  private entry: { obs: Obs<T>; expiresAt: number } | undefined;
  private inflight: Promise<Obs<T>> | undefined;
  /** Amendments made while `inflight` was loading, applied to its value when it settles (see amend). */
  private inflightAmends: ((value: T) => void)[] = [];
  /** Bumped by invalidate() so a load that started before a write is not cached after it. */
  private generation = 0;

  constructor(
    private readonly load: () => Promise<T>,
    private readonly ttlMs: number,
    private readonly now: () => Date,
    private readonly onFailure: (error: HeadscaleError) => void = () => {},
  ) {}

  get(): Promise<Obs<T>> {
    if (this.entry && this.now().getTime() < this.entry.expiresAt) return Promise.resolve(this.entry.obs);
    if (this.inflight) return this.inflight;
    const generation = this.generation;
    const amends: ((value: T) => void)[] = [];
    this.inflightAmends = amends;
    const inflight = this.settle().then((obs) => {
      if (generation === this.generation) {
        if (obs.ok) for (const fn of amends) fn(obs.value);
        const ttl = obs.ok ? this.ttlMs : Math.min(this.ttlMs, MAX_FAILURE_TTL_MS);
        this.entry = { obs, expiresAt: obs.at.getTime() + ttl };
      }
      if (this.inflight === inflight) this.inflight = undefined;
      if (!obs.ok) this.onFailure(obs.error);
      return obs;
    });
    this.inflight = inflight;
    return inflight;
  }

  /**
   * A write whose effect is known exactly (a key we created): applied in place to the cached value and to the
   * value of a read in flight, which may have started before the write landed. `fn` must be idempotent (the read
   * may already hold the write's effect). A failed observation stays failed.
   */
  amend(fn: (value: T) => void): void {
    if (this.entry?.obs.ok) fn(this.entry.obs.value);
    if (this.inflight) this.inflightAmends.push(fn);
  }

  /** The cached successful value, if any (not loading it). */
  cachedValue(): T | undefined {
    return this.entry?.obs.ok ? this.entry.obs.value : undefined;
  }

  /** Drops a cached success (not a cached failure, which already expires within seconds). */
  dropSuccess(): void {
    if (this.entry?.obs.ok) this.invalidate();
  }

  invalidate(): void {
    this.generation++;
    this.entry = undefined;
    this.inflight = undefined;
  }

  private async settle(): Promise<Obs<T>> {
    try {
      const value = await this.load();
      return { ok: true, value, at: this.now() };
    } catch (error) {
      return { ok: false, error: asHeadscaleError(error), at: this.now() };
    }
  }
}
