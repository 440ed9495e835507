// The impure helpers around the write: the policy/check memo and the write backoff (the connection's soft state), the metrics.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { HeadscaleViews } from "../../../../src/headscale/view.js";
import { recordFailure } from "../../../../src/kinds/composite/tailnet/act.js";
import { findOwnApiKey, publishTailnetMetrics } from "../../../../src/kinds/composite/tailnet/metrics.js";
import { backingOff, CHECK_MEMO_MS, checkPolicy } from "../../../../src/kinds/composite/tailnet/observe.js";
import { softStateOf } from "../../../../src/kinds/composite/tailnet/soft-state.js";
import { createOperatorMetrics } from "../../../../src/metrics/registry.js";
import { useFakeHeadscale } from "../../../fakes/headscale/index.js";
import { NOW, OWN_KEY, ok, serverError } from "./fixtures.js";

/** A real view of a fake Headscale; closed after the test. */
async function fakeView(t: { after: (fn: () => Promise<void> | void) => void }) {
  const fake = await useFakeHeadscale(t);
  const views = new HeadscaleViews({ timeoutMs: 3000, cacheTTLSeconds: 10, retries: 0 });
  t.after(() => views.close());
  const view = views.view({ url: fake.url, apiKey: fake.apiKey });
  const checks = () => fake.count("POST", /^\/api\/v1\/policy\/check$/);
  return { fake, view, checks };
}

describe("checkPolicy memo (soft-state.ts checkVerdicts)", () => {
  it("reuses a verdict for the same hash until it expires; builds the text only on a miss", async (t) => {
    const { view, checks } = await fakeView(t);
    let built = 0;
    const text = (policy: string) => () => {
      built++;
      return policy;
    };
    const accepted = text("{}");
    assert.deepEqual(await checkPolicy(view, "sha256:a", accepted, NOW), { ok: true, value: undefined });
    assert.deepEqual(await checkPolicy(view, "sha256:a", accepted, new Date(NOW.getTime() + CHECK_MEMO_MS - 1)), {
      ok: true,
      value: undefined,
    });
    assert.equal(built, 1);
    const rejected = text('{"acls": [{"action": "accept", "src": ["tag:nope"], "dst": ["*:*"]}]}');
    const r = await checkPolicy(view, "sha256:b", rejected, NOW);
    assert.equal(r.ok, false);
    assert.equal((await checkPolicy(view, "sha256:b", rejected, NOW)).ok, false, "a rejection is a verdict too");
    assert.equal(checks(), 2);
    assert.equal(softStateOf(view).checkVerdicts.size, 2);
    await checkPolicy(view, "sha256:a", accepted, new Date(NOW.getTime() + CHECK_MEMO_MS));
    assert.equal(checks(), 3, "expired");
  });

  it("never remembers a transport or server failure", async (t) => {
    const { fake, view, checks } = await fakeView(t);
    await fake.fault({ kind: "status", status: 500, path: /^\/api\/v1\/policy\/check$/, times: 1 });
    assert.equal((await checkPolicy(view, "sha256:a", () => "{}", NOW)).ok, false);
    assert.equal((await checkPolicy(view, "sha256:a", () => "{}", NOW)).ok, true);
    assert.equal(checks(), 2);
  });

  it("lives and dies with the view: another connection's view starts empty", async (t) => {
    const { fake, view } = await fakeView(t);
    await checkPolicy(view, "sha256:a", () => "{}", NOW);
    const views = new HeadscaleViews({ timeoutMs: 3000, cacheTTLSeconds: 10, retries: 0 });
    t.after(() => views.close());
    const other = views.view({ url: fake.url, apiKey: fake.apiKey });
    assert.equal(softStateOf(other).checkVerdicts.size, 0);
  });
});

describe("write backoff (soft-state.ts writeBackoff)", () => {
  it("doubles from 30 s to at most 10 min per policy hash; a new hash resets it", () => {
    const views = new HeadscaleViews({ timeoutMs: 1000, cacheTTLSeconds: 1 });
    const view = views.view({ url: "http://127.0.0.1:1", apiKey: "never-used" });
    const failed = { ok: false as const, error: serverError("PUT /api/v1/policy") };
    const delays = Array.from({ length: 7 }, () => recordFailure(view, "home", "sha256:a", failed, NOW));
    assert.deepEqual(delays, [30, 60, 120, 240, 480, 600, 600]);
    assert.deepEqual(backingOff(view, "home", "sha256:a"), {
      error: failed.error,
      retryAt: new Date(NOW.getTime() + 600_000),
    });
    assert.equal(recordFailure(view, "home", "sha256:b", failed, NOW), 30);
    assert.equal(backingOff(view, "home", "sha256:a"), undefined, "only the current render is retried");
    assert.equal(recordFailure(view, "work", "sha256:b", failed, NOW), 30, "per Tailnet");
    softStateOf(view).writeBackoff.delete("home");
    assert.equal(backingOff(view, "home", "sha256:b"), undefined);
    assert.ok(backingOff(view, "work", "sha256:b"));
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
