// The impure helpers around the write: the policy/check memo, the write backoff and the metrics.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { cond } from "../../../src/conditions/condition.js";
import type { HeadscaleView } from "../../../src/headscale/view.js";
import { clearFailures, pendingFailure, recordFailure } from "../../../src/kinds/tailnet/act.js";
import { findOwnApiKey, publishTailnetMetrics } from "../../../src/kinds/tailnet/metrics.js";
import { CHECK_MEMO_MS, checkPolicy } from "../../../src/kinds/tailnet/observe.js";
import { createOperatorMetrics } from "../../../src/metrics/registry.js";
import { hsError, NOW, OWN_KEY, ok, serverError } from "./fixtures.js";

/** A view whose only used part is client.policy.check, answering from a queue. */
function checkView(answers: (Error | undefined)[]) {
  const texts: string[] = [];
  const view = {
    client: {
      policy: {
        check: async (text: string) => {
          texts.push(text);
          const a = answers.shift();
          if (a) throw a;
        },
      },
    },
  } as unknown as HeadscaleView;
  return { view, texts };
}

describe("checkPolicy memo", () => {
  it("reuses a verdict for the same hash until it expires; builds the text only on a miss", async () => {
    const rejected = hsError({
      operation: "POST /api/v1/policy/check",
      status: 400,
      detail: "parsing policy: x",
      classification: "policyInvalid",
    });
    const { view, texts } = checkView([undefined, rejected, undefined]);
    let built = 0;
    const text = () => {
      built++;
      return "{}";
    };
    assert.deepEqual(await checkPolicy(view, "sha256:a", text, NOW), { ok: true, value: undefined });
    assert.deepEqual(await checkPolicy(view, "sha256:a", text, new Date(NOW.getTime() + CHECK_MEMO_MS - 1)), {
      ok: true,
      value: undefined,
    });
    assert.equal(built, 1);
    const r = await checkPolicy(view, "sha256:b", text, NOW);
    assert.equal(r.ok, false);
    assert.equal((await checkPolicy(view, "sha256:b", text, NOW)).ok, false, "a rejection is a verdict too");
    assert.equal(texts.length, 2);
    await checkPolicy(view, "sha256:a", text, new Date(NOW.getTime() + CHECK_MEMO_MS));
    assert.equal(texts.length, 3, "expired");
  });

  it("never remembers a transport or server failure", async () => {
    const { view, texts } = checkView([serverError("POST /api/v1/policy/check"), undefined]);
    assert.equal((await checkPolicy(view, "sha256:a", () => "{}", NOW)).ok, false);
    assert.equal((await checkPolicy(view, "sha256:a", () => "{}", NOW)).ok, true);
    assert.equal(texts.length, 2);
  });
});

describe("write backoff", () => {
  it("doubles from 30 s to at most 10 min per policy hash; a new hash or a success resets it", () => {
    const view = {} as HeadscaleView;
    const c = cond("PolicyApplied", "False", "ApplyFailed", "x");
    const delays = Array.from({ length: 7 }, () => recordFailure(view, "home", "sha256:a", c, NOW));
    assert.deepEqual(delays, [30, 60, 120, 240, 480, 600, 600]);
    assert.deepEqual(pendingFailure(view, "home", "sha256:a"), {
      condition: c,
      retryAt: new Date(NOW.getTime() + 600_000),
    });
    assert.equal(recordFailure(view, "home", "sha256:b", c, NOW), 30);
    assert.equal(pendingFailure(view, "home", "sha256:a"), undefined, "only the current render is retried");
    assert.equal(recordFailure(view, "work", "sha256:b", c, NOW), 30, "per Tailnet");
    clearFailures(view, "home");
    assert.equal(pendingFailure(view, "home", "sha256:b"), undefined);
    assert.ok(pendingFailure(view, "work", "sha256:b"));
  });
});

describe("Tailnet metrics", () => {
  it("finds our API key by prefix in every listed form", () => {
    const key = "hskey-api-abcdefabcdef-0123456789";
    const listed = (prefix: string) => [
      { ...OWN_KEY, id: "2", prefix: "hskey-api-other0000000-***" },
      { ...OWN_KEY, prefix },
    ];
    for (const prefix of ["hskey-api-abcdefabcdef-***", "abcdefabcdef", "hskey-api-abcdefabcdef"]) {
      assert.equal(findOwnApiKey(listed(prefix), key)?.id, "1", prefix);
    }
    assert.equal(findOwnApiKey([{ ...OWN_KEY, prefix: "Ab3dE7x" }], "Ab3dE7x.secretsecret")?.id, "1", "≤0.27 keys");
    assert.equal(findOwnApiKey(listed("zzz"), key), undefined);
  });

  it("finds keys whose base64url prefix holds - and _, and legacy keys listed as <prefix>***", () => {
    // "FaxpIB_mxOb-" was minted by a real Headscale 0.29.2 and listed as "hskey-api-FaxpIB_mxOb--***".
    for (const prefix of ["ab-cd_ef-GH1", "-_abcdefghij", "abcdefghij-_", "FaxpIB_mxOb-"]) {
      const key = `hskey-api-${prefix}-${"s-_".repeat(21)}x`;
      const keys = [
        { ...OWN_KEY, id: "2", prefix: "hskey-api-ab-cd_ef-GH2-***" },
        { ...OWN_KEY, prefix: `hskey-api-${prefix}-***` },
      ];
      assert.equal(findOwnApiKey(keys, key)?.id, "1", prefix);
    }
    assert.equal(findOwnApiKey([{ ...OWN_KEY, prefix: "Ab-dE_x***" }], "Ab-dE_x.secretsecret")?.id, "1");
    assert.equal(findOwnApiKey([{ ...OWN_KEY, prefix: "hskey-api-ab-***" }], "hskey-api-ab-cd_ef-GH1-s"), undefined);
  });

  it("pending is 1 only in Apply mode while rendered ≠ applied; expiry and nodes are set", async () => {
    const metrics = createOperatorMetrics({ defaultMetrics: false });
    const policy = { renderedHash: "sha256:b", appliedHash: "sha256:a" };
    publishTailnetMetrics(metrics, { tailnet: "lab", mode: "DryRun", status: { policy } });
    publishTailnetMetrics(metrics, {
      tailnet: "home",
      mode: "Apply",
      status: { policy, userConflicts: 0 },
      apiKeys: ok([OWN_KEY]),
      apiKey: "hskey-api-abcdefabcdef-secret",
    });
    const text = await metrics.registry.metrics();
    assert.match(text, /tailnet_policy_pending\{tailnet="lab"\} 0/);
    assert.match(text, /tailnet_policy_pending\{tailnet="home"\} 1/);
    assert.match(
      text,
      new RegExp(
        `tailnet_api_key_expiry_timestamp_seconds\\{tailnet="home"\\} ${Date.parse(OWN_KEY.expiration ?? "") / 1000}`,
      ),
    );
    assert.ok(!text.includes("secret"));
  });
});
