// Differential proof of per-request routing: the same request bytes go (1) through a real agent whose expose
// routes Prefix /api to one backend and Exact /api/public and the rest to another, (2) to HAProxy with the
// same rules as `path`/`path_beg` ACLs, and (3) to Go's net/http ServeMux with the same rules as patterns
// (test/fixtures/goroute; it decodes and cleans the path before matching). Every target the agent forwards is
// routed by HAProxy and by Go to the same backend as by the agent; every target it refuses is 400 and reaches
// no backend. The Gateway API's method and header matches (POST on Exact /api/public, X-Canary: on on Prefix
// /api, to a third backend) are routed alike too, and where the three differ by design (a repeated header) the
// agent's reading is pinned.
import assert from "node:assert/strict";
import { type ChildProcess, execFile, spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { accessSync } from "node:fs";
import { access, mkdir, readFile, rm, writeFile } from "node:fs/promises";
import { createServer, type Server } from "node:http";
import { connect as netConnect, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { after, before, test } from "node:test";
import { connect as tlsConnect } from "node:tls";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { type RunningAgent, startAgent } from "../../src/agent/main.js";
import { freePort } from "../fakes/agent/echo.js";
import { createTestPki, type TestPki } from "../fakes/agent/pki.js";

const GOROUTE = fileURLToPath(new URL("../fixtures/goroute/", import.meta.url));
const NAME = "app.example";
const children: ChildProcess[] = [];
const servers: Server[] = [];
let pki: TestPki;
let agent: RunningAgent;
let haproxyDir = "";
const ports = { go: 0, haproxy: 0, agent: 0 };

/** Forwarded by the agent: each must be routed alike by all three. */
const ROUTED = [
  "/",
  "/api",
  "/api/",
  "/api/x",
  "/api/x/",
  "/api/public",
  "/api/public/x",
  "/apis",
  "/API",
  "/Api/x",
  "/api?next=/../admin",
  "/api/caf%C3%A9",
  "/x%20y",
  "/api/a.b",
  "/api/..x",
  "/api/x..",
  "/api/.x",
  "/api/public?x",
];
/** Refused by the agent (400): a decoding, cleaning or parameter-stripping reader could route them elsewhere. */
const REFUSED = [
  "/api/../admin",
  "/api/public/..",
  "/api/./public",
  "/api%2F..%2Fadmin",
  "/api/%2e%2e/public",
  "/%61pi/x",
  "/api%2fpublic",
  "//api",
  "/api//public",
  "/api;x=1",
  "/api/public;x",
  "/api\\public",
  "/api%25",
  "http://app.example/api",
];

function which(tool: string, extra: string[] = []): string {
  for (const dir of [...(process.env.PATH ?? "").split(":"), ...extra]) {
    try {
      accessSync(join(dir, tool));
      return join(dir, tool);
    } catch {}
  }
  throw new Error(`${tool} not found (Go: https://go.dev/dl, haproxy: scripts/ci-deps.sh)`);
}

async function buildGoRoute(): Promise<string> {
  const hash = createHash("sha256");
  for (const f of ["go.mod", "main.go"]) hash.update(await readFile(join(GOROUTE, f)));
  const dir = join(tmpdir(), `tailnet-goroute-${hash.digest("hex").slice(0, 16)}`);
  const binary = join(dir, "goroute");
  try {
    await access(binary);
    return binary;
  } catch {}
  await mkdir(dir, { recursive: true });
  const go = which("go", ["/usr/local/go/bin"]);
  await promisify(execFile)(go, ["build", "-o", `${binary}.tmp`, "."], { cwd: GOROUTE, timeout: 600_000 });
  await promisify(execFile)("mv", [`${binary}.tmp`, binary]);
  return binary;
}

async function startGo(binary: string): Promise<number> {
  const child = spawn(binary, [], { stdio: ["ignore", "pipe", "inherit"] });
  children.push(child);
  const lines = createInterface({ input: child.stdout as NodeJS.ReadableStream });
  return new Promise((resolve, reject) => {
    child.once("exit", (code) => reject(new Error(`goroute exited ${code}`)));
    lines.on("line", (line) => {
      const m = /^listening (\d+)$/.exec(line);
      if (m) resolve(Number(m[1]));
    });
  });
}

async function startHaproxy(): Promise<number> {
  const port = await freePort();
  haproxyDir = join(tmpdir(), `tailnet-paths-differential-${process.pid}`);
  await mkdir(haproxyDir, { recursive: true });
  const cfg = join(haproxyDir, "haproxy.cfg");
  // The Ingress rules as HAProxy's documented raw-path fetches: `path` is exact, `path_beg /api/` plus
  // `path /api` is Prefix /api by element. Exact /api/public is the longer rule, so it is checked first.
  await writeFile(
    cfg,
    [
      "global",
      "  nbthread 1",
      "defaults",
      "  mode http",
      "  timeout connect 5s",
      "  timeout client 10s",
      "  timeout server 10s",
      "frontend web",
      `  bind 127.0.0.1:${port}`,
      "  acl public path /api/public",
      "  acl api path /api",
      "  acl api path_beg /api/",
      // the Gateway API matches: a method on Exact /api/public, an exact header value on Prefix /api
      "  acl post method POST",
      "  acl canary req.hdr(x-canary) -m str on",
      '  http-request return status 200 content-type text/plain string "route: canary" if public post',
      '  http-request return status 200 content-type text/plain string "route: web" if public',
      '  http-request return status 200 content-type text/plain string "route: canary" if api canary',
      '  http-request return status 200 content-type text/plain string "route: api" if api',
      '  http-request return status 200 content-type text/plain string "route: web"',
      "",
    ].join("\n"),
  );
  children.push(spawn(which("haproxy", ["/usr/sbin"]), ["-db", "-f", cfg], { stdio: ["ignore", "ignore", "inherit"] }));
  for (let i = 0; i < 500; i++) {
    const up = await new Promise<boolean>((resolve) => {
      const s = netConnect({ host: "127.0.0.1", port }, () => {
        s.destroy();
        resolve(true);
      }).on("error", () => resolve(false));
    });
    if (up) return port;
    await new Promise((r) => setTimeout(r, 10));
  }
  throw new Error("haproxy did not listen");
}

/** A backend of the agent that answers with its name and remembers the targets it got. */
async function named(name: string, got: string[]): Promise<number> {
  const server = createServer((req, res) => {
    got.push(req.url ?? "");
    res.end(`route: ${name}`);
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return (server.address() as { port: number }).port;
}

const reached: string[] = [];

before(async () => {
  const binary = await buildGoRoute();
  ports.go = await startGo(binary);
  ports.haproxy = await startHaproxy();
  pki = await createTestPki();
  const cert = await pki.issue({ names: [NAME] });
  const api = await named("api", reached);
  const web = await named("web", reached);
  const canary = await named("canary", reached);
  agent = await startAgent(
    {
      role: "ingress",
      metricsPort: 0,
      metricsHost: "127.0.0.1",
      listenHost: "127.0.0.1",
      exposes: [
        {
          name: "app",
          listenPort: 0,
          mode: "http",
          backend: { host: "127.0.0.1", port: web },
          paths: [
            { path: "/api", pathType: "Prefix", backend: { host: "127.0.0.1", port: api } },
            { path: "/api/public", pathType: "Exact", backend: { host: "127.0.0.1", port: web } },
            {
              path: "/api",
              pathType: "Prefix",
              headers: [{ name: "X-Canary", value: "on" }],
              backend: { host: "127.0.0.1", port: canary },
            },
            { path: "/api/public", pathType: "Exact", method: "POST", backend: { host: "127.0.0.1", port: canary } },
          ],
          tls: { certFile: cert.certFile, keyFile: cert.keyFile },
          names: [NAME],
        },
      ],
    },
    { timers: false, defaultMetrics: false },
  );
  ports.agent = agent.ports.exposes[0].listenPort;
});

after(async () => {
  await agent?.close();
  for (const s of servers) s.close();
  for (const c of children) c.kill();
  await pki?.cleanup();
  if (haproxyDir) await rm(haproxyDir, { recursive: true, force: true });
});

/** One request's answer: `route: <name>`, or the status when it is not 200 (a 301 from Go's cleaning, a 400). */
function ask(via: "go" | "haproxy" | "agent", target: string, method = "GET", fields: string[] = []): Promise<string> {
  const extra = fields.map((f) => `${f}\r\n`).join("");
  const raw = `${method} ${target} HTTP/1.1\r\nhost: ${NAME}\r\n${extra}content-length: 0\r\nconnection: close\r\n\r\n`;
  return new Promise((resolve, reject) => {
    const socket: Socket =
      via === "agent"
        ? tlsConnect({ host: "127.0.0.1", port: ports.agent, servername: NAME, ca: pki.caPem }, () => socket.write(raw))
        : netConnect({ host: "127.0.0.1", port: ports[via] }, () => socket.write(raw));
    let text = "";
    socket.setEncoding("latin1");
    socket.on("data", (chunk: string) => (text += chunk));
    socket.on("close", () => {
      const status = /^HTTP\/1\.[01] (\d{3})/.exec(text)?.[1] ?? "none";
      resolve(status === "200" ? (/route: (\w+)/.exec(text)?.[1] ?? "no route") : status);
    });
    socket.on("error", reject);
    setTimeout(() => socket.destroy(new Error(`${via} ${target}: timed out`)), 10_000).unref();
  });
}

test("what the agent routes, HAProxy and Go's ServeMux route to the same backend", async () => {
  for (const target of ROUTED) {
    const viaAgent = await ask("agent", target);
    assert.match(viaAgent, /^(api|web)$/, target);
    assert.equal(await ask("haproxy", target), viaAgent, `HAProxy routes ${target} elsewhere`);
    assert.equal(await ask("go", target), viaAgent, `Go's ServeMux routes ${target} elsewhere`);
  }
  assert.equal(reached.length, ROUTED.length);
  assert.deepEqual(reached, ROUTED, "the target reaches the backend byte for byte");
});

/**
 * Method and header matches (Gateway API HTTPRouteMatch): the agent's router against HAProxy's `method` and
 * `req.hdr() -m str` and Go's method patterns and Header.Get, on requests where the three agree by design (no
 * repeated header: HAProxy matches any comma-separated value, Go reads the first, the agent the joined list).
 */
const MATCHED: [method: string, target: string, fields: string[], expected: string][] = [
  ["POST", "/api/public", [], "canary"],
  ["GET", "/api/public", [], "web"],
  ["PUT", "/api/public", [], "web"],
  ["POST", "/api/public/x", [], "api"],
  ["GET", "/api/x", ["X-Canary: on"], "canary"],
  ["GET", "/api", ["x-canary:on"], "canary"],
  ["GET", "/api/x", ["x-canary: \t on \t "], "canary"],
  ["GET", "/api/x", ["x-canary: On"], "api"],
  ["GET", "/api/x", ["x-canary: on2"], "api"],
  ["GET", "/api/x", ["x-canary-x: on"], "api"],
  ["GET", "/apis", ["x-canary: on"], "web"],
  ["GET", "/", ["x-canary: on"], "web"],
  ["POST", "/api", ["x-canary: on"], "canary"],
  ["GET", "/api/public", ["x-canary: on"], "web"],
];

test("method and header matches: the agent, HAProxy and Go's ServeMux route alike", async () => {
  for (const [method, target, fields, expected] of MATCHED) {
    const what = `${method} ${target} ${fields.join(" | ")}`;
    assert.equal(await ask("agent", target, method, fields), expected, `the agent: ${what}`);
    assert.equal(await ask("haproxy", target, method, fields), expected, `HAProxy: ${what}`);
    assert.equal(await ask("go", target, method, fields), expected, `Go's ServeMux: ${what}`);
  }
});

test("a repeated header: the three differ, and the agent takes the strict reading (the joined value must match)", async () => {
  const twice = ["x-canary: off", "x-canary: on"];
  // RFC 9110 §5.3: the field's value is the list "off, on", which is not "on"
  assert.equal(await ask("agent", "/api/x", "GET", twice), "api");
  // HAProxy's req.hdr() matches any comma-separated occurrence; Go's Header.Get reads the first
  assert.equal(await ask("haproxy", "/api/x", "GET", twice), "canary");
  assert.equal(await ask("go", "/api/x", "GET", twice), "api");
  assert.equal(await ask("go", "/api/x", "GET", [...twice].reverse()), "canary");
  assert.equal(await ask("agent", "/api/x", "GET", [...twice].reverse()), "api");
});

test("what the agent refuses is 400 and reaches no backend", async () => {
  const before = reached.length;
  for (const target of REFUSED) assert.equal(await ask("agent", target), "400", target);
  assert.equal(reached.length, before);
});

/** The route of a target's raw path bytes under the test's rules, with no check (what a naive router does). */
function rawRoute(target: string): string {
  const path = target.split("?")[0];
  if (path === "/api/public") return "web";
  return path === "/api" || path.startsWith("/api/") ? "api" : "web";
}

test("why refuse: Go's ServeMux reads such targets as other paths than their raw bytes say", async () => {
  const differs: string[] = [];
  for (const target of REFUSED.filter((t) => t.startsWith("/"))) {
    const go = await ask("go", target);
    if (go !== rawRoute(target)) differs.push(`${target} → Go ${go}, raw ${rawRoute(target)}`);
  }
  // Decoding (/%61pi/x is /api/x to Go) and cleaning (a redirect to the cleaned path) are each represented.
  assert.ok(
    differs.some((d) => d.startsWith("/%61pi/x → Go api")),
    differs.join("\n"),
  );
  assert.ok(
    differs.some((d) => / → Go 30[178]/.test(d)),
    differs.join("\n"),
  );
});
