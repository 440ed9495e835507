/**
 * PolicyGranted of a TailnetIngress (pure): its allowFrom held to the Tailnet's allowedIngressSources, and the grant
 * that is rendered for its tag.
 */
import { IngressCondition as C, IngressReason as R } from "../../../conditions/tables/ingress.js";
import { cond, type IngressCondition } from "./conditions.js";
import { settingsOf, type TailnetView } from "./facts.js";
import type { IngressSpec } from "./spec.js";

export function policyGranted(
  spec: IngressSpec,
  tailnet: TailnetView,
  tag: string | undefined,
): IngressCondition<"PolicyGranted"> {
  const settings = settingsOf(tailnet);
  if (!settings || !tag) {
    return cond(C.PolicyGranted, "Unknown", R.NoTailnet, `not evaluated: ${tailnet.ok ? "" : tailnet.message}`);
  }
  const denied = spec.allowFrom.filter((a) => !settings.allowedIngressSources.includes(a));
  if (denied.length > 0) {
    return cond(
      C.PolicyGranted,
      "False",
      R.PolicyDenied,
      `allowFrom ${denied.join(", ")} ${denied.length === 1 ? "is" : "are"} not in Tailnet ${settings.name}'s allowedIngressSources, so no grant to ${tag} is rendered`,
    );
  }
  if (spec.allowFrom.length === 0) {
    return cond(
      C.PolicyGranted,
      "True",
      R.Granted,
      `allowFrom is empty: no grant to ${tag} is rendered; only the base policy gives access`,
    );
  }
  const ports = [...new Set(spec.exposes.map((e) => e.port))].sort((a, b) => a - b).map((p) => `tcp:${p}`);
  const dryRun = settings.policyMode === "DryRun" ? " (the Tailnet is in DryRun: rendered, not applied)" : "";
  return cond(
    C.PolicyGranted,
    "True",
    R.Granted,
    `${spec.allowFrom.join(", ")} may connect to ${tag} on ${ports.join(", ")}${dryRun}`,
  );
}
