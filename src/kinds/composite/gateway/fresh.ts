/**
 * The fresh writer's checks (pure). Before the derived zone is (re)written and before
 * Registered=True/FreshRuntimeReady is reported, the operator verifies:
 *   1. bootstrap key — the key in the stable Secret child is unexpired and matches Headscale's record
 *      (tags exactly the gateway tag, reusable, not ephemeral, same expiration);
 *   2. node identity — every node wearing the gateway tag or registered with one of our keys is a replica's
 *      node with continuity (the id and node key recorded for it), a predecessor awaiting deletion, or a
 *      replica registering right now (see nodes.ts; issue 32 replaced provenance by a single-use key);
 *   3. pod template — each replica StatefulSet's live pod template still hashes to the stamp the operator
 *      rendered into it (see template.ts).
 * A failed check blocks every write of the fresh writer: Registered=False/FreshBlocked, the derived
 * zone keeps its last state, and the message names the failed check(s).
 */

import { toK8sTime } from "../../../conditions/condition.js";
import { keyById } from "../../../headscale/lists.js";
import type { HsPreAuthKey } from "../../../headscale/types.js";
import type { K8sObject } from "../../../k8s/objects.js";
import { liveTemplateDrift } from "../../shared/template-hash.js";

export type FreshCheckName = "bootstrap key" | "node identity" | "pod template";

export interface FreshProblem {
  check: FreshCheckName;
  message: string;
}

export interface BootstrapKeyState {
  keyId?: string;
  expiresAt?: Date;
  /** Why no fresh key could be made (Headscale's error; never contains the key). */
  error?: string;
}

/** Expirations within this much of each other are the same (the Secret keeps milliseconds, Headscale seconds). */
const EXPIRY_TOLERANCE_MS = 1000;

/** `records` undefined (the list could not be read): only what the Secret itself says is checked. */
export function checkBootstrapKey(
  key: BootstrapKeyState,
  records: readonly HsPreAuthKey[] | undefined,
  tag: string,
  now: Date,
): FreshProblem | undefined {
  // every replica registers with the one key, once (a new replica, a lost state): reusable, never ephemeral
  const reusable = true;
  const fail = (message: string): FreshProblem => ({ check: "bootstrap key", message });
  if (!key.keyId || !key.expiresAt) {
    return fail(`no bootstrap key: ${key.error ?? "none has been created yet"}`);
  }
  const id = key.keyId;
  if (key.expiresAt.getTime() <= now.getTime()) {
    const why = key.error ? `; creating a new one failed: ${key.error}` : "";
    return fail(`bootstrap key ${id} expired at ${toK8sTime(key.expiresAt)}${why}`);
  }
  if (!records) return undefined;
  const record = keyById(records, id);
  if (!record) return fail(`bootstrap key ${id} is not in Headscale's pre-auth key list (deleted there?)`);
  const drift: string[] = [];
  if (record.aclTags.length !== 1 || record.aclTags[0] !== tag) {
    drift.push(`tags [${record.aclTags.join(", ")}] (want [${tag}])`);
  }
  if (record.reusable !== reusable) drift.push(`reusable ${record.reusable} (want ${reusable})`);
  if (record.ephemeral) drift.push("ephemeral true (want false)");
  const hsExpiry = record.expiration ? Date.parse(record.expiration) : Number.NaN;
  if (Number.isNaN(hsExpiry) || hsExpiry <= now.getTime()) {
    drift.push(`expired in Headscale${record.expiration ? ` at ${record.expiration}` : ""}`);
  } else if (Math.abs(hsExpiry - key.expiresAt.getTime()) > EXPIRY_TOLERANCE_MS) {
    drift.push(`expiration ${record.expiration} (the Secret says ${toK8sTime(key.expiresAt)})`);
  }
  return drift.length ? fail(`bootstrap key ${id} drifted from Headscale's record: ${drift.join(", ")}`) : undefined;
}

/** Per replica StatefulSet (and the legacy Deployment while it runs): a workload not yet created cannot drift. */
export function checkPodTemplate(workloads: readonly K8sObject[]): FreshProblem | undefined {
  const drifted = workloads.map(liveTemplateDrift).flatMap((d) => (d.drifted ? [d.message] : []));
  return drifted.length ? { check: "pod template", message: drifted.join("; ") } : undefined;
}

export function checkIdentity(problems: readonly string[]): FreshProblem | undefined {
  return problems.length ? { check: "node identity", message: problems.join("; ") } : undefined;
}

/** "fresh writer blocked by <check>: <why>; … The derived zone keeps its last state." */
export function freshBlockedMessage(problems: readonly FreshProblem[]): string {
  const parts = problems.map((p) => `${p.check}: ${p.message}`);
  return `fresh writer blocked by ${parts.join("; ")}. The derived zone keeps its last state.`;
}
