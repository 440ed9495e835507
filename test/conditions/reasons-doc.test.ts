import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { describe, it } from "node:test";
import { generateReasonsPage, reasonsByKind, renderKindSection } from "../../src/conditions/reasons-doc.js";
import { AuthKeyReason } from "../../src/conditions/tables/authkey.js";
import { EgressReason, TargetReason } from "../../src/conditions/tables/egress.js";
import { GatewayReason } from "../../src/conditions/tables/gateway.js";
import { REASON_TABLES } from "../../src/conditions/tables/index.js";
import { IngressReason } from "../../src/conditions/tables/ingress.js";
import { IngressClassReason } from "../../src/conditions/tables/ingress-class.js";
import { ServiceReason } from "../../src/conditions/tables/service.js";
import { CommonReason } from "../../src/conditions/tables/shared.js";
import { SiteReason } from "../../src/conditions/tables/site.js";
import { TailnetReason } from "../../src/conditions/tables/tailnet.js";
import { UserReason } from "../../src/conditions/tables/user.js";

const root = new URL("../../", import.meta.url);
const page = readFileSync(new URL("docs/reference/reasons.md", root), "utf8");
const generated = generateReasonsPage(root);
const intro = reasonsByKind(`## Common\n${page.split("\n## ")[0]}`).get("Common") ?? new Set<string>();
const byKind = reasonsByKind(page);

/** Every reason the code defines, by the page's `## <section>`: the kind's table, and an egress's per-target ones. */
const CODE_REASONS: Record<string, Record<string, string>> = {
  Tailnet: TailnetReason,
  TailnetEgress: { ...EgressReason, ...TargetReason },
  TailnetIngress: IngressReason,
  TailnetSite: SiteReason,
  TailnetGateway: GatewayReason,
  Service: ServiceReason,
  // its section is "## Ingress (class tailnet)"
  Ingress: IngressClassReason,
  TailnetUser: UserReason,
  TailnetAuthKey: AuthKeyReason,
};

describe("docs/reference/reasons.md", () => {
  it("is generated from the reason tables and docs/reference/reasons/*.md (npm run docs)", () => {
    assert.equal(page, generated.page);
  });
  for (const kind of Object.keys(REASON_TABLES)) {
    it(`${kind}: every (condition, reason) of its table has prose, and no prose names one outside it`, () => {
      const mine = generated.problems.filter((p) => p.startsWith(`${kind} `) || p.startsWith(`${kind}:`));
      assert.deepEqual(mine, [], `fix src/conditions/tables or docs/reference/reasons/*.md, then npm run docs`);
    });
  }
  it("every prose file belongs to a kind of REASON_TABLES", () => {
    assert.deepEqual(
      generated.problems.filter((p) => p.startsWith("docs/")),
      [],
    );
  });
  for (const [kind, reasons] of Object.entries(CODE_REASONS)) {
    it(`documents every ${kind} reason the code defines`, () => {
      const documented = byKind.get(kind);
      assert.ok(documented, `no "## ${kind}" section`);
      const missing = Object.values(reasons).filter((r) => !documented.has(r) && !intro.has(r));
      assert.deepEqual(missing, []);
    });
    it(`names no ${kind} reason the code does not define`, () => {
      const known = new Set<string>([...Object.values(reasons), ...Object.values(CommonReason)]);
      const unknown = [...(byKind.get(kind) ?? [])].filter((r) => !known.has(r));
      assert.deepEqual(unknown, []);
    });
  }
});

describe("renderKindSection", () => {
  const TABLE = {
    Linked: { Up: ["True"], Down: ["False"], Flapping: ["False"], Stale: ["True", "Unknown"] },
    Ready: { Ready: ["True"], Down: ["False"] },
  } as const;
  const HEAD = "| Reason | Status | Meaning | Remedy |\n|---|---|---|---|";
  const prose = (
    linked: string,
    ready = "| `Ready` | True | All good. | — |\n| `Down` | False | From `Linked`. | See `Linked`. |",
  ) =>
    `## Widget\n\nIntro text.\n\n### Linked\n\nA note.\n\n${HEAD}\n${linked}\n\n### Ready\n\n${HEAD}\n${ready}\n\n### Notes\n\n| a | b |\n|---|---|\n| x | y |\n`;
  const linked =
    "| `Down`, `Flapping` | True | Lost. | Plug it in. |\n| `Up` | False | Fine. | — |\n| `Stale` | Unknown | Old. | Wait. |";

  it("takes rows in table order with the table's statuses, meaning and remedy from the prose; the rest as written", () => {
    const r = renderKindSection("Widget", TABLE, prose(linked));
    assert.deepEqual(r.problems, []);
    assert.equal(
      r.text,
      [
        "## Widget",
        "",
        "Intro text.",
        "",
        "### Linked",
        "",
        "A note.",
        "",
        HEAD,
        "| `Up` | True | Fine. | — |",
        "| `Down`, `Flapping` | False | Lost. | Plug it in. |",
        "| `Stale` | True / Unknown | Old. | Wait. |",
        "",
        "### Ready",
        "",
        HEAD,
        "| `Ready` | True | All good. | — |",
        "| `Down` | False | From `Linked`. | See `Linked`. |",
        "",
        "### Notes",
        "",
        "| a | b |",
        "|---|---|",
        "| x | y |",
      ].join("\n"),
    );
  });

  it("a reason with one prose row per status keeps one row each, chosen by the Status cell", () => {
    const split =
      "| `Up` | True | Fine. | — |\n| `Down`, `Flapping` | False | Lost. | Plug it in. |\n| `Stale` | Unknown | Not read. | Wait. |\n| `Stale` | True | Read late. | — |";
    const r = renderKindSection("Widget", TABLE, prose(split));
    assert.deepEqual(r.problems, []);
    assert.match(r.text, /\| `Stale` \| True \| Read late\. \| — \|\n\| `Stale` \| Unknown \| Not read\. \| Wait\. \|/);
  });

  it("reports a table pair without prose, prose for a pair or condition the table lacks, and a missing section", () => {
    const missing = renderKindSection(
      "Widget",
      TABLE,
      prose("| `Up` | True | Fine. | — |\n| `Gone` | False | Was. | — |"),
    );
    assert.deepEqual(missing.problems, [
      "Widget Linked/Gone: prose for a reason the table does not have",
      "Widget Linked/Down: in the table, no prose row",
      "Widget Linked/Flapping: in the table, no prose row",
      "Widget Linked/Stale: in the table, no prose row",
    ]);
    assert.ok(!missing.text.includes("`Gone`"), "a pair outside the table is not on the page");

    const extra = `${prose(linked)}\n### Dusty\n\n${HEAD}\n| \`Old\` | False | Once. | — |\n`;
    assert.deepEqual(renderKindSection("Widget", TABLE, extra).problems, [
      "Widget Dusty: a reason table for a condition that Widget's table does not have",
    ]);

    const noReady = prose(linked).replace("### Ready", "### Later");
    assert.deepEqual(renderKindSection("Widget", TABLE, noReady).problems, [
      "Widget Later: a reason table for a condition that Widget's table does not have",
      'Widget Ready: in the table, no "### Ready" section',
    ]);

    const wrongStatus = prose(
      `${linked.replace("| `Up` | False |", "| `Up` | True |")}\n| \`Up\` | Unknown | Never. | — |`,
    );
    assert.deepEqual(renderKindSection("Widget", TABLE, wrongStatus).problems, [
      "Widget Linked/Up: prose for status Unknown, which the table does not have",
    ]);
  });
});
