// The router's Gateway API matches (src/agent/routes.ts): a method and exact header values beyond the path,
// weighted backends, and a host without fallback (404). Precedence as HTTPRouteRule's godoc orders it
// (kubernetes-sigs/gateway-api apis/v1/httproute_types.go): the path first, then a method, then more headers.
import assert from "node:assert/strict";
import { test } from "node:test";
import { RequestFramer } from "../../src/agent/framer.js";
import { HttpFramingError } from "../../src/agent/http1.js";
import { exposeRouter, PathRouter, type PathRule, type RequestFacts } from "../../src/agent/routes.js";
import { type AgentExpose, parseAgentConfig } from "../../src/contract/agent-config.js";
import { pathsProblem } from "../../src/contract/paths.js";

const req = (method: string, ...fieldLines: string[]): RequestFacts => ({ method, fieldLines });
const status = (f: () => unknown) => {
  try {
    f();
  } catch (e) {
    if (e instanceof HttpFramingError) return e.status;
    throw e;
  }
  return "routed";
};

const rules: PathRule<string>[] = [
  { path: "/api", pathType: "Prefix", backend: "api" },
  { path: "/api", pathType: "Prefix", backend: "api-canary", headers: [{ name: "X-Canary", value: "yes" }] },
  {
    path: "/api",
    pathType: "Prefix",
    backend: "api-canary-eu",
    headers: [
      { name: "x-canary", value: "yes" },
      { name: "x-region", value: "eu" },
    ],
  },
  { path: "/api", pathType: "Prefix", backend: "api-write", method: "POST" },
  { path: "/api/v2", pathType: "Prefix", backend: "v2" },
];

test("at the same path a method wins over headers, more headers over fewer; a longer path wins over both", () => {
  const r = new PathRouter(rules, "default");
  assert.equal(r.route("/api/x", req("GET", "host: h")), "api");
  assert.equal(r.route("/api/x", req("GET", "host: h", "x-canary: yes")), "api-canary");
  assert.equal(r.route("/api/x", req("GET", "X-CANARY: yes", "x-region:eu ")), "api-canary-eu");
  assert.equal(r.route("/api/x", req("POST", "x-canary: yes", "x-region: eu")), "api-write");
  assert.equal(r.route("/api/v2/x", req("POST", "x-canary: yes")), "v2");
  assert.equal(r.route("/other", req("POST")), "default");
});

test("header values are exact and case-sensitive; a repeated header is its values joined with ', '", () => {
  const r = new PathRouter(rules, "default");
  assert.equal(r.route("/api", req("GET", "x-canary: Yes")), "api");
  assert.equal(r.route("/api", req("GET", "x-canary: yes2")), "api");
  assert.equal(r.route("/api", req("GET", "x-canary: yes", "x-canary: no")), "api");
  const joined = new PathRouter(
    [{ path: "/", pathType: "Prefix", backend: "both", headers: [{ name: "x-a", value: "1, 2" }] }],
    "default",
  );
  assert.equal(joined.route("/", req("GET", "x-a: 1", "x-a: 2")), "both");
});

test("a method is case-sensitive; a caller that passes no request facts never matches method or header rules", () => {
  const r = new PathRouter(rules, "default");
  assert.equal(r.route("/api", req("post")), "api");
  assert.equal(r.route("/api"), "api");
});

test("attack: the agent's own headers are never matched — a client-sent x-forwarded-for is dropped before routing", () => {
  const router = new PathRouter<string>(
    [{ path: "/", pathType: "Prefix", backend: "trusted", headers: [{ name: "x-forwarded-for", value: "10.0.0.1" }] }],
    "public",
  );
  const framer = new RequestFramer("100.64.0.9", undefined, (t, r) => router.route(t, r));
  framer.push(Buffer.from("GET / HTTP/1.1\r\nhost: h\r\nx-forwarded-for: 10.0.0.1\r\n\r\n", "latin1"));
  assert.equal(framer.current, "public");
});

test("weights: a seeded pick follows the weights, weight 0 is never chosen, all zero answers 500", () => {
  let seed = 42;
  const rng = () => {
    seed = (seed * 1103515245 + 12345) % 2 ** 31;
    return seed / 2 ** 31;
  };
  const r = new PathRouter<string>(
    [
      {
        path: "/",
        pathType: "Prefix",
        backend: "a",
        backends: [
          { backend: "a", weight: 90 },
          { backend: "b", weight: 10 },
          { backend: "never", weight: 0 },
        ],
      },
    ],
    undefined,
    rng,
  );
  const counts: Record<string, number> = {};
  for (let i = 0; i < 10_000; i++) {
    const b = r.route("/x", req("GET"));
    counts[b] = (counts[b] ?? 0) + 1;
  }
  assert.equal(counts.never, undefined);
  assert.ok(counts.a > 8_700 && counts.a < 9_300, JSON.stringify(counts));
  assert.ok(counts.b > 700 && counts.b < 1_300, JSON.stringify(counts));
  const zero = new PathRouter<string>(
    [{ path: "/", pathType: "Prefix", backend: "a", backends: [{ backend: "a", weight: 0 }] }],
    "default",
  );
  assert.equal(
    status(() => zero.route("/", req("GET"))),
    500,
  );
});

test("an unresolved share (an entry without backend) answers 500 for its proportion of requests", () => {
  let i = 0;
  const r = new PathRouter<string>(
    [{ path: "/", pathType: "Prefix", backend: "a", backends: [{ backend: "a", weight: 1 }, { weight: 1 }] }],
    undefined,
    () => (i++ % 4) / 4,
  );
  const seen = [0, 1, 2, 3].map(() => status(() => r.route("/", req("GET"))));
  assert.deepEqual(seen, ["routed", "routed", 500, 500]);
});

test("no fallback: a request no rule matches is a 404, OPTIONS * too", () => {
  const r = new PathRouter<string>([{ path: "/api", pathType: "Exact", backend: "api" }], undefined);
  assert.equal(r.route("/api", req("GET")), "api");
  assert.equal(
    status(() => r.route("/apix", req("GET"))),
    404,
  );
  assert.equal(
    status(() => r.route("*", req("OPTIONS"))),
    404,
  );
});

test("config: method, headers, weights and unmatched are checked; duplicates are by path, method and headers", () => {
  const expose = (paths: unknown[], extra: Record<string, unknown> = {}) => ({
    role: "ingress",
    metricsPort: 9080,
    exposes: [
      {
        name: "web",
        listenPort: 0,
        mode: "http",
        backend: { host: "a", port: 80 },
        paths,
        tls: { certFile: "/c", keyFile: "/k" },
        names: ["web.ts.example"],
        ...extra,
      },
    ],
  });
  const ok = parseAgentConfig(
    JSON.stringify(
      expose(
        [
          { path: "/", pathType: "Prefix", method: "GET", backend: { host: "a", port: 80 } },
          {
            path: "/",
            pathType: "Prefix",
            headers: [{ name: "x-v", value: "2" }],
            backends: [{ host: "b", port: 80, weight: 1 }, { host: "c", port: 80, weight: 0 }, { weight: 0 }],
          },
        ],
        { unmatched: "notFound" },
      ),
    ),
  );
  const router = exposeRouter(ok.exposes[0] as AgentExpose);
  assert.deepEqual(router?.route("/", req("GET")), { host: "a", port: 80 });
  assert.deepEqual(router?.route("/", req("PUT", "x-v: 2")), { host: "b", port: 80 });
  assert.equal(
    status(() => router?.route("/", req("PUT"))),
    404,
  );
  const refused = (paths: unknown[], field: RegExp, extra?: Record<string, unknown>) =>
    assert.throws(() => parseAgentConfig(JSON.stringify(expose(paths, extra))), field);
  const b = { host: "a", port: 80 };
  refused([{ path: "/", pathType: "Prefix", method: "CONNECT", backend: b }], /paths\[0\]\.method/);
  refused([{ path: "/", pathType: "Prefix", method: "get", backend: b }], /paths\[0\]\.method/);
  refused([{ path: "/", pathType: "Prefix", headers: [{ name: "a b", value: "1" }], backend: b }], /name/);
  refused([{ path: "/", pathType: "Prefix", headers: [{ name: "a", value: "x\r\ny: 1" }], backend: b }], /value/);
  refused([{ path: "/", pathType: "Prefix", backend: b, backends: [] }], /backends/);
  refused([{ path: "/", pathType: "Prefix", backend: b, backends: [{ ...b, weight: 1 }] }], /exactly one/);
  refused([{ path: "/", pathType: "Prefix" }], /exactly one/);
  refused([{ path: "/", pathType: "Prefix", backends: [{ host: "a", weight: 1 }] }], /port/);
  refused([{ path: "/", pathType: "Prefix", backends: [{ ...b, weight: -1 }] }], /weight/);
  refused([], /unmatched/, { paths: undefined, unmatched: "notFound" });
  assert.equal(
    pathsProblem([
      { path: "/", pathType: "Prefix", backend: b, headers: [{ name: "X-A", value: "1" }] },
      { path: "/", pathType: "Prefix", backend: b, headers: [{ name: "x-a", value: "1" }] },
    ])?.problem,
    "duplicates paths[0] (Prefix / header x-a=1)",
  );
  assert.equal(
    pathsProblem([
      { path: "/", pathType: "Prefix", method: "GET", backend: b },
      { path: "/", pathType: "Prefix", backend: b },
    ]),
    undefined,
  );
  assert.match(
    pathsProblem([
      {
        path: "/",
        pathType: "Prefix",
        backend: b,
        headers: [
          { name: "x-a", value: "1" },
          { name: "X-A", value: "2" },
        ],
      },
    ])?.problem ?? "",
    /matched twice/,
  );
});
