/**
 * When this replica last answered a hook, and since when hooks have kept arriving without a pause.
 *
 * Two readers need it. The stale sweep (resource.ts) may withdraw an object's series only while hooks
 * flow: when Metacontroller stops, the webhook is unreachable or the token no longer matches, every
 * series would otherwise age out together and the NotReady alerts would resolve exactly when nobody
 * reconciles any more. The watchdog alert (TailnetHooksSilent) reads the time of the last answered hook
 * from `tailnet_hook_last_success_timestamp_seconds`.
 */
export class HookActivity {
  private last: number | undefined;
  private since = 0;

  /** `gapMs`: the longest pause that still counts as hooks flowing (a few resync periods). */
  constructor(private readonly gapMs: number) {}

  /** A hook was answered with a 2xx at `nowMs`. */
  answered(nowMs: number): void {
    if (this.last === undefined || nowMs - this.last > this.gapMs) this.since = nowMs;
    this.last = Math.max(this.last ?? nowMs, nowMs);
  }

  /** How long hooks have been arriving without a pause longer than the gap; 0 while they pause. */
  flowingForMs(nowMs: number): number {
    if (this.last === undefined || nowMs - this.last > this.gapMs) return 0;
    return nowMs - this.since;
  }
}
