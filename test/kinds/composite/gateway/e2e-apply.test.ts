/**
 * Issue 24, defect A: a TailnetGateway's children must stay updatable under Metacontroller's
 * default dynamic apply (the loop merges children as pkg/dynamic/apply does and refuses what the
 * API server refuses). Before the fix, ports 53/UDP + 53/TCP (Service) and 1053/UDP + 1053/TCP
 * (CoreDNS container) collapsed by their guessed merge key, and every update was refused.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { applyGateway, child, readyGateway, replicas, serviceIP, statusOf } from "./world.js";

describe("TailnetGateway children under Metacontroller's dynamic apply", () => {
  it("replicas 1 → 2 reaches a second StatefulSet, with no refused update", async (t) => {
    const w = await readyGateway(t);
    assert.deepEqual(w.mc.errors, []);
    assert.equal(replicas(w.mc), 1);
    applyGateway(w.mc, { replicas: 2 });
    await w.mc.settle();
    assert.deepEqual(w.mc.errors, []);
    assert.deepEqual([replicas(w.mc, 0), replicas(w.mc, 1)], [1, 1]);
    const np = child(w.mc, "NetworkPolicy", "gw-gateway")?.spec as { ingress: { ports: { protocol: string }[] }[] };
    const dnsProtocols = np.ingress.flatMap((r) => r.ports.map((p) => p.protocol)).slice(0, 2);
    assert.deepEqual(dnsProtocols, ["UDP", "TCP"], "UDP DNS still allowed after an update");
  });

  it("a key rotated in place is an InPlace update of the one key Secret; the state Secret's data survives the apply", async (t) => {
    const w = await readyGateway(t);
    const state = () => child(w.mc, "Secret", "gw-gateway-0-state")?.data;
    const before = state();
    assert.ok(before, "the replica wrote its device_id");
    w.clock.now = new Date(Date.parse("2026-11-29T10:31:00Z"));
    await w.mc.settle();
    assert.deepEqual(w.mc.errors, []);
    const key = child(w.mc, "Secret", "gw-gateway-authkey");
    assert.equal(key?.metadata.annotations?.["tailnet.internal/key-id"], "2");
    assert.deepEqual(state(), before, "tailscaled's data is never overwritten by the operator");
  });

  it("a serviceType change replaces the DNS Service (OnDelete: never merged), both protocols kept", async (t) => {
    const w = await readyGateway(t);
    const before = serviceIP(w.mc);
    applyGateway(w.mc, { service: { type: "LoadBalancer" } });
    await w.mc.settle();
    assert.deepEqual(w.mc.errors, []);
    const svc = child(w.mc, "Service", "gw-dns")?.spec as { type: string; clusterIP: string; ports: unknown[] };
    assert.equal(svc.type, "LoadBalancer");
    assert.notEqual(svc.clusterIP, before, "a new Service");
    assert.equal(statusOf(w.mc).dnsServiceIP, svc.clusterIP);
    assert.deepEqual(svc.ports, [
      { name: "dns", port: 53, targetPort: 1053, protocol: "UDP" },
      { name: "dns-tcp", port: 53, targetPort: 1053, protocol: "TCP" },
    ]);
  });
});
