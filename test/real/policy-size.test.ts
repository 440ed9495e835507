/**
 * How big a policy the real Headscale 0.29.3 takes through its REST API, and the fake held to the same answers.
 * /api/v1 is grpc-gateway over a local gRPC connection that sets no message size (juanfont/headscale
 * hscontrol/app.go: `grpc.NewServer()` on the unix socket, `grpc.Dial` to it), so grpc-go's 4 MiB default
 * caps both the request message and the answer (test/fakes/headscale/message-size.ts has the arithmetic):
 * - a policy of more than 4,194,299 UTF-8 bytes (message = policy + 5 bytes of framing) is refused before
 *   SetPolicy or CheckPolicy runs: 429 `{code: 8, message: "grpc: received message larger than max (N vs.
 *   4194304)"}`, nothing stored;
 * - a PUT whose answer (the policy again, plus updated_at: 13 to 19 more bytes) passes 4 MiB stores the policy
 *   and serves it, then answers 429, and so does every GET /api/v1/policy while it is stored.
 * SQLite; about 10 s.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { type Agent, request } from "undici";
import type { FakeHeadscale } from "../fakes/headscale/index.js";
import { GRPC_MAX_MESSAGE, policyOfSize } from "../fakes/headscale/message-size.js";
import type { RealHeadscale } from "./headscale.js";
import { sideBySide } from "./side-by-side.js";

let hs: RealHeadscale;
let fake: FakeHeadscale;
let dispatcher: Agent;

sideBySide("hspolsize", { bins: ["headscale"] }, (s) => {
  ({ hs, fake, dispatcher } = s);
});

interface Answer {
  status: number;
  body: Record<string, unknown>;
}

type Side = "real" | "fake";

async function call(side: Side, method: string, path: string, policy?: string): Promise<Answer> {
  const [base, key] = side === "real" ? [hs.url, hs.apiKey] : [fake.url, fake.apiKey];
  const r = await request(`${base}${path}`, {
    method: method as "GET",
    dispatcher,
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: policy === undefined ? undefined : JSON.stringify({ policy }),
  });
  return { status: r.statusCode, body: (await r.body.json()) as Record<string, unknown> };
}

/** The same call to both; the real answer returned, the fake's asserted equal to it. */
async function same(method: string, path: string, policy?: string): Promise<Answer> {
  const real = await call("real", method, path, policy);
  const faked = await call("fake", method, path, policy);
  assert.deepEqual(faked, real, `fake vs real: ${method} ${path}`);
  return real;
}

/** The largest policy a request carries: the field's tag and 4-byte length ahead of its bytes. */
const MAX_POLICY = GRPC_MAX_MESSAGE - 5;
const tooLarge = (size: number) => ({
  status: 429,
  body: { code: 8, message: `grpc: received message larger than max (${size} vs. 4194304)`, details: [] },
});
const SIZE_IN = /^grpc: received message larger than max \((\d+) vs\. 4194304\)$/;

describe("a policy at grpc-go's 4 MiB message cap, real 0.29.3 and the fake", { concurrency: false }, () => {
  it("one byte past the request cap: check and PUT answer 429 code 8 and nothing is stored", async () => {
    const over = policyOfSize(MAX_POLICY + 1);
    assert.deepEqual(await same("POST", "/api/v1/policy/check", over), tooLarge(GRPC_MAX_MESSAGE + 1));
    assert.deepEqual(await same("PUT", "/api/v1/policy", over), tooLarge(GRPC_MAX_MESSAGE + 1));
    const stored = await same("GET", "/api/v1/policy");
    assert.equal(stored.status, 500);
    assert.equal(stored.body.message, "loading ACL from database: acl policy not found");
  });

  it("at the cap the check passes; the cap counts the policy's UTF-8 bytes, not the JSON body's", async () => {
    assert.deepEqual(await same("POST", "/api/v1/policy/check", policyOfSize(MAX_POLICY)), { status: 200, body: {} });
    // almost 8 MiB of JSON body (each newline escaped as two bytes) for a policy that fits
    const newlines = policyOfSize(MAX_POLICY, "*:*", "newline");
    assert.ok(Buffer.byteLength(JSON.stringify({ policy: newlines })) > 1.9 * GRPC_MAX_MESSAGE);
    assert.deepEqual(await same("POST", "/api/v1/policy/check", newlines), { status: 200, body: {} });
    // "é" is 2 UTF-8 bytes: ~2.1 million characters are past the cap
    const accents = policyOfSize(MAX_POLICY + 1, "*:*", "utf8");
    assert.deepEqual(await same("POST", "/api/v1/policy/check", accents), tooLarge(GRPC_MAX_MESSAGE + 1));
  });

  it("a PUT whose answer fits (policy + 19 bytes at most ≤ 4 MiB) is stored and read back", async () => {
    const policy = policyOfSize(GRPC_MAX_MESSAGE - 19, "*:80");
    for (const side of ["real", "fake"] as const) {
      const put = await call(side, "PUT", "/api/v1/policy", policy);
      assert.equal(put.status, 200, `${side} PUT`);
      assert.equal(put.body.policy, policy);
      const got = await call(side, "GET", "/api/v1/policy");
      assert.equal(got.status, 200, `${side} GET`);
      assert.equal(got.body.policy, policy);
    }
  });

  it("a PUT whose answer passes 4 MiB is stored and served, answers 429, and GET answers 429 until a smaller PUT", async () => {
    // the answer is policy + 5 + updated_at's 8 to 14 bytes: past the cap whatever its nanoseconds
    const bytes = GRPC_MAX_MESSAGE - 12;
    const policy = policyOfSize(bytes, "*:4242");
    assert.doesNotMatch(await hs.debug("/debug/filter"), /4242/);
    for (const side of ["real", "fake"] as const) {
      assert.deepEqual(await call(side, "POST", "/api/v1/policy/check", policy), { status: 200, body: {} });
      const put = await call(side, "PUT", "/api/v1/policy", policy);
      assert.equal(put.status, 429, `${side} PUT`);
      assert.equal(put.body.code, 8);
      const size = Number(SIZE_IN.exec(String(put.body.message))?.[1]);
      assert.ok(size >= bytes + 13 && size <= bytes + 19, `${side}: the answer's size ${size}`);
      assert.deepEqual(await call(side, "GET", "/api/v1/policy"), tooLarge(size), `${side} GET`);
    }
    // stored and live: the real server filters with it (hscontrol/debug.go /debug/filter), the fake stores it
    assert.match(await hs.debug("/debug/filter"), /4242/);
    assert.equal(fake.state.policies.at(-1)?.text, policy);

    const small = policyOfSize(200, "*:22");
    for (const side of ["real", "fake"] as const) {
      assert.equal((await call(side, "PUT", "/api/v1/policy", small)).status, 200, `${side} PUT after`);
      assert.equal((await call(side, "GET", "/api/v1/policy")).body.policy, small, `${side} GET after`);
    }
  });
});
