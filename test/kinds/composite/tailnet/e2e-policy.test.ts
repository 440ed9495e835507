// The Tailnet's policy through the Metacontroller loop against the fake Headscale: render refusals,
// rejections, failed writes with backoff, drift, InvalidSpec and deletion.

import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { MockAgent } from "undici";
import { hashOfLivePolicy } from "../../../../src/policy/canonical.js";
import { parseHuJson } from "../../../../src/policy/hujson.js";
import { apiKeySecret, baseConfigMap, ingress } from "./fixtures.js";

/** The policy Headscale stores, parsed as Headscale does (HuJSON: the operator's marker line is a comment). */
function storedPolicy(h: { fake: { state: { policies: { text: string }[] } } }): Record<string, unknown> {
  const parsed = parseHuJson(h.fake.state.policies.at(-1)?.text ?? "{}");
  if (!parsed.ok) throw new Error(parsed.message);
  return parsed.value as Record<string, unknown>;
}

import { API, addAgentNode, harness, LIVE, settleStable, writeEvents } from "./harness.js";

const putCount = (h: { fake: { count(m: string, p: RegExp): number } }) => h.fake.count("PUT", /^\/api\/v1\/policy$/);
const liveHash = (text = LIVE) => {
  const h = hashOfLivePolicy(text);
  if (!h.ok) throw new Error("not a policy");
  return h.hash;
};

describe("Tailnet e2e: the render is refused", () => {
  it("base ConfigMap missing: BaseMissing, nothing written; created later: written", async (t) => {
    const h = await harness(t, { objects: (fake) => [apiKeySecret(fake.apiKey)] });
    h.mc.apply(ingress());
    await settleStable(h);
    assert.equal(h.reason("PolicyRendered"), "BaseMissing");
    assert.equal(h.reason("PolicyApplied"), "PolicyRejected");
    assert.equal(putCount(h), 0);
    assert.ok(!h.children().includes("ConfigMap tailnet-system/tailnet-home-policy"));
    h.mc.apply(baseConfigMap());
    await settleStable(h);
    assert.equal(h.reason("PolicyRendered"), "Rendered");
    assert.equal(h.reason("PolicyApplied"), "InSync");
    assert.equal(putCount(h), 1);
  });

  it("base not HuJSON: BaseInvalid with the position; the last render and its ConfigMap stay", async (t) => {
    const h = await harness(t);
    h.mc.apply(ingress());
    await settleStable(h);
    const before = { policy: h.status().policy, cm: JSON.stringify(h.child("ConfigMap", "tailnet-home-policy")?.data) };
    h.mc.apply(baseConfigMap('{\n  "acls": [\n}'));
    await settleStable(h);
    assert.equal(h.reason("PolicyRendered"), "BaseInvalid");
    assert.match(
      h.condition("PolicyRendered").message,
      /^ConfigMap tailnet-system\/tailnet-policy-base: base policy is not valid HuJSON: line 3:1: /,
    );
    assert.equal(h.reason("PolicyApplied"), "PolicyRejected");
    assert.deepEqual(h.status().policy, before.policy);
    assert.equal(JSON.stringify(h.child("ConfigMap", "tailnet-home-policy")?.data), before.cm);
    assert.equal(putCount(h), 1);
  });

  it("policy/check rejects the render: BaseInvalid with Headscale's message, PolicyRejected, no PUT", async (t) => {
    const h = await harness(t, {
      objects: (fake) => [
        apiKeySecret(fake.apiKey),
        baseConfigMap('{"acls": [{"action": "accept", "src": ["tag:nope"], "dst": ["*:*"]}]}'),
      ],
    });
    await settleStable(h);
    assert.equal(h.reason("PolicyRendered"), "BaseInvalid");
    assert.match(
      h.condition("PolicyRendered").message,
      /^Headscale rejects the rendered policy sha256:[0-9a-f]{64} \(POST \/api\/v1\/policy\/check\): parsing policy: src=tag not found: "tag:nope"$/,
    );
    assert.equal(h.reason("PolicyApplied"), "PolicyRejected");
    assert.equal(h.reason("HeadscaleCompatible"), "Compatible");
    assert.equal(putCount(h), 0);
  });

  it("nothing to allow: PolicyEmpty, no write", async (t) => {
    const h = await harness(t, { objects: (fake) => [apiKeySecret(fake.apiKey), baseConfigMap("// nothing yet\n{}")] });
    await settleStable(h);
    assert.equal(h.reason("PolicyRendered"), "PolicyEmpty");
    assert.equal(
      h.condition("PolicyRendered").message,
      "refused: would lock everyone out: the rendered policy has no acls and no grants",
    );
    assert.equal(h.reason("PolicyApplied"), "PolicyRejected");
    assert.equal(putCount(h), 0);
  });

  it("InvalidSpec: PolicyRendered names the field, children and status kept", async (t) => {
    const h = await harness(t);
    h.mc.apply(ingress());
    await settleStable(h);
    const children = h.children();
    const policy = h.status().policy;
    h.respec({ allowedEgressTargets: ["100.64.0.0/10", "db"] });
    await settleStable(h);
    assert.equal(h.reason("PolicyRendered"), "InvalidSpec");
    assert.equal(
      h.condition("PolicyRendered").message,
      'spec.allowedEgressTargets[1]: "db" is neither a CIDR, an IP address nor a tag',
    );
    assert.deepEqual(h.children(), children);
    assert.deepEqual(h.status().policy, policy);
    h.respec({ reservedNetworks: ["10.96.0.1/12"] });
    await settleStable(h);
    assert.equal(
      h.condition("PolicyRendered").message,
      "spec.reservedNetworks[0]: 10.96.0.1/12 has non-address bits set; expected 10.96.0.0/12",
    );
    assert.equal(putCount(h), 1);
  });
});

describe("Tailnet e2e: adopting a tailnet that already has a policy", () => {
  const HAND = `// written by hand before the operator
{
  "groups": { "group:eng": ["alice@"] },
  "hosts": { "nas": "192.168.1.10" },
  "acls": [ { "action": "accept", "src": ["group:eng"], "dst": ["nas:445"] } ],
}`;
  const noBaseSpec = (extra: Record<string, unknown> = {}) => ({
    policy: { mode: "Apply", ...extra },
    allowedIngressSources: ["autogroup:member"],
  });
  const adopt = (t: Parameters<typeof harness>[0], extra: Record<string, unknown> = {}) =>
    harness(t, { fake: { policy: HAND }, spec: noBaseSpec(extra), objects: (fake) => [apiKeySecret(fake.apiKey)] });

  it("no base: nothing is written, the message says what would be lost, and its command keeps it", async (t) => {
    const h = await adopt(t);
    h.mc.apply(ingress("grafana", "monitoring", { allowFrom: ["autogroup:member"] }));
    await settleStable(h);
    assert.equal(putCount(h), 0, "the hand-written policy is not replaced");
    assert.equal(h.reason("PolicyRendered"), "Rendered");
    assert.deepEqual([h.condition("PolicyApplied").status, h.reason("PolicyApplied")], ["False", "AdoptionRefused"]);
    const message = h.condition("PolicyApplied").message;
    assert.ok(message.includes(`(${liveHash(HAND)})`), message);
    assert.ok(message.includes("dropping 1 acl rule, groups group:eng, hosts nas; "), message);
    const command =
      'kubectl -n tailnet-system get configmap tailnet-home-live-policy -o jsonpath=\'{.data.policy\\.hujson}\' > policy.hujson && kubectl -n tailnet-system create configmap tailnet-home-base --from-file=policy.hujson && kubectl patch tailnets.tailnet.internal home --type merge -p \'{"spec":{"policy":{"baseConfigMapRef":{"namespace":"tailnet-system","name":"tailnet-home-base"}}}}\'';
    assert.ok(message.includes(command), message);
    assert.ok(h.children().includes("ConfigMap tailnet-system/tailnet-home-live-policy"));
    // Follow the command: the live text becomes the base, the Tailnet references it.
    const exported = h.child("ConfigMap", "tailnet-home-live-policy")?.data as Record<string, string>;
    assert.equal(exported["policy.hujson"], HAND, "verbatim, comments included");
    h.mc.apply({
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: { name: "tailnet-home-base", namespace: "tailnet-system" },
      data: { "policy.hujson": exported["policy.hujson"] },
    });
    h.respec({
      ...noBaseSpec(),
      policy: { mode: "Apply", baseConfigMapRef: { namespace: "tailnet-system", name: "tailnet-home-base" } },
    });
    await settleStable(h);
    assert.equal(h.reason("PolicyApplied"), "InSync");
    assert.equal(h.fake.policyWrites, 1);
    const stored = storedPolicy(h) as Record<string, unknown>;
    assert.deepEqual(
      stored.acls,
      [{ action: "accept", src: ["group:eng"], dst: ["nas:445"] }],
      "the hand-written rule stays",
    );
    assert.deepEqual(stored.hosts, { nas: "192.168.1.10" });
    assert.ok(!h.children().includes("ConfigMap tailnet-system/tailnet-home-live-policy"), "dropped once adopted");
    assert.deepEqual(writeEvents(h), [], "adoption is no drift");
  });

  it("spec.policy.replaceLivePolicy: true replaces it", async (t) => {
    const h = await adopt(t, { replaceLivePolicy: true });
    h.mc.apply(ingress("grafana", "monitoring", { allowFrom: ["autogroup:member"] }));
    await settleStable(h);
    assert.equal(h.fake.policyWrites, 1);
    assert.equal(h.reason("PolicyApplied"), "InSync");
    assert.equal(storedPolicy(h).acls, undefined, "replaced, as asked");
  });

  it("a fresh Apply Tailnet with no workloads reads as nothing to do, not as a refusal", async (t) => {
    const h = await harness(t, {
      fake: { policy: HAND },
      spec: noBaseSpec(),
      objects: (fake) => [apiKeySecret(fake.apiKey)],
    });
    await settleStable(h);
    assert.equal(h.reason("PolicyRendered"), "PolicyEmpty");
    assert.match(h.condition("PolicyRendered").message, /^nothing to render yet: /);
    assert.equal(h.reason("PolicyApplied"), "NothingToApply");
    assert.equal(putCount(h), 0);
  });
});

describe("Tailnet e2e: writes", () => {
  it("PUT refused by Headscale: PolicyRejected with its message, counted, retried only after backoff", async (t) => {
    let fakeUrl = "";
    const mock = new MockAgent();
    mock.enableNetConnect();
    t.after(() => mock.close());
    const h = await harness(t, {
      dispatcherFactory: ({ url }) => {
        fakeUrl = url;
        return mock;
      },
      objects: (fake) => {
        mock
          .get(fake.url)
          .intercept({ path: "/api/v1/policy", method: "PUT" })
          .reply(
            500,
            {
              code: 2,
              message: 'setting policy: validating policy user references: multiple users found: token "alice@"',
              details: [],
            },
            { headers: { "content-type": "application/json" } },
          );
        return [apiKeySecret(fake.apiKey), baseConfigMap()];
      },
    });
    h.mc.apply(ingress());
    await settleStable(h);
    assert.equal(fakeUrl, h.fake.url);
    assert.equal(h.reason("PolicyApplied"), "PolicyRejected");
    assert.equal(
      h.condition("PolicyApplied").message,
      `Headscale rejected the policy (PUT /api/v1/policy): setting policy: validating policy user references: multiple users found: token "alice@"; nothing was stored and Headscale serves the policy it served before (Headscale's stored policy is ${liveHash()})`,
    );
    assert.equal(h.fake.state.policies.at(-1)?.text, LIVE, "the old policy stays");
    const metrics = await h.metricsText();
    assert.match(metrics, /tailnet_policy_apply_errors_total\{tailnet="home",reason="rejected"\} 1/);
    assert.match(metrics, /tailnet_policy_pending\{tailnet="home"\} 1/);
    // The interceptor is used up: after the backoff the PUT reaches the fake and succeeds.
    h.advance(31_000);
    await settleStable(h);
    assert.equal(h.reason("PolicyApplied"), "InSync");
    assert.equal(h.fake.policyWrites, 1);
    assert.match(await h.metricsText(), /tailnet_policy_pending\{tailnet="home"\} 0/);
  });

  it("PUT answers 500: ApplyFailed, counted as transport, one retry per backoff step", async (t) => {
    const h = await harness(t, {
      spec: {
        policy: { mode: "DryRun", baseConfigMapRef: { namespace: "tailnet-system", name: "tailnet-policy-base" } },
      },
    });
    h.mc.apply(ingress());
    await settleStable(h);
    // The PUT fails; the fresh GET just before it answers.
    await h.fake.fault({ kind: "status", status: 500, method: "PUT", path: /^\/api\/v1\/policy$/, times: 1 });
    h.respec({});
    await settleStable(h);
    assert.equal(h.reason("PolicyApplied"), "ApplyFailed");
    assert.equal(
      h.condition("PolicyApplied").message,
      `not written: Headscale PUT /api/v1/policy: 500 fault injected: 500; not stored (Headscale's stored policy is ${liveHash()}); whether Headscale already serves the rendered policy from memory cannot be told (0.29 swaps the policy in before storing it)`,
    );
    assert.equal(putCount(h), 1);
    assert.match(await h.metricsText(), /tailnet_policy_apply_errors_total\{tailnet="home",reason="transport"\} 1/);
    const resync = h.mc.calls.filter((c) => c.hook === "sync" && c.kind === "Tailnet").at(-1)?.response as {
      resyncAfterSeconds?: number;
    };
    assert.equal(resync.resyncAfterSeconds, 30);
    h.advance(31_000);
    await settleStable(h);
    assert.equal(h.reason("PolicyApplied"), "InSync");
    assert.equal(h.fake.policyWrites, 1);
  });

  it("PUT fails at the database insert: the rendered policy is live in memory, unstored, and the status says so", async (t) => {
    const h = await harness(t, {
      spec: {
        policy: { mode: "DryRun", baseConfigMapRef: { namespace: "tailnet-system", name: "tailnet-policy-base" } },
      },
    });
    h.mc.apply(ingress());
    await settleStable(h);
    // The PUT fails; the fresh GET just before it answers.
    await h.fake.fault({ kind: "databaseError", method: "PUT", path: /^\/api\/v1\/policy$/, times: 1 });
    h.respec({});
    await settleStable(h);
    const rendered = (h.status().policy as Record<string, string>).renderedHash;
    assert.ok(h.fake.state.memoryPolicy, "the fake serves the rejected text from memory, as 0.29 does");
    assert.equal(h.fake.state.policies.at(-1)?.text, LIVE, "and stores nothing");
    assert.equal(h.reason("PolicyApplied"), "ApplyFailed");
    assert.equal(
      h.condition("PolicyApplied").message,
      `not written: Headscale PUT /api/v1/policy: 500 database is locked (5) (SQLITE_BUSY); the rendered policy ${rendered} was not stored, but Headscale already serves it from memory (0.29 swaps the policy in before the SSH check and the database write), while Headscale's stored policy is ${liveHash()}; a Headscale restart or policy reload returns to the stored one`,
    );
    const put = h.fake.requests.findIndex((r) => r.method === "PUT" && r.path === "/api/v1/policy");
    const next = h.fake.requests.slice(put + 1).find((r) => r.path === "/api/v1/policy");
    assert.deepEqual([next?.method, next?.status], ["GET", 200], "read back right after the failed PUT");
    assert.deepEqual(writeEvents(h), [], "no drift: nothing changed behind our back");
    h.advance(31_000);
    await settleStable(h);
    assert.equal(h.reason("PolicyApplied"), "InSync");
    assert.equal(h.fake.state.memoryPolicy, undefined);
    assert.equal(h.fake.policyWrites, 1);
  });

  it("drift: a policy changed behind our back is rewritten with Event PolicyDriftOverwritten", async (t) => {
    const h = await harness(t);
    h.mc.apply(ingress());
    await settleStable(h);
    const first = h.status().policy as Record<string, string>;
    const foreign = '{"acls": [{"action": "accept", "src": ["*"], "dst": ["*:22"]}]}';
    const foreignHash = hashOfLivePolicy(foreign);
    assert.ok(foreignHash.ok);
    h.fake.setPolicy(foreign);
    h.advance(60_000);
    await settleStable(h);
    assert.equal(h.fake.policyWrites, 2);
    assert.ok(h.syncReasons("PolicyApplied").includes("Applied"));
    assert.equal(h.reason("PolicyApplied"), "InSync");
    const second = h.status().policy as Record<string, string>;
    assert.equal(second.appliedHash, first.appliedHash);
    assert.equal(second.appliedAt, "2026-11-29T10:01:00Z", "appliedAt moves only with a write");
    assert.deepEqual(
      writeEvents(h).map((e) => [e.reason, e.type, e.regarding.metadata.name, e.message]),
      [
        [
          "PolicyDriftOverwritten",
          "Warning",
          "home",
          `the live Headscale policy (${foreignHash.hash}) was changed outside the operator (last applied ${first.appliedHash}); rewrote it with the rendered policy ${first.renderedHash}`,
        ],
      ],
    );
  });

  it("a database error reading the policy is an observation failure: no PUT, no drift Event", async (t) => {
    const h = await harness(t);
    h.mc.apply(ingress());
    await settleStable(h);
    const applied = (h.status().policy as Record<string, string>).appliedHash;
    // The same "loading ACL from database" prefix as "no policy stored" (hscontrol/grpcv1.go GetPolicy).
    await h.fake.fault({ kind: "databaseError", path: /^\/api\/v1\/policy$/ });
    h.advance(60_000);
    await settleStable(h);
    assert.equal(h.fake.policyWrites, 1, "no needless PUT");
    assert.deepEqual(writeEvents(h), [], "no false PolicyDriftOverwritten");
    assert.equal(h.reason("PolicyMode"), "CannotVerify");
    assert.equal(h.reason("HeadscaleCompatible"), "CannotVerify");
    assert.deepEqual([h.condition("PolicyApplied").status, h.reason("PolicyApplied")], ["Unknown", "ApplyFailed"]);
    assert.equal(
      h.condition("PolicyApplied").message,
      "not written: Headscale GET /api/v1/policy: 500 loading ACL from database: database is locked (5) (SQLITE_BUSY)",
    );
    assert.equal((h.status().policy as Record<string, string>).appliedHash, applied);
    await h.fake.clearFaults();
    h.advance(60_000);
    await settleStable(h);
    assert.equal(h.reason("PolicyApplied"), "InSync");
    assert.equal(h.fake.policyWrites, 1);
  });

  it("deleting the Tailnet drops its children and never touches the live policy", async (t) => {
    const h = await harness(t);
    h.mc.apply(ingress());
    await settleStable(h);
    const live = h.fake.state.policies.at(-1)?.text;
    const requests = h.fake.requests.length;
    h.mc.delete(API, "Tailnet", "home");
    await h.mc.settle();
    assert.deepEqual(h.mc.errors, []);
    assert.equal(h.mc.get(API, "Tailnet", "home"), undefined);
    assert.deepEqual(
      h.mc.list("ConfigMap").map((c) => c.metadata.name),
      ["tailnet-policy-base"],
    );
    assert.equal(h.mc.list("Secret").filter((s) => s.metadata.name === "tailnet-home-credentials").length, 0);
    assert.equal(h.fake.state.policies.at(-1)?.text, live);
    assert.equal(h.fake.requests.length, requests, "finalize makes no Headscale call");
    assert.ok(h.mc.calls.some((c) => c.hook === "finalize" && c.kind === "Tailnet"));
    assert.doesNotMatch(await h.metricsText(), /tailnet_policy_pending\{tailnet="home"\}/);
  });
});

describe("Tailnet e2e: metrics", () => {
  it("nodes, API key expiry, generated counts; no secret in any label", async (t) => {
    const h = await harness(t);
    h.mc.apply(ingress());
    addAgentNode(h.fake, { name: "grafana", tags: ["tag:k8s-monitoring-grafana"], online: true });
    h.fake.addNode({ name: "laptop", givenName: "laptop", online: false, lastSeen: new Date("2026-11-28T08:00:00Z") });
    await settleStable(h);
    const text = await h.metricsText();
    const expiry = Math.floor(h.now().getTime() / 1000) + 90 * 24 * 3600;
    for (const line of [
      'tailnet_node_online{tailnet="home",node="grafana"} 1',
      'tailnet_node_online{tailnet="home",node="laptop"} 0',
      `tailnet_node_last_seen_seconds{tailnet="home",node="laptop"} ${Date.parse("2026-11-28T08:00:00Z") / 1000}`,
      `tailnet_api_key_expiry_timestamp_seconds{tailnet="home"} ${expiry}`,
      'tailnet_policy_generated{tailnet="home",kind="tags"} 1',
      'tailnet_policy_generated{tailnet="home",kind="grants"} 1',
      'tailnet_policy_generated{tailnet="home",kind="routes"} 0',
      'tailnet_policy_pending{tailnet="home"} 0',
      'tailnet_headscale_user_conflicts{tailnet="home"} 0',
    ]) {
      assert.ok(text.includes(line), `missing ${line}`);
    }
    assert.ok(!text.includes(h.fake.apiKey) && !text.includes(h.fake.apiKey.slice(-64)), "no API key in metrics");
    // A node that is gone from the next successful list is withdrawn; a failed list keeps the series.
    for (const [id, node] of h.fake.state.nodes) if (node.givenName === "laptop") h.fake.state.nodes.delete(id);
    h.advance(11_000);
    await settleStable(h);
    assert.ok(!(await h.metricsText()).includes('node="laptop"'));
    await h.fake.fault({ kind: "refused" });
    h.advance(11_000);
    await settleStable(h);
    assert.ok((await h.metricsText()).includes('tailnet_node_online{tailnet="home",node="grafana"} 1'));
    await h.fake.clearFaults();
  });
});
