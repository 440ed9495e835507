/** Kubernetes-style conditions, computed fresh each sync and merged with the previous status. */
export type ConditionStatus = "True" | "False" | "Unknown";

export interface Condition {
  type: string;
  status: ConditionStatus;
  reason: string;
  message: string;
  lastTransitionTime: string;
  observedGeneration: number;
}

/** A condition as decide() produces it: no time, no generation (those come from the merge). */
export interface ConditionInput {
  type: string;
  status: ConditionStatus;
  reason: string;
  message: string;
}

export const cond = (type: string, status: ConditionStatus, reason: string, message = ""): ConditionInput => ({
  type,
  status,
  reason,
  message,
});

/** Maps a tri-state to a status: a missing observation is Unknown, never a guess (see vitess k8s.libsonnet). */
export function triState(value: boolean | null | undefined): ConditionStatus {
  if (value === true) return "True";
  if (value === false) return "False";
  return "Unknown";
}

/** RFC 3339 at second precision, as the API server stores metav1.Time. */
export function toK8sTime(d: Date): string {
  return new Date(Math.floor(d.getTime() / 1000) * 1000).toISOString().replace(".000Z", "Z");
}

function previousConditions(previous: unknown): Map<string, Partial<Condition>> {
  const out = new Map<string, Partial<Condition>>();
  if (!Array.isArray(previous)) return out;
  for (const c of previous) {
    if (c && typeof c === "object" && typeof (c as { type?: unknown }).type === "string") {
      out.set((c as Condition).type, c as Partial<Condition>);
    }
  }
  return out;
}

/**
 * Merges freshly decided conditions with the parent's previous ones: `lastTransitionTime` is kept
 * when the status did not change (so a repeat sync yields a byte-identical status), and set to
 * `now` otherwise. Output order is the order of `next` (each kind lists its types in the order of
 * the reasons page), which keeps status deterministic.
 */
export function mergeConditions(
  previous: unknown,
  next: readonly ConditionInput[],
  generation: number,
  now: Date,
): Condition[] {
  const prev = previousConditions(previous);
  return next.map((c) => {
    const old = prev.get(c.type);
    const keep = old && old.status === c.status && typeof old.lastTransitionTime === "string";
    return {
      type: c.type,
      status: c.status,
      reason: c.reason,
      message: c.message,
      lastTransitionTime: keep ? (old.lastTransitionTime as string) : toK8sTime(now),
      observedGeneration: generation,
    };
  });
}

/** One entry of a Ready staircase: a condition that blocks Ready unless `ok`. */
export interface Blocker {
  ok: boolean;
  reason: string;
  message: string;
}

/**
 * Ready is never a bare "not ready": it repeats the reason and message of the first blocker, in
 * the order the reasons page gives for the kind, or is True with `readyReason`.
 */
export function deriveReady(blockers: readonly Blocker[], readyReason: string, readyMessage = ""): ConditionInput {
  const first = blockers.find((b) => !b.ok);
  if (first) return cond("Ready", "False", first.reason, first.message);
  return cond("Ready", "True", readyReason, readyMessage);
}

/** A blocker from a condition that must have `good` status to let Ready through. */
export function blockerFrom(c: ConditionInput, good: ConditionStatus = "True"): Blocker {
  return { ok: c.status === good, reason: c.reason, message: c.message };
}
