/**
 * decideGateway as a table (scenarios.ts: one row per reason in the reasons page order, plus "all
 * healthy") and a Ready staircase in api.md's order Registered, RoutesInSync, DNSReady,
 * WorkloadCurrent, ServiceReady.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { GatewayDecideInput } from "../../../src/kinds/gateway/decide.js";
import { dnsServiceLive, gateway, healthy, hsKey, hsNode, liveDeployment, renderInput } from "./fixtures.js";
import { rows, run } from "./scenarios.js";

describe("decideGateway", () => {
  for (const row of rows) {
    it(row.name, () => {
      const { by } = run(row.observed);
      const got = Object.fromEntries(Object.keys(row.want).map((t) => [t, by[t]?.reason]));
      assert.deepEqual(got, row.want);
    });
  }

  it("lists the conditions in the reasons page order with Ready last", () => {
    const { conditions } = run(healthy());
    assert.deepEqual(
      conditions.map((c) => c.type),
      [
        "Registered",
        "RoutesInSync",
        "DNSReady",
        "StaleNodes",
        "ClusterDNSForward",
        "WorkloadCurrent",
        "ServiceReady",
        "Ready",
      ],
    );
  });
});

describe("Ready staircase", () => {
  const dry = (input: GatewayDecideInput): GatewayDecideInput => ({
    ...input,
    tailnet: { ...input.tailnet, policyMode: "DryRun" },
  });
  const lb = gateway({ service: { type: "LoadBalancer" } });
  const r = renderInput(lb);
  const pending = { ...dnsServiceLive("10.96.0.53", "LoadBalancer") };
  const assigned = { ...pending, status: { loadBalancer: { ingress: [{ ip: "192.0.2.10" }] } } };
  const stale = liveDeployment(r, "gw-authkey-6");
  const current = liveDeployment(r);
  const notReady = [{ name: "gw-gateway-0", deleting: false, ready: { tailscale: true, coredns: false } }];
  const ready = [{ name: "gw-gateway-0", deleting: false, ready: { tailscale: true, coredns: true } }];
  const base = healthy({ ...r, parent: lb });
  const steps: { name: string; input: GatewayDecideInput; ready: string }[] = [
    {
      name: "nothing registered, routes unapproved, CoreDNS down, rollout pending, LB pending",
      input: dry({
        ...base,
        headscale: { nodes: { ok: true, value: [] }, keys: { ok: true, value: [hsKey({ used: false })] } },
        previousNode: undefined,
        observed: { deployment: stale, service: pending },
        related: { ...base.related, pods: notReady },
      }),
      ready: "Provisioning",
    },
    {
      name: "node registered (DryRun: route stays unapproved)",
      input: dry({
        ...base,
        headscale: {
          nodes: { ok: true, value: [hsNode({ approvedRoutes: [] })] },
          keys: { ok: true, value: [hsKey()] },
        },
        observed: { deployment: stale, service: pending },
        related: { ...base.related, pods: notReady },
      }),
      ready: "NotApproved",
    },
    {
      name: "route approved",
      input: {
        ...base,
        observed: { deployment: stale, service: pending },
        related: { ...base.related, pods: notReady },
      },
      ready: "NotServing",
    },
    {
      name: "CoreDNS ready",
      input: { ...base, observed: { deployment: stale, service: pending }, related: { ...base.related, pods: ready } },
      ready: "PodTemplateStale",
    },
    {
      name: "rollout done",
      input: {
        ...base,
        observed: { deployment: current, service: pending },
        related: { ...base.related, pods: ready },
      },
      ready: "LBPending",
    },
    {
      name: "load balancer assigned",
      input: {
        ...base,
        observed: { deployment: current, service: assigned },
        related: { ...base.related, pods: ready },
      },
      ready: "FreshRuntimeReady",
    },
  ];
  for (const step of steps) {
    it(step.name, () => {
      const { by } = run(step.input);
      assert.equal(by.Ready.reason, step.ready);
      assert.equal(by.Ready.status, step.ready === "FreshRuntimeReady" ? "True" : "False");
    });
  }
});
