/**
 * Pods coming and going, with every kind together (see world.ts): a replica's tailscale that starts
 * again (a container restart, a new pod) comes back as the same node from its state Secret (issue 32),
 * and a replica whose state Secret was wiped registers a new node, which Headscale 0.29 names
 * `<host>-1` while the old one lingers offline; the operator removes our superseded node after its
 * grace and the Tailnet's DNS records follow the current one.
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import type { K8sObject } from "../../src/k8s/objects.js";
import { SUPERSEDED_GRACE_SECONDS } from "../../src/kinds/shared/replica-nodes.js";
import { createTestPki, type IssuedCertificate, type TestPki } from "../fakes/agent/pki.js";
import { wipeStateSecret } from "../fakes/containerboot-kube.js";
import { loopStore, startPod } from "../fakes/pod-lifecycle.js";
import { OPS, READY, toReady, world, ZONE } from "./world.js";

let pki: TestPki;
let cert: IssuedCertificate;
before(async () => {
  pki = await createTestPki();
  cert = await pki.issue({
    names: ["dash.ts.example.com", "grafana-eu.ts.example.com"],
    notBefore: new Date("2026-11-01T00:00:00Z"),
    notAfter: new Date("2027-01-01T00:00:00Z"),
  });
});
after(() => pki.cleanup());

describe("pods coming and going", () => {
  it("a restarted tailscale container is the same node; a replica that lost its state re-registers, its predecessor is removed and DNS follows", async (t) => {
    const w = await world(t, { cert });
    await toReady(w);
    assert.deepEqual(w.reasons(), READY);
    const store = loopStore(w.mc);
    const sts = w.mc.get("apps/v1", "StatefulSet", "grafana-agent-0", "monitoring") as K8sObject;
    const grafana = () => [...w.fake.state.nodes.values()].filter((n) => n.tags.includes("tag:k8s-monitoring-grafana"));
    const [first] = grafana();
    // the agent registers as <hostname>-<namespace>, never the bare name it publishes (dns-tenancy.ts agentHostname)
    assert.equal(first.givenName, "grafana-monitoring");

    // 1. The tailscale container starts again (a crash, an OOM kill, a new pod): it reconnects with the state
    //    Secret's machine key, without the auth key: same node, nothing else changes.
    w.fake.disconnect(first.id);
    const again = startPod(w.fake, store, sts, { baseDomain: ZONE });
    assert.equal(again.usedAuthKey, false);
    assert.equal(again.node.id, first.id);
    assert.equal(grafana().length, 1);

    // 2. The replica's state Secret was wiped (kubectl edit): its next start logs in with the auth key as a new
    //    node, which Headscale names grafana-monitoring-1 while the predecessor exists, and writes the new device_id.
    w.fake.disconnect(first.id);
    wipeStateSecret(store, "grafana-agent-0-state", "monitoring");
    const { node: second, usedAuthKey } = startPod(w.fake, store, sts, { baseDomain: ZONE });
    assert.equal(usedAuthKey, true);
    assert.notEqual(second.id, first.id);
    assert.equal(second.givenName, "grafana-monitoring-1");
    first.online = false;
    first.lastSeen = w.clock.now;
    await w.settle();
    assert.ok(w.fake.state.nodes.has(first.id), "within the grace period the old node is kept");

    w.clock.now = new Date(w.clock.now.getTime() + (SUPERSEDED_GRACE_SECONDS + 1) * 1000);
    await w.settle();
    assert.ok(!w.fake.state.nodes.has(first.id), "the predecessor is deleted");
    assert.ok(w.fake.state.nodes.has(second.id), "the current node stays");
    assert.deepEqual(
      w.fake
        .writes()
        .filter((r) => r.method === "DELETE" && r.path.startsWith("/api/v1/node/"))
        .map((r) => r.path),
      [`/api/v1/node/${first.id}`],
    );
    // with the predecessor gone the replica's node takes its name back (agent-replicas.ts, view.renameNode)
    assert.deepEqual(
      w.fake
        .writes()
        .filter((r) => r.method === "POST" && r.path.includes("/rename/"))
        .map((r) => r.path),
      [`/api/v1/node/${second.id}/rename/grafana-monitoring`],
    );
    assert.equal(w.fake.state.nodes.get(second.id)?.givenName, "grafana-monitoring");
    const registered = w.condition("TailnetIngress", "grafana", "Registered", "monitoring");
    assert.equal(registered?.message, "1 node carries tag:k8s-monitoring-grafana: grafana-monitoring");
    const records = w.mc.get("v1", "ConfigMap", "tailnet-home-dns-records", OPS)?.data as Record<string, string>;
    assert.deepEqual(JSON.parse(records["records.json"]), [
      { name: `dash.${ZONE}`, type: "A", value: second.ipv4 },
      { name: `grafana-eu.${ZONE}`, type: "A", value: second.ipv4 },
      { name: `grafana.${ZONE}`, type: "A", value: second.ipv4 },
    ]);
    assert.deepEqual(w.mc.errors, []);
  });
});
