/**
 * What docs/OPERATIONS.md and docs/troubleshooting.md claim about the product, checked against the
 * product: the multi-tailnet walkthrough renders as described, DryRun still mints pre-auth keys (and
 * the docs say so), the credentials Secret is published before Headscale accepts the key (and the docs
 * say so), and the egress Ready order starts with TagUnknown.
 */
import assert from "node:assert/strict";
import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, it } from "node:test";
import { type RenderResult, runRender } from "../../src/render/main.js";
import { apiKeySecret, baseConfigMap } from "../kinds/composite/tailnet/fixtures.js";
import { harness } from "../kinds/composite/tailnet/harness.js";

const root = new URL("../../", import.meta.url).pathname;
const doc = (name: string) => readFileSync(join(root, "docs", name), "utf8");
const NOW = "2026-11-29T10:00:00Z";

async function renderYaml(yaml: string): Promise<{ code: number; result: RenderResult }> {
  const dir = mkdtempSync(join(tmpdir(), "docs-"));
  writeFileSync(join(dir, "objects.yaml"), yaml);
  let out = "";
  const code = await runRender(
    ["-f", dir, "--headscale", join(root, "examples/egress/snapshot.json"), "--now", NOW, "-o", "json"],
    (s) => {
      out += s;
    },
  );
  return { code, result: JSON.parse(out) as RenderResult };
}

const conditionReason = (o: RenderResult["objects"][number], type: string) =>
  ((o.status.conditions ?? []) as { type: string; reason: string }[]).find((c) => c.type === type)?.reason;

describe("OPERATIONS.md: several tailnets", () => {
  const section = doc("OPERATIONS.md").split("## Several tailnets")[1]?.split("\n## ")[0] ?? "";
  const yaml = /<<'YAML'\n([\s\S]*?)\nYAML/.exec(section)?.[1] ?? "";

  it("the walkthrough renders: each egress with its tag, its grant in its own Tailnet's policy only", async () => {
    assert.ok(yaml, "the section has a kubectl apply heredoc");
    const { code, result } = await renderYaml(yaml);
    assert.notEqual(code, 2);
    const egress = (name: string) => result.objects.find((o) => o.kind === "TailnetEgress" && o.name === name);
    assert.equal(egress("db")?.status.tag, "tag:k8s-shop-db");
    assert.equal(egress("db-lab")?.status.tag, "tag:lab-shop-db-lab");
    assert.match(section, /`tag:k8s-shop-db` on prod, `tag:lab-shop-db-lab` on lab/);
    const policy = (name: string) =>
      result.objects.find((o) => o.kind === "Tailnet" && o.name === name)?.policy?.rendered ?? "";
    assert.match(policy("prod"), /tag:k8s-shop-db/);
    assert.doesNotMatch(policy("prod"), /tag:lab-/);
    assert.match(policy("lab"), /tag:lab-shop-db-lab/);
    assert.doesNotMatch(policy("lab"), /tag:k8s-shop-db/);
    for (const name of ["db", "db-lab"])
      assert.equal(conditionReason(egress(name) as never, "ServiceConflict"), "NoConflict");
  });

  it("the same target name twice in one namespace is the ServiceConflict the section warns about", async () => {
    const { result } = await renderYaml(yaml.replace("name: postgres-lab", "name: postgres"));
    const lab = result.objects.find((o) => o.name === "db-lab");
    assert.equal(conditionReason(lab as never, "ServiceConflict"), "Conflict");
    assert.match(section, /`ServiceConflict=Conflict`/);
  });

  it("the docs have upgrade, uninstall and backup/restore sections", () => {
    const ops = doc("OPERATIONS.md");
    for (const h of ["## Upgrade", "## Uninstall", "## Backing up and restoring the policy", "## Several tailnets"])
      assert.ok(ops.includes(`\n${h}\n`), h);
  });
});

describe("docs agree with the code", () => {
  const all = readdirSync(join(root, "docs"))
    .filter((f) => f.endsWith(".md"))
    .map((f) => doc(f))
    .join("\n");

  it("DryRun writes no policy but does mint pre-auth keys, and no page says it writes nothing", async () => {
    const section = doc("OPERATIONS.md").split("## Several tailnets")[1] ?? "";
    const yaml = /<<'YAML'\n([\s\S]*?)\nYAML/.exec(section)?.[1] ?? "";
    const { result } = await renderYaml(yaml);
    assert.ok(!result.headscaleWrites.some((w) => w.startsWith("PUT /api/v1/policy")));
    assert.ok(result.headscaleWrites.some((w) => w.startsWith("POST /api/v1/preauthkey")));
    assert.doesNotMatch(all, /DryRun`?[^.|\n]*: nothing is written/);
    assert.match(doc("troubleshooting.md"), /`POLICY=DryRun`[^\n]*pre-auth keys/);
  });

  it("the credentials Secret is published before Headscale accepts the key, as troubleshooting says", async (t) => {
    const h = await harness(t, { objects: () => [apiKeySecret("not-the-key"), baseConfigMap()] });
    await h.mc.settle();
    assert.equal(h.reason("ApiKeyValid"), "Rejected");
    assert.ok(h.children().includes("Secret tailnet-system/tailnet-home-credentials"), h.children().join(", "));
    const row =
      doc("troubleshooting.md")
        .split("\n")
        .find((l) => l.startsWith("| any kind: `NoAPIKey`")) ?? "";
    assert.match(
      row,
      /as soon as the API key Secret it names exists \(it does not wait for Headscale to accept the key\)/,
    );
  });

  it("egress Ready: TagUnknown before Registered, in the code and in troubleshooting", async () => {
    const section = doc("OPERATIONS.md").split("## Several tailnets")[1] ?? "";
    const yaml = /<<'YAML'\n([\s\S]*?)\nYAML/.exec(section)?.[1] ?? "";
    const { result } = await renderYaml(yaml);
    const lab = result.objects.find((o) => o.name === "db-lab");
    assert.equal(conditionReason(lab as never, "Registered"), "NotRegistered");
    assert.equal(conditionReason(lab as never, "Ready"), "TagUnknown");
    assert.match(doc("troubleshooting.md"), /`NoTailnet`, `NoAPIKey` or `TagUnknown` first/);
    assert.match(doc("OPERATIONS.md"), /`NoTailnet`, `NoAPIKey` and `TagUnknown` first, then the order Registered/);
  });
});
