/**
 * The fake holds the policy to the real Headscale's 4 MiB gRPC message cap (message-size.ts), not to an HTTP
 * body limit: a 2 MiB policy is stored, the cap is counted in the policy's UTF-8 bytes plus its protobuf
 * framing, and an answer past it is refused after the policy was stored. test/real/policy-size.test.ts
 * holds the same figures to the real 0.29.3.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { type FakeHeadscale, useFakeHeadscale } from "./index.js";
import { GRPC_MAX_MESSAGE, policyOfSize } from "./message-size.js";

/** The largest policy a request can carry: field tag (1 byte) and a 4-byte length ahead of its bytes. */
const MAX_POLICY = GRPC_MAX_MESSAGE - 5;
/**
 * A fixed clock, so the answer's size is known: updatedAt 2026-12-05T23:24:33.123Z is a Timestamp of 5-byte
 * seconds and 4-byte nanos, 13 bytes as field 2; the answer is the policy + 5 + 13 bytes.
 */
const NOW = new Date("2026-12-05T23:24:33.123Z");
const ANSWER_OVERHEAD = 18;

async function call(fake: FakeHeadscale, method: string, path: string, policy?: string) {
  const res = await fetch(`${fake.url}${path}`, {
    method,
    headers: { authorization: `Bearer ${fake.apiKey}`, "content-type": "application/json" },
    body: policy === undefined ? undefined : JSON.stringify({ policy }),
  });
  return { status: res.status, json: (await res.json()) as Record<string, unknown> };
}

const tooLarge = (size: number) => ({
  code: 8,
  message: `grpc: received message larger than max (${size} vs. 4194304)`,
  details: [],
});

describe("the 4 MiB gRPC message cap on the policy", () => {
  test("a 2 MiB policy is checked, stored and read back (no 413 at fastify's 1 MiB)", async (t) => {
    const fake = await useFakeHeadscale(t, { now: () => NOW });
    const policy = policyOfSize(2 * 1024 * 1024);
    assert.deepEqual(await call(fake, "POST", "/api/v1/policy/check", policy), { status: 200, json: {} });
    const put = await call(fake, "PUT", "/api/v1/policy", policy);
    assert.equal(put.status, 200);
    assert.equal(put.json.policy, policy);
    assert.equal((await call(fake, "GET", "/api/v1/policy")).json.policy, policy);
  });

  test("one byte past the request cap: check and PUT answer 429 code 8, nothing is stored", async (t) => {
    const fake = await useFakeHeadscale(t, { now: () => NOW });
    const over = policyOfSize(MAX_POLICY + 1);
    for (const [method, path] of [
      ["POST", "/api/v1/policy/check"],
      ["PUT", "/api/v1/policy"],
    ]) {
      assert.deepEqual(await call(fake, method, path, over), { status: 429, json: tooLarge(GRPC_MAX_MESSAGE + 1) });
    }
    assert.equal(fake.state.policies.length, 0);
    assert.equal(fake.policyWrites, 0);
    assert.deepEqual(await call(fake, "POST", "/api/v1/policy/check", policyOfSize(MAX_POLICY)), {
      status: 200,
      json: {},
    });
  });

  test("the cap counts the policy's UTF-8 bytes, not the JSON body's", async (t) => {
    const fake = await useFakeHeadscale(t, { now: () => NOW });
    // newlines: a body of almost 8 MiB (each "\n" escaped as two bytes) for a policy that fits
    const newlines = policyOfSize(MAX_POLICY, "*:*", "newline");
    assert.ok(Buffer.byteLength(JSON.stringify({ policy: newlines })) > 1.9 * GRPC_MAX_MESSAGE);
    assert.equal((await call(fake, "POST", "/api/v1/policy/check", newlines)).status, 200);
    // "é": half as many characters as bytes, and it is the bytes that count
    const accents = policyOfSize(MAX_POLICY + 1, "*:*", "utf8");
    assert.ok(accents.length < 0.6 * GRPC_MAX_MESSAGE);
    assert.deepEqual(await call(fake, "POST", "/api/v1/policy/check", accents), {
      status: 429,
      json: tooLarge(GRPC_MAX_MESSAGE + 1),
    });
  });

  test("an answer past the cap: PUT stores the policy and answers 429; GET answers 429 until a smaller one", async (t) => {
    const fake = await useFakeHeadscale(t, { now: () => NOW });
    const fits = policyOfSize(GRPC_MAX_MESSAGE - ANSWER_OVERHEAD, "*:80");
    const put = await call(fake, "PUT", "/api/v1/policy", fits);
    assert.equal(put.status, 200, "an answer of exactly 4 MiB passes");
    assert.equal(put.json.policy, fits);

    const stored = policyOfSize(GRPC_MAX_MESSAGE - ANSWER_OVERHEAD + 1, "*:4242");
    const refused = { status: 429, json: tooLarge(GRPC_MAX_MESSAGE + 1) };
    assert.deepEqual(await call(fake, "POST", "/api/v1/policy/check", stored), { status: 200, json: {} });
    assert.deepEqual(await call(fake, "PUT", "/api/v1/policy", stored), refused);
    assert.equal(fake.state.policies.at(-1)?.text, stored, "stored all the same");
    assert.equal(fake.policyWrites, 2);
    assert.deepEqual(await call(fake, "GET", "/api/v1/policy"), refused);

    const small = policyOfSize(100);
    assert.equal((await call(fake, "PUT", "/api/v1/policy", small)).status, 200);
    assert.equal((await call(fake, "GET", "/api/v1/policy")).json.policy, small);
  });
});
