/**
 * Hook fuzzing (issue: hardening): generated bodies against the real server in process — malformed
 * JSON, wrong types at every depth, huge strings and arrays, deep nesting, unicode, v1/v2 key
 * mixes, missing and extra keys. Zero 5xx, every 4xx names the problem, and memory is flat
 * afterwards. `npm test` runs FUZZ_RUNS (default 300) bodies per hook path; `npm run fuzz` 10,000.
 * A failure prints fast-check's seed and path so it can be replayed.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import fc from "fast-check";
import { HOOK_KINDS } from "../../src/api/schemas.js";
import { customizeRequest, parentObject, syncRequest } from "../fixtures/hooks.js";
import { build } from "../helpers/server.js";

const RUNS = Number(process.env.FUZZ_RUNS ?? 300);
const SEED = Number(process.env.FUZZ_SEED ?? 20261129);

const validParents: Record<string, () => ReturnType<typeof parentObject>> = {
  tailnet: () =>
    parentObject("Tailnet", "home", {
      headscale: { url: "https://hs.example.com", apiKeySecretRef: { namespace: "tailnet-system", name: "k" } },
      policy: { mode: "Apply" },
      reservedNetworks: ["10.96.0.0/12"],
    }),
  egress: () =>
    parentObject(
      "TailnetEgress",
      "db",
      { tailnetRef: { name: "home" }, targets: [{ name: "pg", host: "db-1", ports: [{ port: 5432 }] }] },
      { namespace: "shop" },
    ),
  ingress: () =>
    parentObject(
      "TailnetIngress",
      "web",
      {
        tailnetRef: { name: "home" },
        hostname: "grafana",
        mode: "http",
        allowFrom: ["group:eng"],
        exposes: [{ name: "web", port: 443, backend: { service: "grafana", port: 3000 }, tls: { secretName: "tls" } }],
      },
      { namespace: "mon" },
    ),
  site: () =>
    parentObject(
      "TailnetSite",
      "lan",
      { tailnetRef: { name: "home" }, prefixes: ["192.168.1.0/24"], advertiserTags: ["tag:router"] },
      { namespace: "net" },
    ),
  gateway: () =>
    parentObject(
      "TailnetGateway",
      "gw",
      { tailnetRef: { name: "home" }, hostname: "gw", routes: ["10.96.0.0/12"], dns: { zone: "ts.example.com" } },
      { namespace: "net" },
    ),
  user: () => parentObject("TailnetUser", "alice", { tailnetRef: { name: "home" }, name: "alice" }),
  authkey: () =>
    parentObject(
      "TailnetAuthKey",
      "runners",
      { tailnetRef: { name: "home" }, tags: ["tag:ci"], secretName: "join" },
      { namespace: "ci" },
    ),
};

type Json = unknown;
const weird = fc.oneof(
  fc.jsonValue({ maxDepth: 3 }),
  fc.string({ unit: "grapheme", maxLength: 40 }),
  fc.constantFrom(null, true, 0, -1, 1e308, "", "💥", "\u0000", "a".repeat(70000), [], {}, { metadata: null }),
  fc.integer().map((n) => Array.from({ length: Math.abs(n) % 2000 }, (_, i) => i)),
  fc.nat(400).map((d) => {
    let v: Json = "x";
    for (let i = 0; i < d; i++) v = i % 2 ? [v] : { a: v };
    return v;
  }),
);

/** Every path (as key lists) of a JSON value, to mutate at any depth. */
function paths(v: Json, prefix: string[] = [], out: string[][] = []): string[][] {
  out.push(prefix);
  if (v && typeof v === "object" && prefix.length < 8) {
    for (const k of Object.keys(v as object)) paths((v as Record<string, Json>)[k], [...prefix, k], out);
  }
  return out;
}

function mutate(base: Json, path: string[], op: "set" | "delete" | "extra" | "rekey", value: Json): Json {
  const root = structuredClone(base) as Record<string, Json>;
  if (path.length === 0) return op === "set" ? value : root;
  let node = root as Record<string, Json>;
  for (const k of path.slice(0, -1)) node = node[k] as Record<string, Json>;
  const last = path[path.length - 1];
  if (op === "set") node[last] = value;
  if (op === "delete") delete node[last];
  if (op === "extra") node[`x-${last}`] = value;
  if (op === "rekey" && node[last] && typeof node[last] === "object") {
    // v1-style bare-name keys mixed into v2 maps
    const inner = node[last] as Record<string, Json>;
    for (const k of Object.keys(inner)) {
      inner[k.split("/").pop() ?? k] = inner[k];
    }
  }
  return root;
}

function bodyFor(kind: string, hook: string): Json {
  const parent = validParents[kind]();
  return hook === "customize" ? customizeRequest(parent) : syncRequest({ parent, finalizing: hook === "finalize" });
}

function heapUsedAfterGc(): number {
  setFlagsFromString("--expose-gc");
  const gc = runInNewContext("gc") as () => void;
  gc();
  gc();
  return process.memoryUsage().heapUsed;
}

describe("hook fuzzing", () => {
  for (const kind of HOOK_KINDS) {
    for (const hook of ["customize", "sync", "finalize"]) {
      it(`/hooks/${kind}/${hook}: ${RUNS} generated bodies, no 5xx, every 4xx names the problem`, async (t) => {
        const { app } = await build(t, { config: { logLevel: "silent" } });
        const base = bodyFor(kind, hook);
        const allPaths = paths(base);
        const body = fc.oneof(
          {
            weight: 5,
            arbitrary: fc
              .tuple(fc.constantFrom(...allPaths), fc.constantFrom("set", "delete", "extra", "rekey" as const), weird)
              .map(([p, op, v]) => JSON.stringify(mutate(base, p, op as "set", v))),
          },
          { weight: 1, arbitrary: fc.nat(2000).map((n) => JSON.stringify(base).slice(0, n)) },
          { weight: 1, arbitrary: weird.map((v) => JSON.stringify(v) ?? "null") },
          { weight: 1, arbitrary: fc.string({ unit: "binary", maxLength: 200 }) },
        );
        await fc.assert(
          fc.asyncProperty(body, async (payload) => {
            const res = await app.inject({
              method: "POST",
              url: `/hooks/${kind}/${hook}`,
              headers: { "content-type": "application/json" },
              payload,
            });
            assert.ok(res.statusCode < 500, `HTTP ${res.statusCode}: ${res.body.slice(0, 300)}`);
            const parsed = JSON.parse(res.body) as Record<string, unknown>;
            if (res.statusCode === 200) {
              assert.ok(
                hook === "customize"
                  ? Array.isArray(parsed.relatedResources)
                  : typeof parsed.status === "object" && Array.isArray(parsed.children),
              );
            } else {
              assert.ok([400, 404, 413, 415, 429].includes(res.statusCode), `HTTP ${res.statusCode}`);
              assert.equal(typeof parsed.error, "string");
              // one line: "<field>: <problem>" (or "unknown …" for a path that names nothing)
              assert.match(
                parsed.error as string,
                /^(?:[^\n]+?: [^\n]+|unknown [^\n]+)$/,
                `4xx must name the problem: ${parsed.error}`,
              );
            }
          }),
          { numRuns: RUNS, seed: SEED, verbose: 1 },
        );
      });
    }
  }

  it("memory is flat after a fuzzing round", async (t) => {
    const { app } = await build(t, { config: { logLevel: "silent" } });
    const payload = JSON.stringify(bodyFor("egress", "sync"));
    const round = async () => {
      for (let i = 0; i < 2000; i++) {
        await app.inject({
          method: "POST",
          url: "/hooks/egress/sync",
          headers: { "content-type": "application/json" },
          payload: i % 3 ? payload : payload.slice(0, i % 500),
        });
      }
    };
    await round();
    const before = heapUsedAfterGc();
    await round();
    await round();
    const after = heapUsedAfterGc();
    assert.ok(
      after - before < 8 * 2 ** 20,
      `heap grew by ${((after - before) / 2 ** 20).toFixed(1)} MiB over two rounds`,
    );
  });
});
