/**
 * What Tailnet syncs remember between each other about one Headscale connection: policy/check verdicts
 * (check.ts), the backing-off failed policy write (act.ts), and which objects Headscale refused a render over
 * (isolate.ts). Soft state: memory a sync may lose at any time (a restart, an evicted view) at the cost of one
 * more request, never of a wrong answer. Keyed by the connection's HeadscaleView, so it lives and dies with the
 * connection it is about, as the view's caches do, while the view itself stays about Headscale.
 */
import type { Outcome } from "../../../headscale/capabilities.js";
import type { HeadscaleError } from "../../../headscale/errors.js";
import type { HsPolicy } from "../../../headscale/types.js";
import type { HeadscaleView } from "../../../headscale/view.js";

/** A policy/check verdict for one policy text (by its canonical hash), reused until `expiresAt`. */
export interface CheckVerdict {
  outcome: Outcome<void>;
  expiresAt: number;
}

/** A failed policy write of one Tailnet and rendered hash, retried no sooner than `retryAt`. */
export interface WriteBackoff {
  tailnet: string;
  hash: string;
  failures: number;
  retryAt: number;
  error: HeadscaleError;
  /** The policy read back right after the failed PUT (absent when not read, e.g. file mode). */
  readback?: Outcome<HsPolicy | null>;
}

/** The contributions (by key) policy/check found Headscale refuses a render over, reused until `expiresAt`. */
export interface Isolation {
  culprits: { key: string; message: string }[];
  expiresAt: number;
}

export interface TailnetSoftState {
  /** policy/check verdicts per canonical policy hash (accepted, rejected, endpoint missing; never a 5xx). */
  readonly checkVerdicts: Map<string, CheckVerdict>;
  /** The backing-off failed policy write per Tailnet name (at most one hash each: only the current render). */
  readonly writeBackoff: Map<string, WriteBackoff>;
  /**
   * Per rejected render (canonical hash): the contributions policy/check found Headscale refuses it over
   * (isolate.ts), so a resync of the same inputs re-checks the result instead of bisecting.
   */
  readonly isolations: Map<string, Isolation>;
}

const states = new WeakMap<HeadscaleView, TailnetSoftState>();

/** The Tailnet soft state of `view`'s connection, made empty on first use; collected with the view. */
export function softStateOf(view: HeadscaleView): TailnetSoftState {
  let state = states.get(view);
  if (!state) {
    state = { checkVerdicts: new Map(), writeBackoff: new Map(), isolations: new Map() };
    states.set(view, state);
  }
  return state;
}
