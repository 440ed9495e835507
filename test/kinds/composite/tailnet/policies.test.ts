// Real policies (Headscale's corpus of the Tailscale control server's captured verdicts, juanfont/headscale
// hscontrol/policy/v2/testdata/*_results at the pin, via test/helpers/upstream.ts) as
// the Tailnet's base: a Tailnet sync merges our generated parts into each policy the real server
// accepted and the fake Headscale's policy/check must accept the result (PolicyRendered=Rendered).
// The policy module's own tests cover parsing and merging; this covers the Tailnet's whole path.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { HeadscaleViews } from "../../../../src/headscale/view.js";
import { useFakeHeadscale } from "../../../fakes/headscale/index.js";
import { syncRequest } from "../../../fixtures/hooks.js";
import { build } from "../../../helpers/server.js";
import { type PolicyCategory, type PolicyRecord, policyCorpus } from "../../../helpers/upstream.js";
import { apiKeySecret, baseConfigMap, ingress, NOW, site, tailnet, tailnetSpec } from "./fixtures.js";

const PER_FILE = 20;

/** Every k-th accepted record of a category, so the sample is spread and the same on every run. */
function sample(category: PolicyCategory): PolicyRecord[] {
  const accepted = policyCorpus(category).filter((r) => r.accepted);
  const step = Math.max(1, Math.floor(accepted.length / PER_FILE));
  return accepted.filter((_, i) => i % step === 0).slice(0, PER_FILE);
}

interface Condition {
  type: string;
  reason: string;
  message: string;
}

describe("Tailnet sync with real accepted policies as the base", () => {
  it(`renders and passes the fake's policy/check for ${PER_FILE} records of each category`, async (t) => {
    const fake = await useFakeHeadscale(t);
    const views = new HeadscaleViews({ timeoutMs: 3000, cacheTTLSeconds: 60, now: () => NOW, retries: 0 });
    t.after(() => views.close());
    const { app } = await build(t, { server: { deps: { views, now: () => NOW } } });
    const spec = tailnetSpec({
      headscale: { url: fake.url, apiKeySecretRef: { namespace: "tailnet-system", name: "headscale-api-key" } },
      policy: { mode: "DryRun", baseConfigMapRef: { namespace: "tailnet-system", name: "tailnet-policy-base" } },
      allowedIngressSources: ["autogroup:member"],
    });
    // Sources every base defines: the real server rejects undefined groups.
    const lan = site("lan", "net", ["192.168.77.0/24"]);
    const workloads = [
      ingress("grafana", "monitoring", { allowFrom: ["autogroup:member"] }),
      { ...lan, spec: { ...(lan.spec as object), allowFrom: ["autogroup:member"] } },
    ];
    const records = [...sample("acl"), ...sample("grant"), ...sample("ssh")];
    assert.ok(records.length >= 50, `${records.length} records sampled`);
    const failures: string[] = [];
    for (const record of records) {
      const body = syncRequest({
        parent: tailnet(spec),
        related: [apiKeySecret(fake.apiKey), baseConfigMap(JSON.stringify(record.policy, null, 2)), ...workloads],
      });
      const res = await app.inject({ method: "POST", url: "/hooks/tailnet/sync", payload: body });
      assert.equal(res.statusCode, 200, res.body);
      const conditions = (res.json() as { status: { conditions: Condition[] } }).status.conditions;
      const rendered = conditions.find((c) => c.type === "PolicyRendered");
      if (rendered?.reason !== "Rendered") failures.push(`${record.id}: ${rendered?.reason} ${rendered?.message}`);
    }
    assert.deepEqual(failures, []);
    assert.equal(fake.count("POST", /^\/api\/v1\/policy\/check$/), records.length, "each merged policy was checked");
    assert.deepEqual(fake.writes(), []);
  });
});
