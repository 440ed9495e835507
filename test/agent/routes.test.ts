// The per-request path router (src/agent/routes.ts): the attack targets first, each with the verdict chosen
// and why, then the Kubernetes Ingress path rules against a reference written from the Ingress docs'
// examples table (kubernetes.io/docs/concepts/services-networking/ingress/#examples), by property.
import assert from "node:assert/strict";
import { test } from "node:test";
import fc from "fast-check";
import { RequestFramer } from "../../src/agent/framer.js";
import { HttpFramingError } from "../../src/agent/http1.js";
import { PathRouter, type PathRule, requestPath } from "../../src/agent/routes.js";
import { rulePathProblem } from "../../src/contract/paths.js";

const rules: PathRule<string>[] = [
  { path: "/api", pathType: "Prefix", backend: "api" },
  { path: "/admin", pathType: "Exact", backend: "admin" },
];
const router = new PathRouter(rules, "default");

const refused = (target: string) =>
  assert.throws(
    () => router.route(target),
    (e: unknown) => e instanceof HttpFramingError && e.status === 400,
    target,
  );

test("attack: dot segments are refused, not resolved (a normalising backend would read /api/../admin as /admin)", () => {
  refused("/api/../admin");
  refused("/api/./x");
  refused("/api/..");
  refused("/..");
});

test("attack: percent-encoded slashes and dots are refused (a decoding backend would route /api%2F..%2Fadmin as /admin)", () => {
  refused("/api%2F..%2Fadmin");
  refused("/api%2f..%2fadmin");
  refused("/api/%2e%2e/admin");
  refused("/api/%2E%2E/admin");
  refused("/api%5Cadmin");
  refused("/api%3Bx");
  // Encoded unreserved characters: nginx decodes them before matching, so /%61dmin would be /admin there.
  refused("/%61dmin");
  refused("/api%25"); // double encoding: %25 decodes to %, a second decode could make anything
  refused("/api%2"); // malformed
  // UTF-8 and space stay: no rule path contains them decoded.
  assert.equal(router.route("/api/caf%C3%A9"), "api");
  assert.equal(router.route("/x%20y"), "default");
});

test("attack: /API is another path (Ingress paths are case-sensitive, as are Go's ServeMux and HAProxy's path)", () => {
  assert.equal(router.route("/API"), "default");
  assert.equal(router.route("/ADMIN"), "default");
  assert.equal(router.route("/Api/x"), "default");
});

test("attack: empty segments are refused (Go's ServeMux cleans //admin to /admin, we would not match it)", () => {
  refused("//admin");
  refused("/api//x");
  refused("//");
});

test("attack: absolute-form is refused (its authority or Host could win, backends disagree)", () => {
  refused("http://evil/admin");
  assert.throws(() => requestPath("admin"), HttpFramingError);
});

test("attack: ; path parameters and backslashes are refused (Tomcat strips ;x, IIS and some routers read \\ as /)", () => {
  refused("/admin;x=1");
  refused("/api;/../admin");
  refused("/api\\..\\admin");
});

test("the query is not part of the path, and may hold anything", () => {
  assert.equal(router.route("/admin?x=/api/../%2F;"), "admin");
  assert.equal(router.route("/api?"), "api");
  assert.equal(router.route("*"), "default"); // OPTIONS *
});

test("Kubernetes examples: Prefix by element, trailing slash ignored, Exact byte for byte", () => {
  const r = (path: string, pathType: "Exact" | "Prefix") =>
    new PathRouter([{ path, pathType, backend: "hit" }], "miss");
  const cases: [string, "Exact" | "Prefix", string, boolean][] = [
    ["/", "Prefix", "/anything", true],
    ["/foo", "Exact", "/foo", true],
    ["/foo", "Exact", "/bar", false],
    ["/foo", "Exact", "/foo/", false],
    ["/foo/", "Exact", "/foo", false],
    ["/foo", "Prefix", "/foo", true],
    ["/foo", "Prefix", "/foo/", true],
    ["/foo/", "Prefix", "/foo", true],
    ["/foo/", "Prefix", "/foo/", true],
    ["/aaa/bb", "Prefix", "/aaa/bbb", false],
    ["/aaa/bbb", "Prefix", "/aaa/bbb", true],
    ["/aaa/bbb/", "Prefix", "/aaa/bbb", true],
    ["/aaa/bbb", "Prefix", "/aaa/bbb/", true],
    ["/aaa/bbb", "Prefix", "/aaa/bbb/ccc", true],
    ["/aaa/bbb", "Prefix", "/aaa/bbbxyz", false],
  ];
  for (const [path, type, request, match] of cases) {
    assert.equal(r(path, type).route(request), match ? "hit" : "miss", `${type} ${path} vs ${request}`);
  }
  const mixed = new PathRouter<string>(
    [
      { path: "/", pathType: "Prefix", backend: "root" },
      { path: "/aaa", pathType: "Prefix", backend: "aaa" },
    ],
    "miss",
  );
  assert.equal(mixed.route("/aaa/ccc"), "aaa");
  assert.equal(mixed.route("/ccc"), "root");
});

test("Exact beats Prefix of the same path; the longer path wins whatever the order", () => {
  const both = new PathRouter<string>(
    [
      { path: "/foo", pathType: "Prefix", backend: "prefix" },
      { path: "/foo", pathType: "Exact", backend: "exact" },
      { path: "/foo/bar", pathType: "Prefix", backend: "longer" },
    ],
    "default",
  );
  assert.equal(both.route("/foo"), "exact");
  assert.equal(both.route("/foo/"), "prefix");
  assert.equal(both.route("/foo/bar/baz"), "longer");
  assert.equal(both.route("/foo/ba"), "prefix");
});

/** The reference: the Ingress docs' wording, on strings (no element split), every match then the best. */
function reference(rs: readonly PathRule<number>[], path: string): number {
  const matches = rs.flatMap((r, i) => {
    if (r.pathType === "Exact") return path === r.path ? [{ i, len: r.path.length, exact: 1 }] : [];
    const p = r.path.endsWith("/") ? r.path.slice(0, -1) : r.path;
    const hit = p === "" || path === p || path.startsWith(`${p}/`);
    return hit ? [{ i, len: p.length === 0 ? 1 : p.length, exact: 0 }] : [];
  });
  matches.sort((a, b) => b.len - a.len || b.exact - a.exact || a.i - b.i);
  return matches.length ? rs[matches[0].i].backend : -1;
}

const element = fc.constantFrom("a", "b", "ab", "A", "a.b", "x-y");
const pathArb = fc
  .tuple(fc.array(element, { maxLength: 4 }), fc.boolean())
  .map(([els, slash]) => (els.length === 0 ? "/" : `/${els.join("/")}${slash ? "/" : ""}`));

test("property: every path routes where the Kubernetes rules send it", () => {
  fc.assert(
    fc.property(
      fc.array(fc.tuple(pathArb, fc.constantFrom("Exact" as const, "Prefix" as const)), { maxLength: 8 }),
      pathArb,
      fc.constantFrom("", "?q=1", "?/a/../b"),
      (raw, path, query) => {
        const rs = raw.map(([p, pathType], backend) => ({ path: p, pathType, backend }));
        assert.equal(new PathRouter(rs, -1).route(path + query), reference(rs, path));
      },
    ),
    { numRuns: 3000 },
  );
});

test("property: a Prefix rule never matches across an element boundary (/a vs /ab)", () => {
  fc.assert(
    fc.property(pathArb, element, (base, extra) => {
      const p = base === "/" ? "/a" : `${base.replace(/\/$/, "")}`;
      const rt = new PathRouter([{ path: p, pathType: "Prefix", backend: 1 }], 0);
      assert.equal(rt.route(`${p}${extra}`), 0);
      assert.equal(rt.route(`${p}/${extra}`), 1);
    }),
  );
});

test("rule paths that can never match as written are refused by the config checks", () => {
  for (const bad of [
    "api",
    "/a/../b",
    "/a//b",
    "/a?b",
    "/a#b",
    "/a;b",
    "/a\\b",
    "/a%2Fb",
    "/a b",
    `/${"a".repeat(300)}`,
  ]) {
    assert.ok(rulePathProblem(bad), bad);
  }
  for (const good of ["/", "/api", "/api/", "/a.b/c-d_e~f/", "/v1:x@y"]) assert.equal(rulePathProblem(good), undefined);
});

/** Feeds `pieces` to a routed framer as the pipe does (switching at once): the bytes each backend gets, in order. */
function routedRun(pieces: Buffer[]): { backend: string; bytes: string }[] {
  const framer = new RequestFramer("100.64.0.9", undefined, (t) => (t.startsWith("/api") ? "api" : "web"));
  const out: { backend: string; bytes: string }[] = [];
  const add = (bufs: Buffer[]) => {
    const bytes = Buffer.concat(bufs).toString("latin1");
    if (!bytes) return;
    const backend = String(framer.current);
    if (out.at(-1)?.backend === backend) out[out.length - 1].bytes += bytes;
    else out.push({ backend, bytes });
  };
  for (const piece of pieces) {
    add(framer.push(piece));
    while (framer.switching) add(framer.switched());
  }
  assert.equal(framer.failed, undefined);
  return out;
}

test("framer: a head for another backend is held with all after it, whatever the split of the input", () => {
  const wire = Buffer.from(
    "GET /api/1 HTTP/1.1\r\nhost: h\r\n\r\n" +
      "POST /home HTTP/1.1\r\nhost: h\r\ncontent-length: 30\r\n\r\nGET /api/x HTTP/1.1\r\nhost: h\r\n" +
      "\r\nGET /about HTTP/1.1\r\nhost: h\r\n\r\n" +
      "GET /api/2 HTTP/1.1\r\nhost: h\r\n\r\n",
    "latin1",
  );
  const whole = routedRun([wire]);
  assert.deepEqual(
    whole.map((s) => [s.backend, [...s.bytes.matchAll(/^(?:GET|POST) (\S+)/gm)].map((m) => m[1])]),
    [
      ["api", ["/api/1"]],
      ["web", ["/home", "/api/x", "/about"]], // /api/x is body bytes of /home, never a request
      ["api", ["/api/2"]],
    ],
  );
  for (let i = 1; i < wire.length; i++) {
    assert.deepEqual(routedRun([wire.subarray(0, i), wire.subarray(i)]), whole, `split at ${i}`);
  }
  assert.deepEqual(routedRun([...wire].map((b) => Buffer.from([b]))), whole, "byte by byte");
});

/** Percent-decoding byte by byte (latin1), as a decoding server does before it matches. */
const decodeAll = (p: string) =>
  p.replace(/%([0-9a-fA-F]{2})/g, (_, h: string) => String.fromCharCode(Number.parseInt(h, 16)));
/** Dot segments resolved and empty segments merged (Go's path.Clean keeps a trailing slash in ServeMux; nginx merge_slashes). */
function cleanPath(p: string): string {
  const out: string[] = [];
  const parts = p.split("/");
  for (const part of parts.slice(1)) {
    if (part === "" || part === ".") continue;
    if (part === "..") out.pop();
    else out.push(part);
  }
  const trailing = p.endsWith("/") || p.endsWith("/.") || p.endsWith("/..");
  return `/${out.join("/")}${trailing && out.length ? "/" : ""}`;
}
/** How servers behind the agent read a raw path: each a different, documented normalisation. */
const READERS: Record<string, (p: string) => string> = {
  "Go net/http ServeMux (decode, then clean)": (p) => cleanPath(decodeAll(p)),
  "nginx location (decode, merge slashes, resolve dots)": (p) => cleanPath(decodeAll(p)),
  "Tomcat (strip ;parameters, decode, normalise)": (p) => cleanPath(decodeAll(p.replace(/;[^/]*/g, ""))),
  "IIS-style (\\ is /, decode, normalise)": (p) => cleanPath(decodeAll(p.replace(/\\/g, "/"))),
  "decode twice": (p) => cleanPath(decodeAll(decodeAll(p))),
};
const token = fc.constantFrom(
  "a",
  "api",
  "admin",
  ".",
  "..",
  "/",
  "//",
  "%2e",
  "%2E",
  "%2f",
  "%2F",
  "%5c",
  "\\",
  ";",
  "x=1",
  "%61",
  "%20",
  "%C3%A9",
  "%25",
  "%",
  "%2",
);

test("property: every path the agent routes reads the same to decoding and normalising servers behind it", () => {
  let accepted = 0;
  fc.assert(
    fc.property(fc.array(token, { maxLength: 8 }), (tokens) => {
      const path = `/${tokens.join("")}`;
      let routed: string | undefined;
      try {
        routed = requestPath(path);
      } catch (e) {
        assert.ok(e instanceof HttpFramingError && e.status === 400);
        return;
      }
      accepted++;
      assert.equal(routed, path);
      // What the agent matched (its bytes, the allowed %20 and UTF-8 decoded alike) is what each reader sees.
      for (const [reader, read] of Object.entries(READERS))
        assert.equal(read(path), decodeAll(path), `${reader}: ${path}`);
    }),
    { numRuns: 5000 },
  );
  assert.ok(accepted > 100, `only ${accepted} accepted paths: the generator tests nothing`);
});
