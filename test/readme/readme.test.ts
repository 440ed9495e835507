/** Every command the README shows that runs offline is run here, as written. */
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { describe, it } from "node:test";
import { fileURLToPath } from "node:url";
import { runRender } from "../../src/render/main.js";

const root = fileURLToPath(new URL("../../", import.meta.url));
const readme = readFileSync(new URL("README.md", `file://${root}`), "utf8");
const shellLines = [...readme.matchAll(/```sh\n([\s\S]*?)```/g)].flatMap((m) =>
  m[1].split("\n").map((l) => l.replace(/\s+#.*$/, "").trim()),
);

describe("README commands", () => {
  it("names the two quick-start commands and the CI runs exactly them", () => {
    assert.ok(shellLines.includes("npm ci && npm start"));
    assert.ok(shellLines.includes("npm ci && npm test"));
    const ci = readFileSync(new URL(".ci/run", `file://${root}`), "utf8");
    assert.match(ci, /^npm ci$/m);
    assert.match(ci, /^npm test$/m);
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
