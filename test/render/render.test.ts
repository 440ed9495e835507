import assert from "node:assert/strict";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, it } from "node:test";
import { unifiedDiff } from "../../src/render/diff.js";
import { fetchSnapshot } from "../../src/render/fetch-snapshot.js";
import { runRender } from "../../src/render/main.js";
import { snapshotFrom } from "../../src/render/snapshot.js";
import { useFakeHeadscale } from "../fakes/headscale/index.js";

const TAILNET = `apiVersion: tailnet.internal/v1alpha1
kind: Tailnet
metadata: { name: home }
spec:
  headscale:
    url: https://headscale.example.com
    apiKeySecretRef: { namespace: tailnet-system, name: headscale-api-key }
`;

function dir(files: Record<string, string>): string {
  const d = mkdtempSync(join(tmpdir(), "render-"));
  for (const [name, text] of Object.entries(files)) writeFileSync(join(d, name), text);
  return d;
}

async function run(args: string[]): Promise<{ code: number; out: string; err: string }> {
  let out = "";
  let err = "";
  const write = process.stderr.write.bind(process.stderr);
  process.stderr.write = ((s: string) => {
    err += s;
    return true;
  }) as typeof process.stderr.write;
  try {
    const code = await runRender(args, (s) => {
      out += s;
    });
    return { code, out, err };
  } finally {
    process.stderr.write = write;
  }
}

describe("render: bad input exits 2 naming the file and document", () => {
  const cases: [string, Record<string, string>, RegExp][] = [
    ["YAML syntax error", { "a.yaml": `${TAILNET}---\nfoo: [unclosed\n` }, /a\.yaml: document 1: /],
    ["not a Kubernetes object", { "a.yaml": "just: a map\n" }, /a\.yaml: document 0: not a Kubernetes object/],
    [
      "no CRs at all",
      { "a.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: { name: x }\n" },
      /no tailnet\.internal\/v1alpha1 objects/,
    ],
  ];
  for (const [name, files, err] of cases) {
    it(name, async () => {
      const r = await run(["-f", dir(files)]);
      assert.equal(r.code, 2);
      assert.match(r.err, err);
      assert.equal(r.out, "");
    });
  }
  it("a missing path", async () => {
    const r = await run(["-f", "/nonexistent/x"]);
    assert.equal(r.code, 2);
    assert.match(r.err, /^\/nonexistent\/x: no such file or directory/);
  });
  it("an invalid snapshot names the field", async () => {
    const d = dir({ "t.yaml": TAILNET, "snap.json": JSON.stringify({ nodes: "x" }) });
    const r = await run(["-f", join(d, "t.yaml"), "--headscale", join(d, "snap.json")]);
    assert.equal(r.code, 2);
    assert.match(r.err, /snap\.json: snapshot\.nodes: must be an array of objects/);
  });
});

describe("render output", () => {
  it("prints every object with status and children as JSON, deterministically for a fixed --now", async () => {
    const d = dir({ "t.yaml": TAILNET });
    const a = await run(["-f", d, "--output", "json", "--now", "2026-11-29T10:00:00Z"]);
    const b = await run(["-f", d, "--output", "json", "--now", "2026-11-29T10:00:00Z"]);
    assert.equal(a.out, b.out);
    const parsed = JSON.parse(a.out) as {
      objects: { kind: string; name: string; status: { conditions: unknown[] } }[];
    };
    assert.deepEqual(
      parsed.objects.map((o) => `${o.kind}/${o.name}`),
      ["Tailnet/home"],
    );
    assert.ok(parsed.objects[0].status.conditions.length >= 8);
    assert.ok(!a.out.includes("render-placeholder-api-key"), "secret values are redacted");
  });
});

describe("headscale snapshot", () => {
  it("reads a live Headscale with GETs and the check probe only; render accepts it", async (t) => {
    const hs = await useFakeHeadscale(t);
    hs.addUser({ name: "alice" });
    hs.addNode({ name: "db-1", tags: ["tag:db"], ipv4: "100.64.0.7" });
    hs.setPolicy('{"acls":[{"action":"accept","src":["*"],"dst":["*:*"]}],"tagOwners":{"tag:db":[]}}');
    const snap = await fetchSnapshot({ url: hs.url, apiKey: hs.apiKey });
    assert.deepEqual(hs.writes(), []);
    const again = snapshotFrom(JSON.parse(JSON.stringify(snap)));
    assert.equal(again.nodes.length, 1);
    assert.equal(again.version, "0.29");
    assert.equal(again.policyMode, "database");
    assert.match(again.policy?.policy ?? "", /tag:db/);
    assert.ok(!JSON.stringify(snap).includes(hs.apiKey));
  });
});

describe("unifiedDiff", () => {
  it("is empty for equal texts", () => assert.equal(unifiedDiff("a\nb\n", "a\nb\n", ["x", "y"]), ""));
  it("shows changed lines with context and hunk headers", () => {
    const a = ["1", "2", "3", "4", "5", "6", "7", "8", "9"].join("\n");
    const b = ["1", "2", "3", "4", "five", "6", "7", "8", "9"].join("\n");
    assert.equal(
      unifiedDiff(a, b, ["live", "rendered"]),
      "--- live\n+++ rendered\n@@ -2,7 +2,7 @@\n 2\n 3\n 4\n-5\n+five\n 6\n 7\n 8\n",
    );
  });
});
