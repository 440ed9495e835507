/** docs/reference/reasons.md is assembled from one section per kind; this reads and checks it. */
import { existsSync, readFileSync } from "node:fs";

export const REASON_SECTIONS = ["tailnet", "egress", "ingress", "site", "gateway"] as const;

const INTRO = `# Conditions and reasons

Every condition the operator writes, per kind, with what each reason means and what to do about it.
\`Ready\` (every kind but Tailnet) is never a bare "not ready": it repeats the reason and message of the
first blocking condition, in the order given for the kind. A failed observation (Headscale down, agent
not scraped) is reported as \`Unknown\` with the reason saying so — never guessed as \`True\`.

Reasons every workload kind can report before its ordered blockers:

| Reason | Status | Meaning | Remedy |
|---|---|---|---|
| \`InvalidSpec\` | False | The spec has a problem the CRD schema cannot catch (duplicate names, a CIDR with host bits, overlapping prefixes inside one object). The message names the field. Children are kept as they were. | Fix the field named in the message. |
| \`NoTailnet\` | False | \`spec.tailnetRef\` names a Tailnet that does not exist. | Create the Tailnet or fix the reference. |
| \`NoAPIKey\` | False | The Tailnet has not published its credentials Secret yet (its API key Secret is missing). | Create the API key Secret the Tailnet names; see the Tailnet's \`ApiKeyValid\`. |

For a Tailnet, \`InvalidSpec\` is reported on \`PolicyRendered\`.

`;

export function assembleReasonsPage(root: URL): string {
  const parts = REASON_SECTIONS.map((k) => new URL(`docs/reference/reasons/${k}.md`, root))
    .filter((u) => existsSync(u))
    .map((u) => readFileSync(u, "utf8").trim());
  return `${INTRO}${parts.join("\n\n")}\n`;
}

/** `## Kind` section → the first-column values of its tables (reason names, backticks stripped). */
export function reasonsByKind(page: string): Map<string, Set<string>> {
  const out = new Map<string, Set<string>>();
  let kind: string | undefined;
  for (const line of page.split("\n")) {
    const h = line.match(/^## (\w+)/);
    if (h) {
      kind = h[1];
      out.set(kind, new Set());
      continue;
    }
    const row = line.match(/^\|\s*`?([A-Za-z]+)`?\s*\|/);
    if (kind && row && !["Reason", "---"].includes(row[1])) out.get(kind)?.add(row[1]);
  }
  return out;
}
