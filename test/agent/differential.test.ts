// Differential proof of the http pipe: every case of the hostile corpus goes through a real agent (TLS, PROXY
// header from "tailscaled" naming client 100.64.0.9) to two real parsers — Go's net/http directly, and HAProxy
// in front of the same Go server — whole and byte by byte (one TLS record per byte). The Go backend
// (test/fixtures/goecho, built here into the temp dir) reports every request it parses. Whatever parser sits
// behind the agent, every request it parses carries exactly the agent's identity (one X-Forwarded-For = the
// PROXY header's client, one X-Forwarded-Proto), no forged variant, and nothing the agent refused arrives as
// a complete request.
import assert from "node:assert/strict";
import { type ChildProcess, execFile, spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { accessSync } from "node:fs";
import { access, mkdir, readFile, writeFile } from "node:fs/promises";
import { connect as netConnect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { after, before, test } from "node:test";
import { connect as tlsConnect } from "node:tls";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import type { RunningAgent } from "../../src/agent/main.js";
import { startAgent } from "../../src/agent/main.js";
import { freePort } from "../fakes/agent/echo.js";
import { createTestPki, type TestPki } from "../fakes/agent/pki.js";
import { HOSTILE_CORPUS } from "./hostile-corpus.js";

const CLIENT = "100.64.0.9";
const GOECHO = fileURLToPath(new URL("../fixtures/goecho/", import.meta.url));
const FORGED = ["Forwarded", "X-Real-Ip", "True-Client-Ip", "X-Client-Ip", "X-Cluster-Client-Ip", "X-Forwarded-Port"];

interface Parsed {
  method: string;
  uri: string;
  host: string;
  header: Record<string, string[]>;
  trailer: Record<string, string[]> | null;
  complete: boolean;
}

const records: Parsed[] = [];
const children: ChildProcess[] = [];
let pki: TestPki;
let agent: RunningAgent;
const ports: Record<"go" | "haproxy", number> = { go: 0, haproxy: 0 };

function which(tool: string, extra: string[] = []): string {
  for (const dir of [...(process.env.PATH ?? "").split(":"), ...extra]) {
    const file = join(dir, tool);
    try {
      accessSync(file);
      return file;
    } catch {}
  }
  throw new Error(`${tool} not found (Go: https://go.dev/dl, haproxy: scripts/ci-deps.sh)`);
}

/** Builds goecho once per source version into the temp dir. */
async function buildGoEcho(): Promise<string> {
  const hash = createHash("sha256");
  for (const f of ["go.mod", "main.go"]) hash.update(await readFile(join(GOECHO, f)));
  const dir = join(tmpdir(), `tailnet-goecho-${hash.digest("hex").slice(0, 16)}`);
  const binary = join(dir, "goecho");
  try {
    await access(binary);
    return binary;
  } catch {}
  await mkdir(dir, { recursive: true });
  const go = which("go", ["/usr/local/go/bin"]);
  await promisify(execFile)(go, ["build", "-o", `${binary}.tmp`, "."], { cwd: GOECHO, timeout: 600_000 });
  await promisify(execFile)("mv", [`${binary}.tmp`, binary]);
  return binary;
}

function own(child: ChildProcess): ChildProcess {
  children.push(child);
  return child;
}

async function startGo(binary: string): Promise<number> {
  const child = own(spawn(binary, [], { stdio: ["ignore", "pipe", "inherit"] }));
  const lines = createInterface({ input: child.stdout as NodeJS.ReadableStream });
  return new Promise((resolve, reject) => {
    child.once("exit", (code) => reject(new Error(`goecho exited ${code}`)));
    lines.on("line", (line) => {
      const listening = /^listening (\d+)$/.exec(line);
      if (listening) resolve(Number(listening[1]));
      else records.push(JSON.parse(line) as Parsed);
    });
  });
}

async function startHaproxy(backendPort: number): Promise<number> {
  const port = await freePort();
  const dir = join(tmpdir(), `tailnet-differential-${process.pid}`);
  await mkdir(dir, { recursive: true });
  const cfg = join(dir, "haproxy.cfg");
  await writeFile(
    cfg,
    `global\n  nbthread 1\ndefaults\n  mode http\n  timeout connect 5s\n  timeout client 10s\n  timeout server 10s\n` +
      `frontend web\n  bind 127.0.0.1:${port}\n  default_backend go\nbackend go\n  server s 127.0.0.1:${backendPort}\n`,
  );
  own(spawn(which("haproxy", ["/usr/sbin"]), ["-db", "-f", cfg], { stdio: ["ignore", "ignore", "inherit"] }));
  for (let i = 0; i < 500; i++) {
    const up = await new Promise<boolean>((resolve) => {
      const s = netConnect({ host: "127.0.0.1", port }, () => resolve(true)).on("error", () => resolve(false));
      s.once("connect", () => s.destroy());
    });
    if (up) return port;
    await new Promise((r) => setTimeout(r, 10));
  }
  throw new Error("haproxy did not listen");
}

before(async () => {
  const binary = await buildGoEcho();
  ports.go = await startGo(binary);
  ports.haproxy = await startHaproxy(ports.go);
  pki = await createTestPki();
  const cert = await pki.issue({ names: ["app.example"] });
  const expose = (name: string, backendPort: number) => ({
    name,
    listenPort: 0,
    mode: "http" as const,
    backend: { host: "127.0.0.1", port: backendPort },
    tls: { certFile: cert.certFile, keyFile: cert.keyFile },
    names: ["app.example"],
    proxyProtocol: true,
  });
  agent = await startAgent(
    {
      role: "ingress",
      metricsPort: 0,
      metricsHost: "127.0.0.1",
      listenHost: "127.0.0.1",
      exposes: [expose("go", ports.go), expose("haproxy", ports.haproxy)],
      limits: {},
    },
    { timers: false, defaultMetrics: false },
  );
});

after(async () => {
  await agent?.close();
  for (const child of children) child.kill("SIGTERM");
  await pki?.cleanup();
});

/**
 * One connection through the agent: PROXY header, TLS, the case's bytes; then, once `served` holds, FIN
 * (never, for a refused case: the agent must close). Resolves with what came back and whether the agent
 * closed by itself. The FIN waits because HAProxy may drop pipelined requests it holds when the client's
 * FIN arrives early.
 */
async function send(
  port: number,
  wire: Buffer,
  bytewise: boolean,
  served?: () => boolean,
): Promise<{ answer: string; closed: boolean }> {
  const raw = netConnect({ host: "127.0.0.1", port, noDelay: true });
  await new Promise<void>((resolve, reject) => raw.once("connect", resolve).once("error", reject));
  raw.write(`PROXY TCP4 ${CLIENT} 100.64.0.1 40000 443\r\n`);
  const tls = tlsConnect({ socket: raw, servername: "app.example", ca: pki.caPem });
  let received = "";
  tls.on("data", (chunk: Buffer) => (received += chunk.toString("latin1")));
  tls.on("error", () => {}); // a reset is an outcome
  const closed = new Promise<void>((resolve) => tls.once("close", () => resolve()));
  await new Promise<void>((resolve, reject) => tls.once("secureConnect", resolve).once("error", reject));
  if (bytewise) {
    for (let i = 0; i < wire.length && !tls.destroyed; i++) {
      tls.write(wire.subarray(i, i + 1));
      await new Promise((r) => setImmediate(r));
    }
  } else tls.write(wire);
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    tls.destroy();
  }, 10_000);
  if (served) {
    for (let i = 0; i < 300 && !served() && !tls.destroyed; i++) await new Promise((r) => setTimeout(r, 10));
    tls.end();
  }
  await closed;
  clearTimeout(timer);
  return { answer: received, closed: !timedOut };
}

function checkIdentity(r: Parsed, where: string): void {
  const what = `${where}: ${JSON.stringify(r)}`;
  assert.deepEqual(r.header["X-Forwarded-For"], [CLIENT], what);
  assert.deepEqual(r.header["X-Forwarded-Proto"], ["https"], what);
  if (r.host) assert.deepEqual(r.header["X-Forwarded-Host"], [r.host], what);
  for (const name of FORGED) {
    assert.equal(r.header[name], undefined, `${name} in ${what}`);
    assert.equal(r.trailer?.[name], undefined, `${name} trailer in ${what}`);
  }
  assert.equal(r.trailer?.["X-Forwarded-For"], undefined, what);
  assert.notEqual(r.uri, "/admin", what);
}

for (const c of HOSTILE_CORPUS) {
  test(`differential, ${c.verdict}: ${c.name}`, async () => {
    const wire = Buffer.from(c.wire, "latin1");
    for (const via of ["go", "haproxy"] as const) {
      const port = agent.ports.exposes.find((e) => e.name === via)?.listenPort ?? 0;
      for (const bytewise of [false, true]) {
        const where = `${via}, ${bytewise ? "byte by byte" : "whole"}`;
        const mark = records.length;
        const served = () => records.slice(mark).filter((r) => r.complete).length >= c.requests;
        const { answer, closed } = await send(port, wire, bytewise, c.verdict === "pass" ? served : undefined);
        assert.ok(closed, `${where}: the connection was not closed`);
        // The backend reports each request before answering it; give late reports a moment.
        for (let i = 0; i < 100 && records.slice(mark).filter((r) => r.complete).length < c.requests; i++)
          await new Promise((r) => setTimeout(r, 10));
        await new Promise((r) => setTimeout(r, 20));
        const parsed = records.slice(mark);
        for (const r of parsed) checkIdentity(r, where);
        const complete = parsed.filter((r) => r.complete);
        assert.equal(
          complete.length,
          c.requests,
          `${where}: ${JSON.stringify(parsed)} answer ${JSON.stringify(answer)}`,
        );
        if (c.verdict === "reject") {
          // The agent's own answer closes the connection, after the answers to what came before; only an
          // error inside a forwarded chunked body cuts the connection without one.
          const refused =
            /(^|\n)HTTP\/1\.1 (400|431|501) [^\r]*\r\n[\s\S]*connection: close\r\n\r\n(501 Not Implemented\n)?$/.test(
              answer,
            );
          const midBody = answer === "" && /transfer-encoding: chunked\r\n/i.test(c.wire);
          assert.ok(refused || midBody, `${where}: answer ${JSON.stringify(answer)}`);
        }
        if (c.verdict === "pass") {
          assert.equal(parsed.length, complete.length, where);
          assert.doesNotMatch(answer, /^HTTP\/1\.1 [45]\d\d /m, where);
        }
      }
    }
  });
}

test("differential: the client's FIN while an upgrade is undecided waits for the held requests", async () => {
  const c = HOSTILE_CORPUS.find((h) => h.name.startsWith("Upgrade the backend declines"));
  assert.ok(c);
  const port = agent.ports.exposes.find((e) => e.name === "go")?.listenPort ?? 0;
  const mark = records.length;
  const { answer, closed } = await send(port, Buffer.from(c.wire, "latin1"), false, () => true);
  assert.ok(closed);
  for (let i = 0; i < 100 && records.length - mark < 2; i++) await new Promise((r) => setTimeout(r, 10));
  assert.deepEqual(
    records.slice(mark).map((r) => [r.uri, r.header["X-Forwarded-For"]]),
    [
      ["/ws", [CLIENT]],
      ["/second", [CLIENT]],
    ],
  );
  assert.equal(answer.match(/^HTTP\/1\.1 200 /gm)?.length, 2, answer);
});
