/**
 * What every pod template the operator renders carries (agents and gateways) beyond the tailscale
 * container: the non-root pod security context, and the config-hash annotation that rolls the pods when
 * anything they read at start changes.
 */

import { createHash } from "node:crypto";

export const CONFIG_HASH_ANNOTATION = "tailnet.internal/config-hash";

/** A short, stable hash of everything the pods read at start (the pod-template annotation). */
export function configHash(...parts: unknown[]): string {
  return createHash("sha256").update(JSON.stringify(parts)).digest("hex").slice(0, 16);
}

/** Pod-level security of every pod the operator runs (agents and gateways): non-root, seccomp. */
export const POD_SECURITY_CONTEXT = {
  runAsNonRoot: true,
  runAsUser: 65532,
  runAsGroup: 65532,
  fsGroup: 65532,
  seccompProfile: { type: "RuntimeDefault" },
} as const;
