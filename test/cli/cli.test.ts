/**
 * The CLI behaves for every subcommand: --help exits 0 with its usage and starts nothing, an unknown
 * flag exits 2 naming it, a missing file is one line (no stack trace), --version prints package.json's.
 * Most cases run main() in process; the ones about processes (serve --help must not listen, no stack
 * trace on stderr) spawn the real entry point.
 */
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, it } from "node:test";
import { fileURLToPath } from "node:url";
import { main } from "../../src/cli.js";

const root = fileURLToPath(new URL("../../", import.meta.url));
const version = (JSON.parse(readFileSync(`${root}package.json`, "utf8")) as { version: string }).version;

async function run(argv: string[]): Promise<{ code: number; out: string; err: string }> {
  let out = "";
  let err = "";
  const o = process.stdout.write.bind(process.stdout);
  const e = process.stderr.write.bind(process.stderr);
  process.stdout.write = ((s: string) => {
    out += s;
    return true;
  }) as typeof process.stdout.write;
  process.stderr.write = ((s: string) => {
    err += s;
    return true;
  }) as typeof process.stderr.write;
  const before = process.exitCode;
  try {
    await main(argv);
    return { code: Number(process.exitCode ?? 0), out, err };
  } finally {
    process.stdout.write = o;
    process.stderr.write = e;
    process.exitCode = before;
  }
}

function spawnCli(
  argv: string[],
  timeoutMs = 20000,
  extraEnv: Record<string, string> = {},
): Promise<{ code: number | null; out: string; err: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(`${root}node_modules/.bin/node`, [`${root}bin/tailnet-operator.js`, ...argv], {
      cwd: root,
      env: { ...process.env, PORT: "0", LOG_LEVEL: "info", ...extraEnv },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let out = "";
    let err = "";
    child.stdout.on("data", (d) => {
      out += d;
    });
    child.stderr.on("data", (d) => {
      err += d;
    });
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`${argv.join(" ")} still running after ${timeoutMs} ms: it started something`));
    }, timeoutMs);
    child.on("exit", (code) => {
      clearTimeout(timer);
      resolve({ code, out, err });
    });
  });
}

const SUBCOMMANDS: { argv: string[]; usage: RegExp; missingFile: string[]; missing: RegExp }[] = [
  {
    argv: ["serve"],
    usage: /^usage: tailnet-operator serve \[--config <file>\] \[--allow-unauthenticated-hooks\]\n[\s\S]*HOOK_TOKEN/,
    missingFile: ["--config", "/nonexistent/operator.yaml"],
    missing: /^cannot read operator config \/nonexistent\/operator\.yaml: ENOENT: no such file or directory/,
  },
  {
    argv: ["agent"],
    usage: /^usage: tailnet-operator agent \[--config <file>\]\n[\s\S]*\/etc\/tailnet-agent\/config\.json/,
    missingFile: ["--config", "/nonexistent/agent.json"],
    missing: /^agent config \/nonexistent\/agent\.json: cannot be read \(ENOENT\)/,
  },
  {
    argv: ["render"],
    usage: /^usage: tailnet-operator render -f <file\|dir>\.\.\. \[options\]\n[\s\S]*--summary[\s\S]*exit status/,
    missingFile: ["-f", "/nonexistent/x.yaml"],
    missing: /^\/nonexistent\/x\.yaml: no such file or directory\nrender: 1 problem in 1 file; nothing rendered\n$/,
  },
  {
    argv: ["headscale", "snapshot"],
    usage: /^usage: tailnet-operator headscale snapshot --url <url> --api-key-file <file> \[--ca-file <file>\]\n/,
    missingFile: ["--url", "http://127.0.0.1:9", "--api-key-file", "/nonexistent/key"],
    missing: /^headscale snapshot: --api-key-file \/nonexistent\/key: no such file or directory\n$/,
  },
  {
    argv: ["records"],
    usage: /^usage: tailnet-operator records --config <file>\n[\s\S]*dns\.extra_records_path/,
    missingFile: ["--config", "/nonexistent/records.yaml"],
    missing: /^records config \/nonexistent\/records\.yaml: ENOENT\n$/,
  },
];

describe("CLI", () => {
  for (const s of SUBCOMMANDS) {
    const name = s.argv.join(" ");
    describe(name, () => {
      it("--help and -h print the usage on stdout and exit 0", async () => {
        for (const h of ["--help", "-h"]) {
          const r = await run([...s.argv, h]);
          assert.equal(r.code, 0, r.err);
          assert.match(r.out, s.usage);
          assert.equal(r.err, "");
        }
      });
      it("--help wins over an unknown flag next to it", async () => {
        const r = await run([...s.argv, "--bogus", "--help"]);
        assert.equal(r.code, 0);
        assert.match(r.out, s.usage);
      });
      it("an unknown flag exits 2 naming it", async () => {
        const r = await run([...s.argv, "--bogus"]);
        assert.equal(r.code, 2);
        assert.equal(r.err, `${name}: unknown flag --bogus\nrun \`tailnet-operator ${name} --help\` for its usage\n`);
        assert.equal(r.out, "");
      });
      it("--version prints the package version", async () => {
        const r = await run([...s.argv, "--version"]);
        assert.equal(r.code, 0);
        assert.equal(r.out, `${version}\n`);
      });
      it("a missing file is one clear line", async () => {
        const r = await run([...s.argv, ...s.missingFile]);
        assert.notEqual(r.code, 0);
        assert.match(r.err, s.missing);
        assert.doesNotMatch(r.err, /\n\s+at /, "no stack trace");
      });
    });
  }

  it("a flag without its value exits 2", async () => {
    const r = await run(["serve", "--config"]);
    assert.equal(r.code, 2);
    assert.match(r.err, /^serve: --config needs a value\n/);
  });
  it("records without --config exits 2; an invalid config exits 1 naming every bad field", async () => {
    const r = await run(["records"]);
    assert.equal(r.code, 2);
    assert.match(r.err, /^records needs --config <file>\nrun `tailnet-operator records --help` for its usage\n$/);
    const dir = mkdtempSync(join(tmpdir(), "records-cli-"));
    try {
      writeFileSync(
        join(dir, "bad.yaml"),
        "output: records.json\nbaseDomain: ts.test\nsources:\n  - name: A\n    names: ['*.evil.com']\n",
      );
      const bad = await run(["records", "--config", join(dir, "bad.yaml")]);
      assert.equal(bad.code, 1);
      assert.equal(
        bad.err,
        [
          "records config:",
          "  output: an absolute path (Headscale's dns.extra_records_path)",
          "  sources[0].name: a lower-case DNS label (it is a metric label)",
          '  sources[0].names: "*.evil.com" is not below the base domain ts.test',
          "  sources[0]: set kubernetes (a cluster's records ConfigMap) or file",
          "",
        ].join("\n"),
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
  it("tailnet-operator --version and an unknown command", async () => {
    assert.equal((await run(["--version"])).out, `${version}\n`);
    const r = await run(["sreve"]);
    assert.equal(r.code, 2);
    assert.match(r.err, /^unknown command "sreve"\n/);
  });
  it("headscale snapshot without --url exits 2 naming both required flags", async () => {
    const r = await run(["headscale", "snapshot", "--api-key-file", "/x"]);
    assert.equal(r.code, 2);
    assert.match(r.err, /^headscale snapshot: --url and --api-key-file are required\n/);
  });

  it("serve without a hook token refuses to start unless unauthenticated hooks are asked for (spawned)", async () => {
    const env = { HOOK_TOKEN: "", ALLOW_UNAUTHENTICATED_HOOKS: "" };
    const r = await spawnCli(["serve"], 20000, env);
    assert.equal(r.code, 1);
    assert.match(r.err, /^no hook token: set HOOK_TOKEN .* or pass --allow-unauthenticated-hooks/);
    assert.doesNotMatch(r.err, /\n\s+at /);
  });

  it("serve --help exits 0 at once and never listens (spawned)", async () => {
    const r = await spawnCli(["serve", "--help"]);
    assert.equal(r.code, 0);
    assert.match(r.out, /^usage: tailnet-operator serve/);
    assert.doesNotMatch(r.out + r.err, /listening|Server listening/i);
  });
  it("agent --help exits 0 and a missing snapshot key file has no stack trace (spawned)", async () => {
    const a = await spawnCli(["agent", "--help"]);
    assert.equal(a.code, 0);
    const b = await spawnCli(["headscale", "snapshot", "--url", "http://127.0.0.1:9", "--api-key-file", "/nope"]);
    assert.equal(b.code, 2);
    assert.equal(b.err, "headscale snapshot: --api-key-file /nope: no such file or directory\n");
  });
});
