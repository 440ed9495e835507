// The Tailnet's policy against Headscale's message size: a render past what Headscale 0.29's API takes in one
// message is never sent (test/real/policy-size.test.ts measures the real limit; the fake holds to it).

import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { HEADSCALE_MAX_POLICY_BYTES } from "../../../../src/kinds/composite/tailnet/plan.js";
import { apiKeySecret, BASE, baseConfigMap, ingress } from "./fixtures.js";
import { harness, settleStable } from "./harness.js";

const putCount = (h: { fake: { count(m: string, p: RegExp): number } }) => h.fake.count("PUT", /^\/api\/v1\/policy$/);

/** The fixture's base policy with `hosts` entries enough to bring it to about `bytes`. */
function baseOfSize(bytes: number): string {
  const entries: string[] = [];
  for (let i = 0, size = BASE.length; size < bytes; i++) {
    const entry = `"host-${i}": "100.${64 + ((i >> 16) & 63)}.${(i >> 8) & 255}.${i & 255}/32"`;
    entries.push(entry);
    size += entry.length + 2;
  }
  return BASE.replace('"groups":', `"hosts": {\n${entries.join(",\n")}\n},\n  "groups":`);
}

describe("Tailnet e2e: Headscale's message size", () => {
  it("a render past the limit: PolicyTooLarge, nothing sent; back under it: written", async (t) => {
    // the text written is the pretty policy with its cluster-section line: larger than the base alone
    const big = baseOfSize(HEADSCALE_MAX_POLICY_BYTES);
    const h = await harness(t, { objects: (fake) => [apiKeySecret(fake.apiKey), baseConfigMap(big)] });
    h.mc.apply(ingress());
    await settleStable(h);
    const applied = h.condition("PolicyApplied");
    assert.equal(applied.status, "False");
    assert.equal(applied.reason, "PolicyTooLarge");
    const size = Number(/the rendered policy is (\d+) bytes/.exec(applied.message)?.[1]);
    assert.ok(size > HEADSCALE_MAX_POLICY_BYTES, applied.message);
    assert.match(applied.message, /takes at most 4194280 .*nothing was sent \(Headscale's stored policy is sha256:/);
    assert.equal(putCount(h), 0);
    assert.equal(h.reason("PolicyRendered"), "Rendered");

    h.mc.apply(baseConfigMap(baseOfSize(1_200_000)));
    await settleStable(h);
    assert.equal(h.reason("PolicyApplied"), "InSync");
    assert.equal(putCount(h), 1);
    const stored = Buffer.byteLength(h.fake.state.policies.at(-1)?.text ?? "");
    assert.ok(stored > 2_000_000 && stored <= HEADSCALE_MAX_POLICY_BYTES, `${stored} bytes stored`);
  });
});
