/**
 * Every command the README shows that runs offline is run here, as written, and every output block
 * the README shows is what the command prints (scripts/readme.ts computes them; `npx tsx
 * scripts/readme.ts` rewrites them after an intended change).
 */
import assert from "node:assert/strict";
import { execFileSync, spawn } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import { parse } from "yaml";
import { blocks, jsonPath, root, syncReadme, table } from "../../scripts/readme.js";
import { runRender } from "../../src/render/main.js";
import { find, helm, parseObjects } from "../chart/helm.js";

const readme = readFileSync(join(root, "README.md"), "utf8");
const shellLines = blocks(readme)
  .filter((b) => b.lang === "sh")
  .flatMap((b) => b.body.split("\n").map((l) => l.replace(/\s+#.*$/, "").trim()));

describe("README commands", () => {
  it("names the two quick-start commands and the CI runs exactly them", () => {
    assert.ok(shellLines.includes("npm ci && npm start"));
    assert.ok(shellLines.includes("npm ci && npm test"));
    const ci = readFileSync(join(root, ".ci/run"), "utf8");
    assert.match(ci, /^npm ci$/m);
    assert.match(ci, /^npm test$/m);
  });

  it("npm test installs the tools the tests shell out to first (pretest)", () => {
    const pkg = JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as { scripts: Record<string, string> };
    assert.match(pkg.scripts.pretest ?? "", /scripts\/ci-deps\.sh/);
    // A clean clone has only what git tracks: every script the test steps run must be in it.
    const tracked = execFileSync("git", ["ls-files"], { cwd: root, encoding: "utf8" }).split("\n");
    for (const script of `${pkg.scripts.pretest} ${pkg.scripts.test}`.match(/scripts\/[\w.-]+/g) ?? [])
      assert.ok(tracked.includes(script), `${script} is run by npm test but not committed`);
  });

  const renders = shellLines.filter((l) => l.startsWith("npx tailnet-operator render "));
  it("shows at least one render command", () => assert.ok(renders.length >= 1));
  for (const line of renders) {
    it(line, async () => {
      const args = line
        .replace("npx tailnet-operator render ", "")
        .split(/\s+/)
        .map((a) => (a.startsWith("examples/") ? `${root}${a}` : a));
      let out = "";
      const code = await runRender(args, (s) => {
        out += s;
      });
      assert.equal(code, 0, out.slice(0, 500));
      assert.match(out, /^objects:/);
    });
  }

  it("every output block is what its command prints", async () => {
    const synced = await syncReadme(readme);
    const want = blocks(synced).filter((b) => b.lang === "console");
    const have = blocks(readme).filter((b) => b.lang === "console");
    assert.ok(have.length >= 3, "the render output and the two kubectl get outputs");
    assert.equal(have.length, want.length);
    for (const [i, b] of have.entries()) {
      assert.equal(b.body, want[i].body, `console block ${i}: run \`npx tsx scripts/readme.ts\` and review the diff`);
    }
  });

  it("the walkthrough shows TagUnknown in DryRun and Ready once applied (not Ready in DryRun)", () => {
    const consoles = blocks(readme).filter((b) => b.lang === "console");
    const gets = consoles.filter((b) => b.body.startsWith("$ kubectl get tailnet"));
    assert.equal(gets.length, 2);
    assert.match(gets[0].body, /^home\s+Reachable\s+Compatible\s+NotConfigured\s+DryRun\s+1m$/m);
    assert.match(gets[0].body, /^db\s+tag:k8s-shop-db\s+TagUnknown\s+1m$/m);
    assert.match(gets[1].body, /^db\s+tag:k8s-shop-db\s+Ready\s+1m$/m);
  });

  it("the helm install line installs the image it built, for the operator and its agents", () => {
    const build = shellLines.find((l) => l.startsWith("docker build "));
    const push = shellLines.find((l) => l.startsWith("docker push "));
    const install = shellLines.find((l) => l.startsWith("helm install "));
    assert.ok(build && push && install);
    const image = /-t (\S+)/.exec(build)?.[1] ?? "";
    assert.equal(push, `docker push ${image}`);
    const [, release, chart, ...flags] = install.split(/\s+/).slice(1);
    const args = ["template", release, join(root, chart), ...flags.filter((f) => f !== "--create-namespace")];
    const objects = parseObjects(helm(args));
    const deployment = find(objects, "Deployment", "tailnet-operator") as unknown as {
      spec: { template: { spec: { containers: { image: string }[] } } };
    };
    assert.equal(deployment.spec.template.spec.containers[0].image, image);
    const config = find(objects, "ConfigMap", "tailnet-operator-config") as unknown as { data: Record<string, string> };
    const operatorConfig = parse(config.data["config.yaml"]) as { images: { agent: string } };
    assert.equal(operatorConfig.images.agent, image);
  });

  it("the API key is made by the Headscale in its pod, with an expiry", () => {
    assert.ok(
      shellLines.some((l) =>
        l.includes(
          '--from-literal=apiKey="$(kubectl -n headscale exec deploy/headscale -- headscale apikeys create --expiration 90d)"',
        ),
      ),
    );
  });

  it("one Metacontroller version everywhere: at least 4.16, installed and pinned as v4.17.2", () => {
    const install = shellLines.find((l) => l.includes("metacontroller/manifests/production"));
    assert.equal(
      install,
      "kubectl apply -k 'https://github.com/metacontroller/metacontroller/manifests/production?ref=v4.17.2'",
    );
    const files = [
      "README.md",
      ...readdirSync(join(root, "docs"))
        .filter((f) => f.endsWith(".md"))
        .map((f) => `docs/${f}`),
      "manifests/chart/tailnet-operator/README.md",
      "manifests/chart/tailnet-operator/Chart.yaml",
      "manifests/chart/tailnet-operator/values.yaml",
    ];
    for (const f of files) {
      const text = readFileSync(join(root, f), "utf8");
      // Every 4.1x in these files is a Metacontroller version (our own versions are 0.x).
      for (const m of text.matchAll(/(?<![\d.])v?(4\.1\d(?:\.\d+)?)(?![\d.])/g)) {
        assert.ok(
          ["4.16", "4.17.2"].includes(m[1]),
          `${f}: Metacontroller ${m[1]} (only 4.16 as the floor, v4.17.2 installed)`,
        );
      }
    }
  });

  it("npm start serves /healthz on PORT with built-in defaults and stops on SIGTERM", async () => {
    const port = 18000 + Math.floor(Math.random() * 2000);
    const child = spawn("npm", ["start"], {
      cwd: root,
      env: { ...process.env, PORT: String(port), LOG_LEVEL: "warn" },
      detached: true,
      stdio: "ignore",
    });
    try {
      let status = 0;
      for (let i = 0; i < 100 && status !== 200; i++) {
        await new Promise((r) => setTimeout(r, 200));
        status = await fetch(`http://127.0.0.1:${port}/healthz`).then(
          (r) => r.status,
          () => 0,
        );
      }
      assert.equal(status, 200);
    } finally {
      if (child.pid) process.kill(-child.pid, "SIGTERM");
    }
  });
});

describe("README generator", () => {
  it("reads printer-column JSONPaths", () => {
    const o = {
      status: {
        tag: "t",
        conditions: [
          { type: "A", reason: "x" },
          { type: "Ready", reason: "Ok" },
        ],
      },
    };
    assert.equal(jsonPath(o, ".status.tag"), "t");
    assert.equal(jsonPath(o, '.status.conditions[?(@.type=="Ready")].reason'), "Ok");
    assert.equal(jsonPath(o, '.status.conditions[?(@.type=="Nope")].reason'), "");
    assert.equal(jsonPath({ spec: { a: ["p", "q"] } }, ".spec.a[1]"), "q");
  });
  it("aligns columns as kubectl does", () => {
    assert.equal(
      table([
        ["NAME", "READY"],
        ["db", "TagUnknown"],
      ]),
      "NAME   READY\ndb     TagUnknown",
    );
  });
  it("a stale output block is detected", async () => {
    const stale = readme.replace(/TagUnknown {3}1m/, "Ready        1m");
    assert.notEqual(stale, readme);
    assert.notEqual(await syncReadme(stale), stale);
  });
});
