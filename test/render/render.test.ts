import assert from "node:assert/strict";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, it } from "node:test";
import { snapshotFrom } from "../../src/emulator/headscale/in-memory.js";
import { unifiedDiff } from "../../src/render/diff.js";
import { fetchSnapshot, runHeadscale } from "../../src/render/fetch-snapshot.js";
import { runRender } from "../../src/render/main.js";
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

async function run(args: string[], stdin = ""): Promise<{ code: number; out: string; err: string }> {
  let out = "";
  let err = "";
  const write = process.stderr.write.bind(process.stderr);
  process.stderr.write = ((s: string) => {
    err += s;
    return true;
  }) as typeof process.stderr.write;
  try {
    const code = await runRender(
      args,
      (s) => {
        out += s;
      },
      () => stdin,
    );
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
      { "a.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: { name: x, namespace: y }\n" },
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

const EGRESS = `apiVersion: tailnet.internal/v1alpha1
kind: TailnetEgress
metadata: { name: db, namespace: shop }
spec:
  tailnetRef: { name: home }
  targets:
    - name: postgres
      host: db-1
      ports: [{ port: 5432 }]
`;

// Each row: the files, then the exact stderr lines (file paths relative to the temp dir).
const gateCases: [string, Record<string, string>, string[]][] = [
  [
    "a file whose only object has an unknown kind",
    { "a.yaml": EGRESS.replace("kind: TailnetEgress", "kind: TailnetEgres") },
    [
      "a.yaml: document 0: kind TailnetEgres: unknown kind in tailnet.internal (did you mean TailnetEgress?); this operator serves Tailnet, TailnetEgress, TailnetIngress, TailnetSite, TailnetGateway, TailnetUser, TailnetAuthKey, TailnetProxyClass",
    ],
  ],
  [
    "an unknown apiVersion of a known kind",
    { "a.yaml": `${TAILNET}---\n${EGRESS.replace("v1alpha1", "v1beta1")}` },
    [
      "a.yaml: document 1: apiVersion tailnet.internal/v1beta1: unknown version of TailnetEgress; this operator serves tailnet.internal/v1alpha1",
    ],
  ],
  [
    "the same object in two files",
    { "a.yaml": `${TAILNET}---\n${EGRESS}`, "b.yaml": EGRESS },
    [
      "b.yaml: document 0: TailnetEgress shop/db: also defined in <dir>/a.yaml document 1 (kubectl would apply one over the other)",
    ],
  ],
  [
    "unknown fields, at every depth, including metadata",
    {
      "a.yaml": `${TAILNET}---\n${EGRESS.replace("  tailnetRef:", "  replica: 2\n  tailnetRef:").replace("{ port: 5432 }", "{ port: 5432, protocl: TCP }").replace("namespace: shop }", "namespace: shop, lables: { a: b } }")}`,
    },
    [
      "a.yaml: document 1: TailnetEgress shop/db: metadata.lables: unknown field",
      "a.yaml: document 1: TailnetEgress shop/db: spec.replica: unknown field",
      "a.yaml: document 1: TailnetEgress shop/db: spec.targets[0].ports[0].protocl: unknown field",
    ],
  ],
  [
    "values the CRD schema refuses",
    {
      "a.yaml": `${TAILNET}---\n${EGRESS.replace("port: 5432", "port: postgres").replace("name: postgres", "name: Postgres")}`,
    },
    [
      'a.yaml: document 1: TailnetEgress shop/db: spec.targets[0].name: must match pattern "^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$"',
      "a.yaml: document 1: TailnetEgress shop/db: spec.targets[0].ports[0].port: must be integer",
    ],
  ],
  [
    "a required field missing and a top-level typo",
    { "a.yaml": `${TAILNET.replace("spec:", "specs:")}` },
    ["a.yaml: document 0: Tailnet home: spec: required", "a.yaml: document 0: Tailnet home: specs: unknown field"],
  ],
  [
    "a kind render cannot check, and a built-in kind under the wrong apiVersion",
    {
      "a.yaml": `${TAILNET}---\napiVersion: example.io/v1\nkind: Widget\nmetadata: { name: w }\n---\napiVersion: v1\nkind: Deployment\nmetadata: { name: d }\n`,
    },
    [
      "a.yaml: document 1: kind Widget: unknown kind (example.io/v1); render reads Tailnet, TailnetEgress, TailnetIngress, TailnetSite, TailnetGateway, TailnetUser, TailnetAuthKey, TailnetProxyClass, built-in Kubernetes kinds and the Gateway API's — point -f at the files holding your tailnet objects",
      "a.yaml: document 2: apiVersion v1: Deployment is served as apps/v1",
    ],
  ],
  [
    "a namespaced object without its namespace",
    {
      "a.yaml": `${TAILNET}---\n${EGRESS.replace("metadata: { name: db, namespace: shop }", "metadata: { name: db }")}`,
    },
    [
      "a.yaml: document 1: TailnetEgress db: metadata.namespace: required (kubectl would use the current context's namespace; render needs it written)",
    ],
  ],
  [
    "a v1 List (kubectl get -o yaml) is read item by item",
    {
      "a.yaml": `apiVersion: v1\nkind: List\nitems:\n  - ${TAILNET.trimEnd().replaceAll("\n", "\n    ")}\n  - ${EGRESS.replace("  tailnetRef:", "  replica: 2\n  tailnetRef:").trimEnd().replaceAll("\n", "\n    ")}\n`,
    },
    ["a.yaml: document 0 items[1]: TailnetEgress shop/db: spec.replica: unknown field"],
  ],
  [
    "an unknown field on a Secret render reads",
    {
      "a.yaml": `${TAILNET}---\napiVersion: v1\nkind: Secret\nmetadata: { name: headscale-api-key, namespace: tailnet-system }\nstringdata: { apiKey: x }\n`,
    },
    ["a.yaml: document 1: Secret tailnet-system/headscale-api-key: stringdata: unknown field"],
  ],
];

describe("render is a CI gate: what kubectl apply --validate=strict refuses exits 2", () => {
  for (const [name, files, lines] of gateCases) {
    it(name, async () => {
      const d = dir(files);
      const r = await run(["-f", d]);
      assert.equal(r.code, 2, r.out);
      assert.equal(r.out, "");
      const n = Object.keys(files).filter((f) => lines.some((l) => l.startsWith(`${f}:`))).length;
      const want = [
        ...lines.map((l) => `${d}/${l.replace("<dir>", d)}`),
        `render: ${lines.length} problem${lines.length > 1 ? "s" : ""} in ${n} file${n > 1 ? "s" : ""}; nothing rendered`,
      ];
      assert.deepEqual(r.err.trimEnd().split("\n"), want);
    });
  }

  it("every problem of every file at once, YAML errors included", async () => {
    const d = dir({
      "a.yaml": `${TAILNET}---\nfoo: [unclosed\n`,
      "b.yaml": EGRESS.replace("  tailnetRef:", "  replica: 2\n  tailnetRef:"),
      "c.yaml": "just: a map\n",
    });
    const r = await run(["-f", d]);
    assert.equal(r.code, 2);
    const lines = r.err.trimEnd().split("\n");
    assert.equal(lines.length, 4, r.err);
    assert.match(lines[0], /\/a\.yaml: document 1: /);
    assert.equal(lines[1], `${d}/c.yaml: document 0: not a Kubernetes object (needs apiVersion, kind, metadata.name)`);
    assert.equal(lines[2], `${d}/b.yaml: document 0: TailnetEgress shop/db: spec.replica: unknown field`);
    assert.equal(lines[3], "render: 3 problems in 3 files; nothing rendered");
  });

  it("a file named twice (itself and through its directory) is read once, not a duplicate", async () => {
    const d = dir({ "a.yaml": `${TAILNET}---\n${EGRESS}` });
    const r = await run(["-f", d, "-f", join(d, "a.yaml"), "--summary"]);
    assert.notEqual(r.code, 2, r.err);
  });

  it("the example manifests pass the gate", async () => {
    for (const kind of ["egress", "gateway", "ingress", "site", "tailnet"]) {
      const r = await run(["-f", new URL(`../../examples/${kind}`, import.meta.url).pathname, "--summary"]);
      assert.notEqual(r.code, 2, `${kind}: ${r.err}`);
    }
  });
});

describe("render --summary", () => {
  it("one compact entry per object; a blocked object says why", async () => {
    const d = dir({ "t.yaml": `${TAILNET}---\n${EGRESS}` });
    const r = await run(["-f", d, "--summary", "--now", "2026-11-29T10:00:00Z"]);
    assert.equal(r.code, 1);
    const lines = r.out.split("\n");
    assert.equal(lines[0], "objects:");
    assert.ok(lines.includes("  - kind: TailnetEgress"), r.out);
    assert.ok(lines.includes("    namespace: shop"));
    assert.ok(lines.includes("    ready: false"));
    assert.ok(
      lines.includes(
        '    why: "Ready=False/TagUnknown: no policy is stored in Headscale yet, so tag:k8s-shop-db is not in tagOwners"',
      ),
      r.out,
    );
    assert.ok(
      lines.some((l) => /^ {4}conditions: \[ TagKnown=\w+\/\w+, /.test(l)),
      r.out,
    );
    // one StatefulSet per replica with its own ServiceAccount, Role, RoleBinding and state Secret (issue 32)
    assert.ok(
      lines.includes(
        "    children: [ ConfigMap db-agent, NetworkPolicy db-agent, Role db-agent-0, RoleBinding db-agent-0, " +
          "Secret db-agent-0-state, Secret db-authkey, Service postgres, ServiceAccount db-agent-0, StatefulSet db-agent-0 ]",
      ),
      r.out,
    );
    assert.ok(lines.includes("headscaleWrites: []") || lines.includes("headscaleWrites:"));
  });
  it("-f - reads the manifests from standard input, like kubectl; problems name <stdin>", async () => {
    const fromFile = await run([
      "-f",
      dir({ "t.yaml": `${TAILNET}---\n${EGRESS}` }),
      "--summary",
      "--now",
      "2026-11-29T10:00:00Z",
    ]);
    const fromStdin = await run(["-f", "-", "--summary", "--now", "2026-11-29T10:00:00Z"], `${TAILNET}---\n${EGRESS}`);
    assert.equal(fromStdin.code, fromFile.code);
    assert.equal(fromStdin.out, fromFile.out);
    const bad = await run(["-f", "-"], "just: a map\n");
    assert.equal(bad.code, 2);
    assert.match(bad.err, /^<stdin>: document 0: not a Kubernetes object/);
  });
  it("a LoadBalancer Service's address is its ips then its name, as kubectl get svc shows EXTERNAL-IP", async () => {
    const r = await run([
      "-f",
      "examples/loadbalancer",
      "--headscale",
      "examples/loadbalancer/snapshot.json",
      "--agents",
      "examples/loadbalancer/agents.json",
      "--now",
      "2026-11-29T10:00:00Z",
      "--summary",
    ]);
    const addresses = r.out.split("\n").filter((l) => /^ {4}address: /.test(l));
    assert.ok(addresses.length > 0, r.out);
    for (const line of addresses) assert.doesNotMatch(line, /(^ {4}address: ,|,,)/, line);
    assert.ok(
      addresses.some((l) =>
        /^ {4}address: "?100\.64\.\d+\.\d+,fd7a:115c:a1e0::\w+,[\w-]+\.ts\.example\.com"?$/.test(l),
      ),
      addresses.join("\n"),
    );
  });
  it("--summary and --output exclude each other; -o summary is --summary", async () => {
    const d = dir({ "t.yaml": TAILNET });
    const bad = await run(["-f", d, "--summary", "-o", "json"]);
    assert.equal(bad.code, 2);
    assert.match(bad.err, /^render: --summary and --output exclude each other\n/);
    const a = await run(["-f", d, "--summary", "--now", "2026-11-29T10:00:00Z"]);
    const b = await run(["-f", d, "-o", "summary", "--now", "2026-11-29T10:00:00Z"]);
    assert.equal(a.out, b.out);
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

describe("headscale snapshot errors name the call and the fix", () => {
  async function snapshotCli(args: string[]): Promise<{ code: number; out: string; err: string }> {
    let out = "";
    let err = "";
    const code = await runHeadscale(["snapshot", ...args], {
      out: (s) => {
        out += s;
      },
      err: (s) => {
        err += s;
      },
    });
    return { code, out, err };
  }
  it("a refused API key: the call, its 401, and how to make a key", async (t) => {
    const hs = await useFakeHeadscale(t);
    const d = dir({ key: "not-the-key\n" });
    const r = await snapshotCli(["--url", hs.url, "--api-key-file", join(d, "key")]);
    assert.equal(r.code, 1);
    assert.equal(r.out, "");
    assert.match(r.err, /^Headscale GET \/api\/v1\/\w+.*: 401/);
    assert.match(r.err, /\n {2}fix: the API key was refused .* `headscale apikeys create --expiration 90d`/);
    assert.ok(!r.err.includes("not-the-key"), "the key never reaches the output");
  });
  it("a database outage (401 to every key) is not reported as a bad key", async (t) => {
    const hs = await useFakeHeadscale(t);
    hs.setDatabaseDown(true);
    const d = dir({ key: `${hs.apiKey}\n` });
    const r = await snapshotCli(["--url", hs.url, "--api-key-file", join(d, "key")]);
    assert.equal(r.code, 1);
    assert.match(r.err, /^Headscale GET \/api\/v1\/\w+.*: 401 .*database is down/);
    assert.match(
      r.err,
      /\n {2}fix: Headscale's database is down \(GET \/health fails\), so no API key can be checked: keep your key/,
    );
    assert.doesNotMatch(r.err, /apikeys create/);
  });
  it("nothing listening: the call and what to check", async () => {
    const d = dir({ key: "k\n" });
    const r = await snapshotCli(["--url", "http://127.0.0.1:9", "--api-key-file", join(d, "key")]);
    assert.equal(r.code, 1);
    assert.match(r.err, /^Headscale GET \/api\/v1\//);
    assert.match(r.err, /fix: cannot connect to http:\/\/127\.0\.0\.1:9: check the URL and port/);
  });
  it("an empty key file and a bad URL are exit 2 before any call", async () => {
    const d = dir({ key: "\n" });
    const a = await snapshotCli(["--url", "http://127.0.0.1:9", "--api-key-file", join(d, "key")]);
    assert.equal(a.code, 2);
    assert.equal(a.err, `headscale snapshot: --api-key-file ${join(d, "key")}: the file is empty\n`);
    const b = await snapshotCli(["--url", "headscale", "--api-key-file", join(d, "key")]);
    assert.equal(b.code, 2);
    assert.match(b.err, /^headscale snapshot: --url headscale: not a URL/);
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
