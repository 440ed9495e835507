/**
 * All five real kinds together (see world.ts): the world settles, every workload kind reaches Ready,
 * the Tailnet writes the policy exactly once with every kind's generated tags, grants and
 * autoApprovers, Headscale approves the site's and the gateway's routes, the Tailnet publishes the
 * ingress names, and a second settle changes nothing at all.
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { canonicalJson } from "../../src/policy/canonical.js";
import { createTestPki, type IssuedCertificate, type TestPki } from "../fakes/agent/pki.js";
import { API, CERT_NAMES, GW_ROUTE, OPS, READY, ROUTER_TAG, SITE_PREFIX, TAGS, world, ZONE } from "./world.js";

let pki: TestPki;
let cert: IssuedCertificate;
before(async () => {
  pki = await createTestPki();
  cert = await pki.issue({
    names: CERT_NAMES,
    notBefore: new Date("2026-11-01T00:00:00Z"),
    notAfter: new Date("2027-01-01T00:00:00Z"),
  });
});
after(() => pki.cleanup());

type Conditions = { conditions?: { type: string; reason: string }[] };
const sortedJson = (list: unknown[]) => list.map((x) => canonicalJson(x)).sort();

describe("every kind together", () => {
  it("settles to all Ready with one policy write, and a second settle changes nothing", async (t) => {
    const w = await world(t, { cert });

    // Round one: the Tailnet writes the policy, the workload kinds mint their keys, the gateway answers each
    // replica's ServiceAccount, Role, RoleBinding and state Secret; round two its StatefulSet, once those are
    // observed (src/kinds/composite/gateway/replicas.ts: containerboot exits on a failed RBAC check at boot).
    const first = await w.settle();
    // issue 32: an agent's and a gateway's StatefulSet come once its RBAC and state Secret are observed
    // (creation order), and the agents' StatefulSet pods settle once more after them
    assert.ok(first <= 5, `first settle took ${first} rounds`);
    assert.deepEqual(w.mc.errors, []);
    // The nodes register with those keys, the cluster DNS learns the gateway's Service.
    const nodes = w.register();
    w.configureClusterDns();
    const second = await w.settle();
    // plus one round once Headscale hands out the records the Tailnet wrote (the ingress's DNSServed)
    assert.ok(second <= 4, `second settle took ${second} rounds`);
    assert.deepEqual(w.mc.errors, []);
    assert.ok(
      w.mc.calls.every((c) => c.code === 200),
      "every hook answered 200",
    );

    assert.deepEqual(w.reasons(), READY);
    for (const [kind, name, ns] of [
      ["TailnetEgress", "db", "shop"],
      ["TailnetIngress", "grafana", "monitoring"],
      ["TailnetSite", "lan", "net"],
      ["TailnetGateway", "gw", "infra"],
    ] as const) {
      assert.equal(w.condition(kind, name, "Ready", ns)?.status, "True", `${kind} Ready`);
    }

    // PolicyApplied: Applied on the sync that wrote, InSync ever after; exactly one PUT.
    const applied = w.mc.calls
      .filter((c) => c.kind === "Tailnet" && c.hook === "sync")
      .map((c) => (c.response as { status: Conditions }).status.conditions?.find((x) => x.type === "PolicyApplied"));
    assert.equal(applied[0]?.reason, "Applied");
    assert.ok(applied.length > 1);
    assert.deepEqual(
      applied.slice(1).map((c) => c?.reason),
      applied.slice(1).map(() => "InSync"),
    );
    assert.equal(w.policyPuts(), 1);
    assert.equal(w.fake.policyWrites, 1);

    // The policy Headscale holds: the base plus every kind's tags, grants and routes.
    const live = w.livePolicy();
    // From the base (BASE_POLICY), kept as they were:
    assert.deepEqual(live.groups, { "group:eng": ["alice@"], "group:platform": ["alice@"] });
    assert.deepEqual(live.acls, [{ action: "accept", src: ["group:eng"], dst: ["*:*"] }]);
    assert.deepEqual(live.tagOwners, {
      [TAGS.gateway]: ["group:platform"],
      [TAGS.ingress]: ["group:platform"],
      [TAGS.egress]: ["group:platform"],
      [ROUTER_TAG]: ["group:platform"],
    });
    assert.deepEqual(
      sortedJson(live.grants as unknown[]),
      sortedJson([
        { src: ["tag:k8s-shop-db"], dst: [w.db1.ipv4], ip: [`tcp:${w.echo.port}`] },
        { src: ["group:eng"], dst: [TAGS.ingress], ip: ["tcp:443"] },
        { src: ["group:eng"], dst: [SITE_PREFIX], ip: ["*"] },
      ]),
    );
    assert.deepEqual(live.autoApprovers, { routes: { [GW_ROUTE]: [TAGS.gateway], [SITE_PREFIX]: [ROUTER_TAG] } });
    const tailnet = w.parent("Tailnet", "home").status as {
      policy: { renderedHash: string; appliedHash: string; generated: Record<string, number> };
    };
    assert.equal(tailnet.policy.appliedHash, tailnet.policy.renderedHash);
    assert.deepEqual(tailnet.policy.generated, { tags: 4, grants: 3, routes: 2 });
    const policyMap = w.mc.get("v1", "ConfigMap", "tailnet-home-policy", OPS)?.data as Record<string, string>;
    assert.deepEqual(JSON.parse(policyMap["policy.json"]), live, "the policy ConfigMap holds what Headscale holds");

    // Routes: approved by Headscale's auto-approval from the written policy (no approve_routes needed).
    assert.deepEqual(w.router.approvedRoutes, [SITE_PREFIX]);
    assert.deepEqual(nodes.gateway.approvedRoutes, [GW_ROUTE]);
    assert.deepEqual((w.parent("TailnetSite", "lan", "net").status as { advertisers: unknown }).advertisers, [
      { node: "router-1", prefixes: [SITE_PREFIX], approved: true },
    ]);

    // The Tailnet publishes every ingress name with the ingress node's IPv4.
    const records = w.mc.get("v1", "ConfigMap", "tailnet-home-dns-records", OPS)?.data as Record<string, string>;
    const ip = nodes.ingress.ipv4;
    assert.deepEqual(JSON.parse(records["records.json"]), [
      { name: `dash.${ZONE}`, type: "A", value: ip },
      { name: `grafana-eu.${ZONE}`, type: "A", value: ip },
      { name: `grafana.${ZONE}`, type: "A", value: ip },
    ]);
    assert.deepEqual(w.parent("TailnetIngress", "grafana", "monitoring").status?.dnsName, `grafana.${ZONE}`);
    assert.equal((w.parent("TailnetEgress", "db", "shop").status as { tag: string }).tag, TAGS.egress);

    // A second settle: one round, byte-identical statuses and objects, nothing written to Headscale.
    const statuses = w.statuses();
    const everything = JSON.stringify([...w.mc.objects]);
    const writes = w.fake.writes().length;
    const calls = w.mc.calls.length;
    assert.equal(await w.settle(), 1);
    assert.ok(w.mc.calls.length > calls, "the second settle synced every parent again");
    assert.equal(w.statuses(), statuses);
    assert.equal(JSON.stringify([...w.mc.objects]), everything);
    assert.equal(w.fake.writes().length, writes);
    assert.deepEqual(w.mc.errors, []);
    assert.equal(w.mc.get(API, "Tailnet", "home")?.metadata.generation, 1);
  });
});
