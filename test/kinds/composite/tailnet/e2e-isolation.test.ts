// Issue 31 item 4 at the Tailnet: one object's contribution that Headscale refuses never blocks everyone's
// policy. What the operator can tell from Headscale 0.29's validator is left out before the merge; what only
// Headscale can tell (its `tests`, say) is found with POST /api/v1/policy/check, and that object is left out.
// Either way everyone else's change is written and the Tailnet's status names what was left out.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { K8sObject } from "../../../../src/k8s/objects.js";
import { parseHuJson } from "../../../../src/policy/hujson.js";
import { apiKeySecret, baseConfigMap, egress, ingress, site } from "./fixtures.js";
import { harness, settleStable } from "./harness.js";

type Grant = { src: string[]; dst: string[]; ip: string[] };
type H = Awaited<ReturnType<typeof harness>>;

function live(h: H): { grants?: Grant[]; autoApprovers?: { routes?: Record<string, string[]> } } {
  const parsed = parseHuJson(h.fake.state.policies.at(-1)?.text ?? "{}");
  if (!parsed.ok) throw new Error(parsed.message);
  return parsed.value as { grants?: Grant[] };
}
const grants = (h: H) => (live(h).grants ?? []).map((g) => `${g.src.join(",")} → ${g.dst.join(",")} ${g.ip.join(",")}`);
const leftOut = (h: H) => (h.status().policy as { leftOut?: unknown[] } | undefined)?.leftOut;
const checks = (h: H) => h.fake.requests.filter((r) => r.path === "/api/v1/policy/check").length;

const withSpec = (o: K8sObject, spec: Record<string, unknown>): K8sObject => ({
  ...o,
  spec: { ...(o.spec as Record<string, unknown>), ...spec },
});

describe("Tailnet: one bad contribution never blocks the rest (issue 31 item 4)", () => {
  it("an egress target 0.0.0.0/0 (allowed by a /0 in allowedEgressTargets) is left out; the others' grants are written", async (t) => {
    const h = await harness(t, { spec: { allowedEgressTargets: ["0.0.0.0/0"] } });
    h.fake.addNode({ name: "db-1", ipv4: "100.64.0.7" });
    h.mc.apply(
      withSpec(egress("all", "shop"), { targets: [{ name: "all", host: "0.0.0.0/0", ports: [{ port: 443 }] }] }),
    );
    h.mc.apply(egress("db", "shop"));
    h.mc.apply(ingress("grafana", "monitoring"));
    await settleStable(h);
    assert.equal(h.reason("PolicyApplied"), "InSync", h.condition("PolicyApplied").message);
    assert.deepEqual(grants(h), [
      "group:eng → tag:k8s-monitoring-grafana tcp:443",
      "tag:k8s-shop-db → 100.64.0.7 tcp:5432",
    ]);
    assert.equal(
      h.condition("PolicyRendered").message.replace(/rendered sha256:[0-9a-f]+/, "rendered H"),
      'rendered H: generated 3 tags, 2 grants, 0 routes; left out (Headscale would reject them): shop/all targets "0.0.0.0/0"',
    );
    assert.deepEqual(leftOut(h), [
      {
        kind: "TailnetEgress",
        namespace: "shop",
        name: "all",
        reason: "InvalidContribution",
        message:
          'targets "0.0.0.0/0": a grant may not name a default route (Headscale: to allow all IP addresses, use "*" or "autogroup:internet")',
      },
    ]);
  });

  it("a site whose allowFrom names an undefined group is left out before the merge; everyone else's change is written", async (t) => {
    const h = await harness(t);
    h.mc.apply(withSpec(site("lab", "net", ["192.168.20.0/24"]), { allowFrom: ["group:nope"] }));
    h.mc.apply(site("lan", "net", ["192.168.10.0/24"]));
    h.mc.apply(ingress("grafana", "monitoring"));
    await settleStable(h);
    assert.equal(h.reason("PolicyApplied"), "InSync", h.condition("PolicyApplied").message);
    assert.deepEqual(grants(h), ["group:eng → 192.168.10.0/24 *", "group:eng → tag:k8s-monitoring-grafana tcp:443"]);
    assert.deepEqual(live(h).autoApprovers?.routes, { "192.168.10.0/24": ["tag:router-home"] });
    assert.deepEqual(leftOut(h), [
      {
        kind: "TailnetSite",
        namespace: "net",
        name: "lab",
        reason: "InvalidContribution",
        message: 'grant source "group:nope": group not defined in policy',
      },
    ]);
    assert.match(
      h.condition("PolicyApplied").message,
      /left out of the policy: TailnetSite net\/lab \(InvalidContribution\)$/,
    );
  });

  it("a contribution only Headscale refuses (the base's tests) is found with policy/check and left out", async (t) => {
    const base = `{
  "groups": { "group:eng": ["alice@"], "group:platform": ["bob@"] },
  "acls": [ { "action": "accept", "src": ["group:eng"], "dst": ["*:*"] } ],
  "tests": [ { "src": "100.64.0.50", "deny": ["192.168.77.10:22"] } ],
}`;
    const h = await harness(t, { objects: (fake) => [apiKeySecret(fake.apiKey), baseConfigMap(base)] });
    const quiet = Array.from({ length: 6 }, (_, i) => site(`s${i}`, "net", [`192.168.${30 + i}.0/24`]));
    for (const s of quiet) h.mc.apply(s);
    h.mc.apply(withSpec(site("lab", "net", ["192.168.77.0/24"]), { allowFrom: ["100.64.0.50"] }));
    h.mc.apply(ingress("grafana", "monitoring"));
    await settleStable(h);
    assert.equal(h.reason("PolicyApplied"), "InSync", h.condition("PolicyApplied").message);
    assert.ok(!grants(h).some((g) => g.includes("192.168.77.0/24")), "the refused site's grant is not written");
    assert.ok(grants(h).includes("group:eng → tag:k8s-monitoring-grafana tcp:443"));
    assert.equal(live(h).autoApprovers?.routes?.["192.168.35.0/24"]?.[0], "tag:router-home");
    assert.deepEqual(leftOut(h), [
      {
        kind: "TailnetSite",
        namespace: "net",
        name: "lab",
        reason: "RejectedByHeadscale",
        message:
          "Headscale rejects the policy with it (POST /api/v1/policy/check): test(s) failed: 100.64.0.50 -> 192.168.77.10:22: expected DENIED, got ALLOWED",
      },
    ]);
    // bounded: the bisection of 8 contributions costs a handful of checks, and a steady resync reuses verdicts
    const first = checks(h);
    assert.ok(first <= 8, `${first} policy/check calls (6 when written)`);
  });

  it("two objects each failing a different base test are both found and left out", async (t) => {
    const base = `{
  "groups": { "group:eng": ["alice@"], "group:platform": ["bob@"] },
  "acls": [ { "action": "accept", "src": ["group:eng"], "dst": ["*:*"] } ],
  "tests": [
    { "src": "100.64.0.50", "deny": ["192.168.77.10:22"] },
    { "src": "100.64.0.51", "deny": ["192.168.78.10:22"] },
  ],
}`;
    const h = await harness(t, { objects: (fake) => [apiKeySecret(fake.apiKey), baseConfigMap(base)] });
    h.mc.apply(withSpec(site("a", "net", ["192.168.77.0/24"]), { allowFrom: ["100.64.0.50"] }));
    h.mc.apply(withSpec(site("b", "net", ["192.168.78.0/24"]), { allowFrom: ["100.64.0.51"] }));
    h.mc.apply(site("c", "net", ["192.168.79.0/24"]));
    await settleStable(h);
    assert.equal(h.reason("PolicyApplied"), "InSync", h.condition("PolicyApplied").message);
    assert.deepEqual(
      (leftOut(h) as { name: string; reason: string }[]).map((l) => `${l.name} ${l.reason}`),
      ["a RejectedByHeadscale", "b RejectedByHeadscale"],
    );
    assert.deepEqual(grants(h), ["group:eng → 192.168.79.0/24 *"]);
  });

  it("the search is bounded: past 40 checks nothing is left out and nothing is written (PolicyRejected as before)", async (t) => {
    const tests = Array.from(
      { length: 12 },
      (_, i) => `{ "src": "100.64.1.${i}", "deny": ["192.168.${100 + i}.10:22"] }`,
    );
    const base = `{
  "groups": { "group:eng": ["alice@"], "group:platform": ["bob@"] },
  "acls": [ { "action": "accept", "src": ["group:eng"], "dst": ["*:*"] } ],
  "tests": [ ${tests.join(", ")} ],
}`;
    const h = await harness(t, { objects: (fake) => [apiKeySecret(fake.apiKey), baseConfigMap(base)] });
    // 12 such objects are found within the bound (38 checks); 16 are not
    for (let i = 0; i < 16; i++) {
      h.mc.apply(withSpec(site(`s${i}`, "net", [`192.168.${100 + i}.0/24`]), { allowFrom: [`100.64.1.${i}`] }));
    }
    const before = checks(h);
    await settleStable(h);
    assert.equal(h.reason("PolicyApplied"), "PolicyRejected");
    assert.equal(leftOut(h), undefined);
    assert.equal(h.fake.count("PUT", /^\/api\/v1\/policy$/), 0);
    // one sync's search stops at the bound (the repeat syncs of settleStable reuse memoised verdicts)
    assert.ok(checks(h) - before <= 3 * 42, `${checks(h) - before} policy/check calls`);
  });

  it("a base Headscale refuses on its own is not blamed on any object: PolicyRejected as before, nothing written", async (t) => {
    const base = `{
  "groups": { "group:eng": ["alice@"] },
  "acls": [ { "action": "accept", "src": ["group:missing"], "dst": ["*:*"] } ],
}`;
    const h = await harness(t, { objects: (fake) => [apiKeySecret(fake.apiKey), baseConfigMap(base)] });
    const puts = () => h.fake.requests.filter((r) => r.method === "PUT").length;
    h.mc.apply(ingress("grafana", "monitoring"));
    await settleStable(h);
    assert.equal(h.reason("PolicyApplied"), "PolicyRejected");
    assert.equal(leftOut(h), undefined);
    assert.equal(puts(), 0);
  });
});
