/**
 * The fresh writer's checks (pure). Before the derived zone is (re)written and before
 * Registered=True/FreshRuntimeReady is reported, the operator verifies:
 *   1. bootstrap key — the key in the Secret child is unexpired and matches Headscale's record
 *      (tags exactly the gateway tag, single-use — reusable with spec.replicas > 1 —, not ephemeral,
 *      same expiration);
 *   2. node provenance — the registered node was registered with our bootstrap key and carries
 *      exactly the gateway tag (see nodes.ts);
 *   3. pod template — the live Deployment's pod template still hashes to the stamp the operator
 *      rendered into it (see template.ts).
 * A failed check blocks every write of the fresh writer: Registered=False/FreshBlocked, the derived
 * zone keeps its last state, and the message names the failed check(s).
 */

import { toK8sTime } from "../../../conditions/condition.js";
import { keyById } from "../../../headscale/lists.js";
import type { HsPreAuthKey } from "../../../headscale/types.js";
import type { K8sObject } from "../../../k8s/objects.js";
import { liveTemplateDrift } from "./template.js";

export type FreshCheckName = "bootstrap key" | "node provenance" | "pod template";

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
  /** spec.replicas > 1: the pods share one reusable key. */
  reusable = false,
): FreshProblem | undefined {
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

export function checkPodTemplate(liveDeployment: K8sObject | undefined): FreshProblem | undefined {
  if (!liveDeployment) return undefined; // nothing runs yet, so nothing can have drifted
  const drift = liveTemplateDrift(liveDeployment);
  return drift.drifted ? { check: "pod template", message: drift.message } : undefined;
}

export function checkProvenance(problems: readonly string[]): FreshProblem | undefined {
  return problems.length ? { check: "node provenance", message: problems.join("; ") } : undefined;
}

/** "fresh writer blocked by <check>: <why>; … The derived zone keeps its last state." */
export function freshBlockedMessage(problems: readonly FreshProblem[]): string {
  const parts = problems.map((p) => `${p.check}: ${p.message}`);
  return `fresh writer blocked by ${parts.join("; ")}. The derived zone keeps its last state.`;
}
