/**
 * The policy text the operator PUTs starts with a HuJSON comment naming the hash of the policy it
 * holds: `// tailnet-operator policy sha256:<hex> …`. Headscale stores the text verbatim and GET
 * returns it so (juanfont/headscale v0.29 hscontrol/grpcv1.go SetPolicy → SetPolicyInDB(p), GetPolicy
 * → p.Data; hscontrol/db/policy.go; the policy is parsed as HuJSON, so the comment is allowed), and
 * comments do not change the canonical hash (canonical.ts hashOfLivePolicy). So the stored policy
 * itself tells whether it is what the operator wrote: the marker is there and the text's own hash
 * equals it. An edit outside the operator either drops the line or changes the text under it.
 * Unlike status.policy.appliedHash, this cannot go stale in Metacontroller's informer cache.
 */
import { hashOfLivePolicy } from "./canonical.js";

const MARKER = /^\/\/ tailnet-operator policy (sha256:[0-9a-f]{64})(?=[ \n\r])/;

/** The text to PUT: the marker line, then the pretty-printed policy whose hash it names. */
export function markedPolicyText(hash: string, text: string): string {
  return `// tailnet-operator policy ${hash} (written by tailnet-operator; edits here are overwritten: change the Tailnet's base policy instead)\n${text}`;
}

/** The hash the marker names when the text is intact (the operator wrote it as it is); otherwise undefined. */
export function operatorWrittenHash(text: string): string | undefined {
  const m = MARKER.exec(text);
  if (!m) return undefined;
  const h = hashOfLivePolicy(text);
  return h.ok && h.hash === m[1] ? m[1] : undefined;
}
