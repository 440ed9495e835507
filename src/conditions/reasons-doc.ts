/**
 * docs/reference/reasons.md, generated (`npm run docs`): one section per kind of REASON_TABLES, from
 * docs/reference/reasons/<kind>.md (the prose humans write) and the kind's ReasonTable (the truth about
 * which reasons each condition carries, with which status).
 *
 * In a kind's prose, each `### <Condition>` whose condition is in the table has a
 * `| Reason | Status | Meaning | Remedy |` table: its rows give Meaning and Remedy per (condition, reason) —
 * a row may name several reasons (`` `A`, `B` ``) that share them. The generated table has the table's
 * reasons in the table's order with the table's statuses (`True / False` for several); consecutive reasons
 * that share a prose row and a status stay one row. Everything else of the prose is copied as written
 * (other headings, text, tables such as a per-target list).
 *
 * A (condition, reason) of the table without prose, prose for a pair the table does not have, a
 * `### <Word>` reason table for a condition the table does not have, and a condition without its
 * section are problems: test/conditions/reasons-doc.test.ts fails on them, and on a committed page that
 * differs from the generated one.
 */
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { posix } from "node:path";
import type { ReasonTable } from "./table.js";
import { REASON_TABLES } from "./tables/index.js";

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

const TABLE_HEADER = "| Reason | Status | Meaning | Remedy |";
const TABLE_RULE = "|---|---|---|---|";

/** The prose file of a kind: `Tailnet` → tailnet.md, `TailnetEgress` → egress.md, `Service` → service.md. */
function proseFileOf(kind: string): string {
  const short = kind === "Tailnet" ? kind : kind.replace(/^Tailnet/, "");
  return `${short.toLowerCase()}.md`;
}

/** Cells of a markdown table row; a `|` inside backticks is text. */
function cellsOf(line: string): string[] {
  const cells: string[] = [];
  let cur = "";
  let code = false;
  for (const ch of line.trim().replace(/^\|/, "").replace(/\|$/, "")) {
    if (ch === "`") code = !code;
    if (ch === "|" && !code) {
      cells.push(cur.trim());
      cur = "";
    } else cur += ch;
  }
  cells.push(cur.trim());
  return cells;
}

/** `` `A`, `B` `` → ["A", "B"]. */
const reasonsOf = (cell: string) =>
  cell
    .split(",")
    .map((r) => r.trim().replace(/^`|`$/g, ""))
    .filter((r) => r !== "");

interface ProseRow {
  meaning: string;
  remedy: string;
  /** The statuses its Status cell names (`True / False`): which row a reason with several rows uses. */
  statuses: string[];
  /** Which row of its section it came from: reasons of one row may be rendered as one. */
  row: number;
}

export interface KindSection {
  /** The section as it goes into the page (trimmed). */
  text: string;
  /** What disagrees between the table and the prose, one line each, naming the kind, condition and reason. */
  problems: string[];
}

const statusText = (statuses: readonly string[]) => statuses.join(" / ");

/** One kind's section: the prose with each condition's reason table generated from `table`. */
export function renderKindSection(kind: string, table: ReasonTable, prose: string): KindSection {
  const problems: string[] = [];
  const lines = prose.trim().split("\n");
  const out: string[] = [];
  const seen = new Set<string>();
  let i = 0;
  while (i < lines.length) {
    const line = lines[i];
    out.push(line);
    i++;
    const heading = line.match(/^### (\w+)\s*$/);
    if (!heading) continue;
    const condition = heading[1];
    // The section's text up to its reason table (or the next heading, when it has none).
    while (i < lines.length && !lines[i].startsWith("#") && lines[i].trim() !== TABLE_HEADER) out.push(lines[i++]);
    if (i >= lines.length || lines[i].trim() !== TABLE_HEADER) {
      if (table[condition]) problems.push(`${kind} ${condition}: no "${TABLE_HEADER}" table under "### ${condition}"`);
      continue;
    }
    if (!table[condition]) {
      problems.push(`${kind} ${condition}: a reason table for a condition that ${kind}'s table does not have`);
      continue;
    }
    seen.add(condition);
    i++; // header
    if (lines[i]?.trim().startsWith("|---")) i++;
    const prose = new Map<string, ProseRow[]>();
    let row = 0;
    for (; i < lines.length && lines[i].startsWith("|"); i++, row++) {
      const [first = "", status = "", meaning = "", remedy = ""] = cellsOf(lines[i]);
      const statuses = status.split(/[/,]/).map((x) => x.trim());
      for (const reason of reasonsOf(first))
        prose.set(reason, [...(prose.get(reason) ?? []), { meaning, remedy, statuses, row }]);
    }
    const reasons = table[condition];
    for (const reason of prose.keys()) {
      if (!(reason in reasons))
        problems.push(`${kind} ${condition}/${reason}: prose for a reason the table does not have`);
    }
    // Per reason in table order, the prose rows it is shown with and the table statuses each one covers.
    const rows: { reason: string; statuses: string[]; prose?: ProseRow }[] = [];
    for (const [reason, statuses] of Object.entries(reasons)) {
      const found = prose.get(reason) ?? [];
      if (found.length === 0) problems.push(`${kind} ${condition}/${reason}: in the table, no prose row`);
      if (found.length <= 1) {
        rows.push({ reason, statuses: [...statuses], prose: found[0] });
        continue;
      }
      // Several rows for one reason: one per status, chosen by their Status cells, in the table's status order.
      const first = (p: ProseRow) => statuses.findIndex((st) => p.statuses.includes(st));
      for (const p of [...found].sort((a, b) => first(a) - first(b))) {
        const covered = statuses.filter((st) => p.statuses.includes(st));
        if (covered.length === 0) {
          problems.push(
            `${kind} ${condition}/${reason}: prose for status ${p.statuses.join(" / ")}, which the table does not have`,
          );
        } else rows.push({ reason, statuses: covered, prose: p });
      }
      for (const st of statuses) {
        if (!found.some((p) => p.statuses.includes(st))) {
          problems.push(`${kind} ${condition}/${reason}: status ${st} in the table, no prose row for it`);
        }
      }
    }
    out.push(TABLE_HEADER, TABLE_RULE);
    // Consecutive reasons that share a prose row and a status stay one row.
    for (let r = 0; r < rows.length; ) {
      const head = rows[r];
      const names = [head.reason];
      const status = statusText(head.statuses);
      for (r++; r < rows.length; r++) {
        const next = rows[r];
        if (!head.prose || next.prose?.row !== head.prose.row || statusText(next.statuses) !== status) break;
        names.push(next.reason);
      }
      const cell = names.map((n) => `\`${n}\``).join(", ");
      out.push(`| ${cell} | ${status} | ${head.prose?.meaning ?? ""} | ${head.prose?.remedy ?? ""} |`);
    }
  }
  for (const condition of Object.keys(table)) {
    if (!seen.has(condition) && !problems.some((p) => p.startsWith(`${kind} ${condition}:`))) {
      problems.push(`${kind} ${condition}: in the table, no "### ${condition}" section`);
    }
  }
  return { text: out.join("\n"), problems };
}

export interface ReasonsPage {
  page: string;
  problems: string[];
}

/** The whole page from `tables` (REASON_TABLES by default) and the prose under `root`/docs/reference/reasons. */
export function generateReasonsPage(
  root: URL,
  tables: Readonly<Record<string, ReasonTable>> = REASON_TABLES,
): ReasonsPage {
  const dir = new URL("docs/reference/reasons/", root);
  const problems: string[] = [];
  const sections: string[] = [];
  for (const [kind, table] of Object.entries(tables)) {
    const file = new URL(proseFileOf(kind), dir);
    if (!existsSync(file)) {
      problems.push(`${kind}: no docs/reference/reasons/${proseFileOf(kind)} for its table`);
      continue;
    }
    const section = renderKindSection(kind, table, rebaseLinks(readFileSync(file, "utf8")));
    sections.push(section.text);
    problems.push(...section.problems);
  }
  const known = new Set(Object.keys(tables).map(proseFileOf));
  for (const f of readdirSync(dir)
    .filter((f) => f.endsWith(".md"))
    .sort()) {
    if (!known.has(f)) problems.push(`docs/reference/reasons/${f}: no reason table of that kind in REASON_TABLES`);
  }
  return { page: `${INTRO}${sections.join("\n\n")}\n`, problems };
}

/**
 * The prose pages live in docs/reference/reasons/ and their links are written for that folder (so they
 * work where they are read on their own); the assembled page sits one folder up, so each relative link
 * to a file is re-resolved for it (`../../security.md` → `../security.md`).
 */
function rebaseLinks(prose: string): string {
  return prose.replace(/\]\(([\w./-]+\.md)(#[\w-]+)?\)/g, (_all, path: string, anchor = "") => {
    const target = posix.normalize(posix.join("docs/reference/reasons", path));
    return `](${posix.relative("docs/reference", target)}${anchor})`;
  });
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
    if (!kind || !line.startsWith("|")) continue;
    const first = cellsOf(line)[0] ?? "";
    if (first === "Reason" || first.startsWith("---")) continue;
    for (const r of reasonsOf(first)) if (/^[A-Za-z]+$/.test(r)) out.get(kind)?.add(r);
  }
  return out;
}
