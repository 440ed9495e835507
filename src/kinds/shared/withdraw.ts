/**
 * A withdrawn grant bounds the keys already minted (issue 31): when the Tailnet's administrators stop selecting a
 * namespace or take a tag grant back, the next sync of each refused agent object (egress, ingress, gateway)
 * expires the keys it minted, instead of leaving them valid for up to their lifetime. Ownership is proven, never
 * inferred from a tag: the ids the operator recorded in status (editors cannot write status) and the keys its key
 * Secrets hold, proven by the prefix Headscale lists for the id the Secret names (a Secret's annotation alone is
 * the tenant's to edit). Children are kept as observed (the refusal's rule); machines already joined stay joined:
 * a pre-auth key only matters when a node registers.
 *
 * The refusal's sync observed nothing in Headscale (resolveWorkload refuses before any read), so this is a small
 * observe → plan → act of its own, run in the kind's act stage: the cached key list, a pure plan, the expiries
 * through the view. A list that cannot be read writes nothing.
 */
import type { HsPreAuthKey } from "../../headscale/types.js";
import { isRecord, type K8sObject, objectsOf } from "../../k8s/objects.js";
import { previousStatus } from "../../pipeline/status.js";
import type { HookDeps, HookRequest } from "../../pipeline/types.js";
import { AUTHKEY_DATA_KEY, observedKeys, provenBy, statusKeyIds } from "./authkey.js";
import { keptTagRefusal } from "./kept-tags.js";
import { secretValue } from "./secrets.js";
import { resolveWorkload } from "./workload.js";

/** The refusals that mean "the administrators withdrew what this object had": its keys go. */
export const WITHDRAWN_REASONS: readonly string[] = ["TagNotGranted", "NamespaceNotAllowed"];

/** Key ids the object's status recorded: status.preAuthKeyIds, and a gateway's status.node(s)[].preAuthKeyId. */
export function recordedAgentKeyIds(parent: K8sObject): string[] {
  const status = previousStatus(parent);
  const nodes = [status.node, ...(Array.isArray(status.nodes) ? status.nodes : [])];
  const fromNodes = nodes.flatMap((n) => (isRecord(n) && typeof n.preAuthKeyId === "string" ? [n.preAuthKeyId] : []));
  return [...statusKeyIds(parent), ...fromNodes.filter((id) => /^[0-9]+$/.test(id))];
}

/** Pure: the keys to expire — recorded or proven by a key Secret, and still valid in Headscale's list. */
export function planWithdrawal(
  recorded: readonly string[],
  secrets: readonly { keyId: string; key: string | undefined }[],
  listed: readonly HsPreAuthKey[],
  now: Date,
): string[] {
  const byId = new Map(listed.map((k) => [k.id, k]));
  const owned = new Set(recorded);
  for (const s of secrets) {
    const k = byId.get(s.keyId);
    if (k && s.key && provenBy(k, s.key)) owned.add(k.id);
  }
  const valid = (k: HsPreAuthKey) => k.expiration === null || Date.parse(k.expiration) > now.getTime();
  return [...owned]
    .flatMap((id) => {
      const k = byId.get(id);
      return k && valid(k) ? [id] : [];
    })
    .sort((a, b) => Number(a) - Number(b));
}

/**
 * Expires the keys of an object refused for `reason` (when it is a withdrawal); returns the ids expired. A
 * TagInUse counts only when it is the kept-tag refusal (kept-tags.ts): keys minted under a tag another object kept
 * carry that object's identity. The node-based TagInUse (an explicit tag someone else's node carries) expires
 * nothing: it is judged from a node list and may be transient.
 */
export async function withdrawRefusedKeys(
  req: HookRequest,
  deps: HookDeps,
  reason: string | undefined,
): Promise<string[]> {
  if (!reason || !(WITHDRAWN_REASONS.includes(reason) || reason === "TagInUse")) return [];
  const secrets = observedKeys(objectsOf(req.children, "v1", "Secret")).map((k) => ({
    keyId: k.keyId,
    key: secretValue(k.secret, AUTHKEY_DATA_KEY),
  }));
  const recorded = recordedAgentKeyIds(req.parent);
  if (!recorded.length && !secrets.length) return [];
  // the connection without admission: what it removes is only what the object minted
  const ctx = resolveWorkload(req, deps, { cleanup: true });
  if (!ctx.ok) return [];
  if (reason === "TagInUse" && !keptTagRefusal(req.parent, ctx.tailnet, ctx.settings.tagPrefix)) return [];
  const view = deps.views.view(ctx.conn);
  const keys = await view.preAuthKeys();
  if (!keys.ok) return [];
  const ids = planWithdrawal(recorded, secrets, keys.value, deps.now());
  const expired: string[] = [];
  for (const id of ids) {
    const outcome = await view.expirePreAuthKey(id);
    if (outcome.ok) expired.push(id);
    else deps.log.warn({ object: who(req), keyId: id, error: outcome.error.message }, "refused: key not expired yet");
  }
  if (expired.length) deps.log.info({ object: who(req), reason, keys: expired }, "refused: the keys it minted expired");
  return expired;
}

const who = (req: HookRequest) => `${req.parent.kind} ${req.parent.metadata.namespace}/${req.parent.metadata.name}`;
