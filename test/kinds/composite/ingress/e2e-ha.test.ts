/**
 * HA ingress end to end with every real kind (test/hardening/world.ts: the Tailnet is not stubbed, so its
 * DNS records are the ones Headscale would serve): spec.replicas 3 runs three agent nodes under one tag, the
 * ingress's names answer with every online node's address, a node that goes offline leaves the records
 * and the Ready message says how many serve, and one that a newer pod replaced is superseded only once
 * enough replicas are online.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { SUPERSEDED_GRACE_SECONDS } from "../../../../src/kinds/shared/replica-nodes.js";
import { wipeStateSecret } from "../../../fakes/containerboot-kube.js";
import { loopStore } from "../../../fakes/pod-lifecycle.js";
import { OPS, TAGS, toReady, type World, world, ZONE } from "../../../hardening/world.js";
import { bootNode } from "../../shared/replica-boot.js";

const NAMES = [`dash.${ZONE}`, `grafana-eu.${ZONE}`, `grafana.${ZONE}`];

/** records.json of the Tailnet, as name → values. */
function records(w: World): Record<string, string[]> {
  const data = w.mc.get("v1", "ConfigMap", "tailnet-home-dns-records", OPS)?.data as Record<string, string>;
  const out: Record<string, string[]> = {};
  for (const r of JSON.parse(data["records.json"]) as { name: string; value: string }[]) {
    out[r.name] = [...(out[r.name] ?? []), r.value];
  }
  return out;
}

const ingressNodes = (w: World) => [...w.fake.state.nodes.values()].filter((n) => n.tags.includes(TAGS.ingress));

/** Replica i's pod boots from its StatefulSet and registers (its own node), writing its state as tailscaled would. */
const bootReplica = (w: World, i: number) => bootNode(w.mc, w.fake, "monitoring", "grafana-agent", i);

const ready = (w: World) => w.condition("TailnetIngress", "grafana", "Ready", "monitoring");

describe("HA TailnetIngress (spec.replicas) with the real Tailnet", () => {
  it("three nodes answer for every name; an offline one leaves the records; Ready says how many serve", async (t) => {
    const w = await world(t, { specs: { ingress: { replicas: 3 } } });
    await toReady(w);
    const pdb = w.mc.get("policy/v1", "PodDisruptionBudget", "grafana-agent", "monitoring");
    // one budget across the replicas' StatefulSets: their selectors add only the replica label to its own
    for (const i of [0, 1, 2]) {
      const sts = w.mc.get("apps/v1", "StatefulSet", `grafana-agent-${i}`, "monitoring");
      const own =
        ((sts?.spec ?? {}) as { selector?: { matchLabels?: Record<string, string> } }).selector?.matchLabels ?? {};
      const { "tailnet.internal/replica": replica, ...shared } = own;
      assert.equal(replica, String(i));
      assert.deepEqual(pdb?.spec, { maxUnavailable: 1, selector: { matchLabels: shared } });
    }
    bootReplica(w, 1);
    bootReplica(w, 2);
    await w.settle();
    const nodes = ingressNodes(w);
    assert.deepEqual(
      nodes.map((n) => n.givenName),
      // agents register as <hostname>-<namespace> (agentHostname), replica i ≥ 1 as <that>-r<i> (issue 32):
      // never Headscale's collision suffix
      ["grafana-monitoring", "grafana-monitoring-r1", "grafana-monitoring-r2"],
    );
    const all = nodes.map((n) => n.ipv4).sort();
    assert.deepEqual(records(w), Object.fromEntries(NAMES.map((n) => [n, all])));
    assert.equal(ready(w)?.status, "True");
    assert.equal(ready(w)?.message, `serving web on grafana.${ZONE} (3 nodes online)`);

    // a pod's tailscaled loses the control server: Headscale lists its node offline
    nodes[1].online = false;
    nodes[1].lastSeen = w.clock.now;
    await w.settle();
    const up = [nodes[0].ipv4, nodes[2].ipv4].sort();
    assert.deepEqual(records(w), Object.fromEntries(NAMES.map((n) => [n, up])));
    assert.equal(ready(w)?.status, "True", "at least one node serves");
    assert.equal(ready(w)?.message, `serving web on grafana.${ZONE} (2 of 3 nodes online)`);
    const parent = w.mc.get("tailnet.internal/v1alpha1", "TailnetIngress", "grafana", "monitoring");
    const listed = (parent?.status as { nodes?: { name: string; online: boolean }[] } | undefined)?.nodes ?? [];
    assert.deepEqual(
      listed.map((n) => `${n.name}:${n.online}`),
      ["grafana-monitoring:true", "grafana-monitoring-r1:false", "grafana-monitoring-r2:true"],
    );

    // TailnetNodeOffline (tailnet_node_online == 0 for 5 min) fires for that node only
    const text = await w.metricsText();
    const online = (node: string) =>
      new RegExp(`^tailnet_node_online\\{(?=[^}]*tailnet="home")(?=[^}]*node="${node}")[^}]*\\} (\\d)$`, "m").exec(
        text,
      )?.[1];
    assert.deepEqual(["grafana-monitoring", "grafana-monitoring-r1", "grafana-monitoring-r2"].map(online), [
      "1",
      "0",
      "1",
    ]);

    // past the grace period: replica 1's state Secret still names the node, so it is its node and is kept
    w.clock.now = new Date(w.clock.now.getTime() + (SUPERSEDED_GRACE_SECONDS + 1) * 1000);
    await w.settle();
    assert.ok(w.fake.state.nodes.has(nodes[1].id), "a node a replica's device_id names is never deleted");

    // replica 1 lost its state (its Secret wiped) and registered again: the new node makes 3 online, the
    // predecessor is deleted
    wipeStateSecret(loopStore(w.mc), "grafana-agent-1-state", "monitoring");
    const fresh = bootReplica(w, 1);
    assert.notEqual(fresh.id, nodes[1].id, "a wiped state is a new node");
    await w.settle();
    assert.ok(!w.fake.state.nodes.has(nodes[1].id), "the predecessor of a re-registered replica is deleted");
    const now = [nodes[0].ipv4, nodes[2].ipv4, fresh.ipv4].sort();
    assert.deepEqual(records(w), Object.fromEntries(NAMES.map((n) => [n, now])));
    assert.equal(ready(w)?.message, `serving web on grafana.${ZONE} (3 nodes online)`);
    assert.deepEqual(w.failedCalls(), []);
  });
});
