// The Tailnet through the Metacontroller loop against the fake Headscale: observations and faults.
// Policy writes, drift and deletion are in e2e-policy.test.ts.
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { describe, it } from "node:test";
import { hashOfLivePolicy } from "../../../../src/policy/canonical.js";
import { apiKeySecret, baseConfigMap, egress, gateway, ingress } from "./fixtures.js";
import { addAgentNode, harness, settleStable, writeEvents } from "./harness.js";

const dryRun = {
  policy: { mode: "DryRun", baseConfigMapRef: { namespace: "tailnet-system", name: "tailnet-policy-base" } },
};
const CHILDREN = [
  "ConfigMap tailnet-system/tailnet-home-dns-records",
  "ConfigMap tailnet-system/tailnet-home-policy",
  "Secret tailnet-system/tailnet-home-credentials",
];

describe("Tailnet e2e: a healthy Headscale", () => {
  it("writes the render once, then stays InSync with a byte-identical status", async (t) => {
    const h = await harness(t);
    h.mc.apply(ingress());
    addAgentNode(h.fake, { name: "grafana", tags: ["tag:k8s-monitoring-grafana"], ipv4: "100.64.0.9" });
    await settleStable(h);
    assert.deepEqual(h.syncReasons("PolicyApplied").slice(0, 2), ["Applied", "InSync"]);
    for (const [type, reason] of Object.entries({
      ApiReachable: "Reachable",
      ApiKeyValid: "Valid",
      HeadscaleCompatible: "Compatible",
      PolicyMode: "Database",
      SplitDNS: "NotConfigured",
      UsersUnique: "Unique",
      PolicyRendered: "Rendered",
      PolicyApplied: "InSync",
    })) {
      assert.equal(h.reason(type), reason, type);
    }
    assert.equal(h.fake.policyWrites, 1);
    assert.equal(h.fake.count("POST", /^\/api\/v1\/policy\/check$/), 1, "policy/check is memoised per rendered hash");
    assert.deepEqual(h.children(), CHILDREN);

    const policy = h.status().policy as Record<string, unknown>;
    const live = hashOfLivePolicy(h.fake.state.policies.at(-1)?.text ?? "");
    assert.ok(live.ok);
    assert.equal(policy.renderedHash, live.hash);
    assert.equal(policy.appliedHash, live.hash);
    assert.equal(policy.appliedAt, "2026-11-29T10:00:00Z");
    assert.deepEqual(policy.generated, { tags: 1, grants: 1, routes: 0 });
    const cm = h.child("ConfigMap", "tailnet-home-policy");
    assert.ok(cm?.data);
    const text = cm.data["policy.json"];
    assert.equal(
      `sha256:${createHash("sha256").update(text).digest("hex")}`,
      live.hash,
      "sha256 of policy.json is the hash",
    );
    assert.equal(cm.metadata.annotations?.["tailnet.internal/policy-hash"], live.hash);
    assert.equal(cm.metadata.labels?.["tailnet.internal/tailnet"], "home");
    const recordsCm = h.child("ConfigMap", "tailnet-home-dns-records");
    assert.ok(recordsCm?.data);
    const records = JSON.parse(recordsCm.data["records.json"]);
    assert.deepEqual(records, [{ name: "grafana.ts.example.com", type: "A", value: "100.64.0.9" }]);
    assert.deepEqual(writeEvents(h), []);
  });

  it("records.json never carries a node's name: a tenant ingress db-1 is left out, and a name a machine takes later goes", async (t) => {
    const h = await harness(t);
    h.fake.addUser({ name: "alice" });
    h.fake.addNode({ name: "db-1", user: "alice", ipv4: "100.64.0.3" });
    h.mc.apply(ingress("attack", "tenant", { hostname: "db-1" }));
    h.mc.apply(ingress("web", "tenant"));
    addAgentNode(h.fake, { name: "db-1", tags: ["tag:k8s-tenant-attack"], ipv4: "100.64.0.20" });
    addAgentNode(h.fake, { name: "web", tags: ["tag:k8s-tenant-web"], ipv4: "100.64.0.21" });
    await settleStable(h);
    const records = () =>
      JSON.parse(h.child("ConfigMap", "tailnet-home-dns-records")?.data?.["records.json"] ?? "null");
    assert.deepEqual(records(), [{ name: "web.ts.example.com", type: "A", value: "100.64.0.21" }]);
    // the ingress "web" agent holds the node name web; a laptop that joins as "Web" gets web-1 from
    // Headscale, but its reported hostname is web too: the machine wins, the record goes
    h.fake.addNode({ name: "Web", user: "alice", ipv4: "100.64.0.22" });
    h.advance(61_000);
    await settleStable(h);
    assert.deepEqual(records(), []);
  });

  it("DryRun renders and compares but writes nothing", async (t) => {
    const h = await harness(t, { spec: dryRun });
    h.mc.apply(ingress());
    await settleStable(h);
    const applied = h.condition("PolicyApplied");
    assert.equal(applied.reason, "DryRun");
    assert.equal(applied.status, "False");
    assert.deepEqual(h.fake.writes(), []);
    assert.match(await h.metricsText(), /tailnet_policy_pending\{tailnet="home"\} 0/);
  });

  it("split DNS: the message points at the gateway's DNS Service", async (t) => {
    const h = await harness(t, {
      spec: { dns: { baseDomain: "ts.example.com", splitDNS: { domains: ["svc.cluster.local"] } } },
    });
    h.mc.apply(gateway("10.96.0.53"));
    await settleStable(h);
    const c = h.condition("SplitDNS");
    assert.equal(c.status, "Unknown");
    assert.equal(
      c.message,
      `manual configuration required: Headscale has no DNS API; add under dns.nameservers.split in Headscale's config and restart it: "svc.cluster.local": ["10.96.0.53"]`,
    );
  });
});

describe("Tailnet e2e: faults", () => {
  it("refused: Unreachable, children kept, no write; recovers", async (t) => {
    const h = await harness(t);
    h.mc.apply(ingress());
    await settleStable(h);
    const children = h.children();
    const writes = h.fake.policyWrites;
    await h.fake.fault({ kind: "refused" });
    h.advance(11_000);
    await settleStable(h);
    assert.equal(h.reason("ApiReachable"), "Unreachable");
    assert.match(h.condition("ApiReachable").message, /^Headscale GET \/api\/v1\/health: connection refused$/);
    assert.equal(h.reason("ApiKeyValid"), "Error");
    assert.equal(h.reason("HeadscaleCompatible"), "CannotVerify");
    assert.equal(h.reason("PolicyMode"), "CannotVerify");
    assert.equal(h.reason("UsersUnique"), "CannotVerify");
    assert.equal(h.reason("PolicyApplied"), "ApplyFailed");
    assert.deepEqual(h.children(), children);
    assert.equal(h.fake.policyWrites, writes);
    await h.fake.clearFaults();
    h.advance(11_000);
    await settleStable(h);
    assert.equal(h.reason("ApiReachable"), "Reachable");
    assert.equal(h.reason("PolicyApplied"), "InSync");
  });

  it("timeout: Unreachable with the operation and the budget", async (t) => {
    const h = await harness(t, { timeoutMs: 300 });
    h.mc.apply(egress());
    await h.fake.fault({ kind: "timeout" });
    await settleStable(h);
    assert.equal(h.condition("ApiReachable").message, "Headscale GET /api/v1/health: timed out after 300ms");
    assert.equal(h.reason("ApiKeyValid"), "Error");
    assert.equal(h.reason("PolicyRendered"), "CannotVerify", "egress targets need the node list");
    assert.deepEqual(h.fake.writes(), []);
    await h.fake.clearFaults();
  });

  it("500 everywhere: Unhealthy, nothing written", async (t) => {
    const h = await harness(t);
    await h.fake.fault({ kind: "status", status: 500 });
    await settleStable(h);
    assert.equal(h.reason("ApiReachable"), "Unhealthy");
    assert.equal(h.reason("ApiKeyValid"), "Error");
    assert.equal(h.reason("PolicyApplied"), "ApplyFailed");
    assert.deepEqual(h.fake.writes(), []);
  });

  it("database down (every call 401, /health 500): Unhealthy, the key Unknown, never Rejected", async (t) => {
    const h = await harness(t);
    h.fake.setDatabaseDown(true);
    await settleStable(h);
    assert.equal(h.reason("ApiReachable"), "Unhealthy");
    assert.equal(h.condition("ApiKeyValid").status, "Unknown");
    assert.equal(h.reason("ApiKeyValid"), "Error");
    assert.equal(h.reason("PolicyApplied"), "ApplyFailed");
    for (const type of ["ApiReachable", "ApiKeyValid", "PolicyApplied"]) {
      assert.doesNotMatch(h.condition(type).message, /apikeys create|does not accept the API key/, type);
    }
    assert.deepEqual(h.fake.writes(), []);
    assert.equal(h.fake.count("POST", /check/), 0, "no probe while the database is down");
    h.fake.setDatabaseDown(false);
    h.advance(60_000);
    await settleStable(h);
    assert.equal(h.reason("ApiKeyValid"), "Valid");
    assert.equal(h.reason("PolicyApplied"), "InSync");
    assert.equal(h.fake.policyWrites, 1, "written once the database is back");
  });

  it("a database error behind a valid key (GET /api/v1/health 500): Unhealthy, the key Valid", async (t) => {
    const h = await harness(t);
    await h.fake.fault({ kind: "databaseError", path: /^\/api\/v1\/health$/ });
    await settleStable(h);
    assert.equal(h.reason("ApiReachable"), "Unhealthy");
    assert.equal(h.reason("ApiKeyValid"), "Valid");
    assert.equal(h.reason("PolicyApplied"), "ApplyFailed");
    assert.deepEqual(h.fake.writes(), []);
  });

  it("401: Rejected, no write", async (t) => {
    const h = await harness(t, { objects: () => [apiKeySecret("hskey-api-wrongprefix-x"), baseConfigMap()] });
    await settleStable(h);
    assert.equal(h.reason("ApiReachable"), "Reachable");
    assert.equal(h.reason("ApiKeyValid"), "Rejected");
    assert.equal(h.reason("HeadscaleCompatible"), "CannotVerify");
    assert.equal(h.reason("PolicyApplied"), "ApplyFailed");
    assert.deepEqual(h.fake.writes(), []);
    assert.equal(h.fake.count("POST", /check/), 0, "no probe with a refused key");
  });

  it("no API key Secret: NoAPIKey, no Headscale call, no credentials Secret", async (t) => {
    const h = await harness(t, { objects: () => [baseConfigMap()] });
    h.mc.apply(ingress());
    await settleStable(h);
    assert.equal(h.reason("ApiKeyValid"), "NoAPIKey");
    assert.equal(h.reason("PolicyApplied"), "NoAPIKey");
    assert.equal(h.reason("PolicyRendered"), "Rendered");
    assert.deepEqual(h.fake.requests, []);
    assert.deepEqual(h.children(), CHILDREN.slice(0, 2));
  });

  it("file policy mode: File, Incompatible, write skipped", async (t) => {
    const h = await harness(t, { fake: { policyMode: "file" } });
    h.mc.apply(ingress());
    await settleStable(h);
    assert.equal(h.reason("PolicyMode"), "File");
    assert.equal(h.reason("HeadscaleCompatible"), "Incompatible");
    assert.equal(h.reason("PolicyApplied"), "PolicyModeFile");
    assert.equal(h.fake.count("PUT", /^\/api\/v1\/policy$/), 0);
  });

  it("Headscale 0.28 (no policy/check): Incompatible, never driven", async (t) => {
    const h = await harness(t, { fake: { version: "0.28" } });
    h.mc.apply(ingress());
    addAgentNode(h.fake, { name: "grafana", tags: ["tag:k8s-monitoring-grafana"] });
    await settleStable(h);
    assert.equal(h.reason("HeadscaleCompatible"), "Incompatible");
    assert.equal(
      h.condition("HeadscaleCompatible").message,
      "POST /api/v1/policy/check answered 404 (Headscale older than 0.29); supported: Headscale 0.29.x",
    );
    assert.equal(h.reason("PolicyApplied"), "ApplyFailed");
    assert.deepEqual(h.fake.writes(), []);
  });

  it("duplicate users: Duplicate, userConflicts, PolicyRejected, no write", async (t) => {
    const h = await harness(t);
    h.fake.addUser({ name: "alice" });
    h.fake.addUser({ name: "alice", provider: "oidc" });
    h.fake.addUser({ name: "bob" });
    await settleStable(h);
    assert.equal(h.reason("UsersUnique"), "Duplicate");
    assert.equal(h.status().userConflicts, 1);
    assert.equal(h.reason("PolicyApplied"), "PolicyRejected");
    assert.deepEqual(h.fake.writes(), []);
    assert.match(await h.metricsText(), /tailnet_headscale_user_conflicts\{tailnet="home"\} 1/);
  });

  it("node list 500 with an egress: CannotVerify; check 500: ProbeFailed; user list 500: CannotVerify", async (t) => {
    const h = await harness(t);
    h.mc.apply(egress());
    await h.fake.fault({ kind: "status", status: 500, path: /^\/api\/v1\/node$/ });
    await settleStable(h);
    assert.equal(h.reason("HeadscaleCompatible"), "CannotVerify");
    assert.equal(h.reason("PolicyRendered"), "CannotVerify");
    await h.fake.clearFaults();
    await h.fake.fault({ kind: "status", status: 500, path: /^\/api\/v1\/(policy\/check|user)$/ });
    h.advance(11_000);
    await settleStable(h);
    assert.equal(h.reason("HeadscaleCompatible"), "ProbeFailed");
    assert.equal(h.reason("UsersUnique"), "CannotVerify");
    assert.equal(h.reason("PolicyApplied"), "ApplyFailed");
    assert.deepEqual(h.fake.writes(), []);
  });
});
