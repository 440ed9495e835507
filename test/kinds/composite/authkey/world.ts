/**
 * The TailnetAuthKey end-to-end tests' starting point, in the identity world they share with TailnetUser
 * (test/kinds/shared/world.ts): the tag grant, the spec they start from, and applying a key.
 */
import { parentObject } from "../../../fixtures/hooks.js";
import type { IdentityWorld } from "../../shared/world.js";

/** A tag grant for namespace `ci` and the TailnetAuthKey spec the end-to-end tests start from. */
export const GRANT = { tags: [{ namespaceSelector: { matchLabels: { team: "ci" } }, tags: ["tag:ci-runner"] }] };
export const SPEC = {
  tailnetRef: { name: "home" },
  tags: ["tag:ci-runner"],
  reusable: true,
  expiry: "1h",
  renewBefore: "20m",
  secretName: "runner-join",
};

export function applyKey(w: IdentityWorld, spec: Record<string, unknown> = SPEC, name = "runners") {
  return w.mc.apply(
    parentObject("TailnetAuthKey", name, spec, { namespace: "ci", creationTimestamp: w.clock.now.toISOString() }),
  );
}
