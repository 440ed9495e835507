// The agent process: its config file read and named by path (src/agent/config-file.ts), its arguments, and the
// real CLI's exit codes and shutdown (src/agent/main.ts runAgent). What the config may say: test/contract.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { loadAgentConfig } from "../../src/agent/config-file.js";
import { parseAgentArgs } from "../../src/agent/main.js";
import { parseAgentConfig } from "../../src/contract/agent-config.js";
import { httpGet } from "./helpers.js";

const target = { name: "postgres", host: "db-1", ports: [{ port: 5432, listenPort: 10000 }] };

test("a file that is not JSON, or missing, is named with its path", async (t) => {
  assert.throws(
    () => parseAgentConfig("{", "agent config x.json"),
    /^AgentConfigError: agent config x\.json: is not valid JSON/,
  );
  const dir = await mkdtemp(join(tmpdir(), "agent-config-"));
  t.after(() => rm(dir, { recursive: true, force: true }));
  await assert.rejects(loadAgentConfig(join(dir, "missing.json")), {
    message: `agent config ${join(dir, "missing.json")}: cannot be read (ENOENT)`,
  });
});

test("agent arguments: --config <file>, --config=<file>, default path, unknown argument", () => {
  assert.deepEqual(parseAgentArgs([]), { configPath: "/etc/tailnet-agent/config.json" });
  assert.deepEqual(parseAgentArgs(["--config", "/tmp/a.json"]), { configPath: "/tmp/a.json" });
  assert.deepEqual(parseAgentArgs(["--config=/tmp/b.json"]), { configPath: "/tmp/b.json" });
  assert.throws(() => parseAgentArgs(["--port", "1"]), {
    message: "agent: unknown argument --port (usage: agent --config <file>)",
  });
});

// The agent through the real CLI (`tailnet-operator agent --config <file>`) in a child process: an invalid
// file exits 1 with one line naming the field; a valid one serves until SIGTERM and then exits cleanly.
const cli = fileURLToPath(new URL("../../src/cli.ts", import.meta.url));

function runChild(configPath: string, env: NodeJS.ProcessEnv = {}) {
  const merged: NodeJS.ProcessEnv = { ...process.env, LOG_LEVEL: "info", ...env };
  for (const [k, v] of Object.entries(merged)) if (v === undefined) delete merged[k];
  return spawn(process.execPath, ["--import", "tsx", cli, "agent", "--config", configPath], {
    stdio: ["ignore", "pipe", "pipe"],
    env: merged,
  });
}

test("agent without POD_IP for a pod-ip address exits 1 naming the field, binding nothing", async (t) => {
  const dir = await mkdtemp(join(tmpdir(), "agent-config-"));
  t.after(() => rm(dir, { recursive: true, force: true }));
  const path = join(dir, "config.json");
  await writeFile(path, JSON.stringify({ role: "egress", metricsPort: 0, targets: [target] }));
  const child = runChild(path, { POD_IP: undefined });
  let stderr = "";
  child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
  const code = await new Promise<number | null>((resolve) => child.once("exit", resolve));
  assert.equal(code, 1);
  assert.equal(stderr.trim(), "agent config: metricsHost is pod-ip but POD_IP is not set (downward API status.podIP)");
});

test("agent with an invalid file exits 1 with one line naming the field", async (t) => {
  const dir = await mkdtemp(join(tmpdir(), "agent-config-"));
  t.after(() => rm(dir, { recursive: true, force: true }));
  const path = join(dir, "config.json");
  await writeFile(
    path,
    JSON.stringify({ role: "egress", metricsPort: 9080, limits: { maxConnections: 0 }, targets: [target] }),
  );
  const child = runChild(path);
  let stderr = "";
  child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
  const code = await new Promise<number | null>((resolve) => child.once("exit", resolve));
  assert.equal(code, 1);
  assert.equal(stderr.trim(), `agent config ${path}: limits.maxConnections must be >= 1`);
});

test("agent serves until SIGTERM, then closes and exits 0", async (t) => {
  const dir = await mkdtemp(join(tmpdir(), "agent-config-"));
  t.after(() => rm(dir, { recursive: true, force: true }));
  const path = join(dir, "config.json");
  await writeFile(
    path,
    JSON.stringify({
      role: "egress",
      metricsPort: 0,
      metricsHost: "127.0.0.1",
      listenHost: "127.0.0.1",
      targets: [{ name: "postgres", host: "127.0.0.1", ports: [{ port: 5432, listenPort: 0 }] }],
    }),
  );
  const child = runChild(path);
  t.after(() => child.kill("SIGKILL"));
  const lines: Record<string, unknown>[] = [];
  let buffered = "";
  const started = new Promise<number>((resolve) => {
    child.stdout.on("data", (chunk: Buffer) => {
      buffered += chunk.toString();
      let newline = buffered.indexOf("\n");
      while (newline >= 0) {
        const line = JSON.parse(buffered.slice(0, newline)) as Record<string, unknown>;
        buffered = buffered.slice(newline + 1);
        lines.push(line);
        if (line.msg === "agent started") resolve(Number(line.metricsPort));
        newline = buffered.indexOf("\n");
      }
    });
  });
  const exited = new Promise<number | null>((resolve) => child.once("exit", resolve));
  const metricsPort = await started;
  assert.equal((await httpGet(metricsPort, "/healthz")).status, 200);
  child.kill("SIGTERM");
  assert.equal(await exited, 0);
  assert.ok(lines.some((line) => line.msg === "shutting down" && line.signal === "SIGTERM"));
});
