// A routed http expose for real on loopback: one host, two HTTP backends chosen per request by path
// (src/agent/routes.ts), over fresh connections and within one keep-alive connection (pipelined requests for
// alternating backends answered in order), and the attack targets answered 400 without reaching a backend.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { connect as tlsConnect } from "node:tls";
import { startAgent } from "../../src/agent/main.js";
import type { AgentExpose } from "../../src/contract/agent-config.js";
import { type HttpBackend, startHttpBackend } from "../fakes/agent/echo.js";
import { createTestPki, type IssuedCertificate, type TestPki } from "../fakes/agent/pki.js";
import { agentFor } from "./helpers.js";

const NAME = "shop.ts.example.com";
let pki: TestPki;
let cert: IssuedCertificate;
before(async () => {
  pki = await createTestPki();
  cert = await pki.issue({ names: [NAME] });
});
after(() => pki.cleanup());

async function backendFor(t: { after(fn: () => Promise<void>): void }): Promise<HttpBackend> {
  const backend = await startHttpBackend();
  t.after(() => backend.close());
  return backend;
}

function routed(web: HttpBackend, api: HttpBackend): AgentExpose {
  return {
    name: "shop",
    listenPort: 0,
    mode: "http",
    backend: { host: "127.0.0.1", port: web.port },
    paths: [
      { path: "/api", pathType: "Prefix", backend: { host: "127.0.0.1", port: api.port } },
      { path: "/api/public", pathType: "Exact", backend: { host: "127.0.0.1", port: web.port } },
    ],
    tls: { certFile: cert.certFile, keyFile: cert.keyFile },
    names: [NAME],
  };
}

/** Writes `raw` on one TLS connection and reads until the agent closes it or `answers` responses came. */
function exchange(port: number, raw: string, answers: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = tlsConnect({ host: "127.0.0.1", port, servername: NAME, ca: pki.caPem }, () => socket.write(raw));
    let text = "";
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`timed out with ${JSON.stringify(text.slice(0, 400))}`));
    }, 10_000);
    const done = () => {
      clearTimeout(timer);
      socket.destroy();
      resolve(text);
    };
    socket.setEncoding("latin1");
    socket.on("data", (chunk: string) => {
      text += chunk;
      if ((text.match(/"bodySha256"/g) ?? []).length >= answers) done();
    });
    socket.on("end", done);
    socket.on("error", reject);
  });
}

const get = (path: string) => `GET ${path} HTTP/1.1\r\nhost: ${NAME}\r\n\r\n`;
/** The urls of the echo answers in `text`, in order. */
const urls = (text: string) => [...text.matchAll(/"url":"([^"]*)"/g)].map((m) => m[1]);

async function start(t: Parameters<typeof agentFor>[0]) {
  const web = await backendFor(t);
  const api = await backendFor(t);
  const agent = await agentFor(t, {
    role: "ingress",
    metricsPort: 0,
    metricsHost: "127.0.0.1",
    listenHost: "127.0.0.1",
    exposes: [routed(web, api)],
  });
  const port = agent.ports.exposes[0].listenPort;
  return { web, api, port };
}

test("each path reaches its backend: Prefix by element, Exact before a shorter Prefix, the rest to the default", async (t) => {
  const { web, api, port } = await start(t);
  for (const [path, to] of [
    ["/api", api],
    ["/api/orders?x=1", api],
    ["/api/public", web],
    ["/api/public/x", api],
    ["/apis", web],
    ["/", web],
    ["/API", web],
  ] as const) {
    const before = to.requests.length;
    const text = await exchange(port, get(path), 1);
    assert.match(text, /^HTTP\/1\.1 200 /, path);
    assert.deepEqual(urls(text), [path]);
    assert.equal(to.requests.length, before + 1, `${path} went to the other backend`);
    assert.equal(to.requests.at(-1)?.url, path);
  }
});

test("one keep-alive connection: pipelined requests for alternating backends are answered in order", async (t) => {
  const { web, api, port } = await start(t);
  const paths = ["/api/1", "/home", "/api/2", "/api/3", "/about", "/api/public"];
  const text = await exchange(port, paths.map(get).join(""), paths.length);
  assert.deepEqual(urls(text), paths);
  assert.deepEqual(
    api.requests.map((r) => r.url),
    ["/api/1", "/api/2", "/api/3"],
  );
  assert.deepEqual(
    web.requests.map((r) => r.url),
    ["/home", "/about", "/api/public"],
  );
  // Each run of requests for one backend shared a backend connection; each switch dialled a new one. /about
  // (the default backend) and /api/public (a rule to the same Service) are one backend: no switch between them.
  assert.equal(api.requests[1].remotePort, api.requests[2].remotePort);
  assert.equal(web.requests[1].remotePort, web.requests[2].remotePort);
  assert.equal(api.connections, 2);
  assert.equal(web.connections, 2);
});

test("attack targets are answered 400 and reach no backend; what came before them is answered first", async (t) => {
  const { web, api, port } = await start(t);
  for (const path of ["/api/../admin", "/api%2F..%2Fadmin", "//api", "/api;x=1", "/%61pi", "http://x/api"]) {
    const text = await exchange(port, get(path), 1);
    assert.match(text, /^HTTP\/1\.1 400 /, path);
  }
  assert.equal(web.requests.length + api.requests.length, 0);
  const text = await exchange(port, get("/api/ok") + get("/api/../admin"), 2);
  assert.deepEqual(urls(text), ["/api/ok"]);
  assert.match(text, /HTTP\/1\.1 400 /);
  assert.equal(api.requests.length, 1);
  assert.equal(web.requests.length, 0);
});

test("bodies (Content-Length and chunked) stay with their request across switches; a client FIN after them still gets every answer", async (t) => {
  const { web, api, port } = await start(t);
  const post = (path: string, body: string) =>
    `POST ${path} HTTP/1.1\r\nhost: ${NAME}\r\ncontent-length: ${body.length}\r\n\r\n${body}`;
  const chunked = (path: string) =>
    `POST ${path} HTTP/1.1\r\nhost: ${NAME}\r\ntransfer-encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n`;
  const raw = post("/api/a", "GET /home HTTP/1.1\r\n\r\n") + chunked("/form") + post("/api/b", "xyz") + get("/end");
  const text = await new Promise<string>((resolve, reject) => {
    const socket = tlsConnect({ host: "127.0.0.1", port, servername: NAME, ca: pki.caPem }, () => socket.end(raw));
    let out = "";
    socket.setEncoding("latin1");
    socket.on("data", (chunk: string) => (out += chunk));
    socket.on("close", () => resolve(out));
    socket.on("error", reject);
    setTimeout(() => socket.destroy(new Error(`timed out with ${out.slice(0, 300)}`)), 10_000).unref();
  });
  assert.deepEqual(urls(text), ["/api/a", "/form", "/api/b", "/end"]);
  assert.deepEqual(
    [...text.matchAll(/"bodyBytes":(\d+)/g)].map((m) => Number(m[1])),
    [22, 5, 3, 0],
  );
  assert.deepEqual(
    api.requests.map((r) => r.url),
    ["/api/a", "/api/b"],
  );
  assert.deepEqual(
    web.requests.map((r) => r.url),
    ["/form", "/end"],
    "a request line inside a body is never routed",
  );
});

test("an upgrade after a switch goes to the routed backend and becomes a raw stream there", async (t) => {
  const { web, api, port } = await start(t);
  const upgrade = `GET /api/ws HTTP/1.1\r\nhost: ${NAME}\r\nconnection: upgrade\r\nupgrade: echo\r\n\r\n`;
  const text = await new Promise<string>((resolve, reject) => {
    const socket = tlsConnect({ host: "127.0.0.1", port, servername: NAME, ca: pki.caPem }, () =>
      socket.write(get("/home") + upgrade),
    );
    let out = "";
    let pinged = false;
    socket.setEncoding("latin1");
    socket.on("data", (chunk: string) => {
      out += chunk;
      if (!pinged && out.includes("101 Switching Protocols")) {
        pinged = true;
        socket.write("GET /not-a-request\r\n");
      }
      if (out.endsWith("GET /not-a-request\r\n")) {
        socket.destroy();
        resolve(out);
      }
    });
    socket.on("error", reject);
    setTimeout(() => socket.destroy(new Error(`timed out with ${out.slice(0, 300)}`)), 10_000).unref();
  });
  assert.deepEqual(urls(text), ["/home"]);
  assert.match(text, /HTTP\/1\.1 101 Switching Protocols/);
  assert.deepEqual(
    web.requests.map((r) => r.url),
    ["/home"],
  );
  assert.deepEqual(
    api.requests.map((r) => r.url),
    ["/api/ws"],
  );
});

test("a config with a bad rule path does not start", async () => {
  await assert.rejects(
    startAgent({
      role: "ingress",
      metricsPort: 0,
      metricsHost: "127.0.0.1",
      listenHost: "127.0.0.1",
      exposes: [
        {
          name: "shop",
          listenPort: 0,
          mode: "http",
          backend: { host: "127.0.0.1", port: 1 },
          paths: [{ path: "/a/../b", pathType: "Prefix", backend: { host: "127.0.0.1", port: 2 } }],
          tls: { certFile: "/nonexistent", keyFile: "/nonexistent" },
          names: [NAME],
        },
      ],
    }),
    /exposes\[0\]\.paths\[0\].*\.\./,
  );
});
