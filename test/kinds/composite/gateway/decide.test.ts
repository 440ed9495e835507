/**
 * decideGateway as a table (scenarios.ts: rows { name, input, expect } over the real decide input, one per
 * reason in the reasons page order, plus "all healthy"), a Ready staircase in api.md's order Registered,
 * RoutesInSync, DNSReady, WorkloadCurrent, ServiceReady, and the check that the rows produce exactly the
 * (condition, reason, status) triples GATEWAY_REASONS allows.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { GATEWAY_REASONS } from "../../../../src/conditions/tables/gateway.js";
import { isRecord } from "../../../../src/k8s/objects.js";
import type { GatewayInputs } from "../../../../src/kinds/composite/gateway/plan.js";
import { assertCoversTable } from "../../../helpers/reason-coverage.js";
import { exitRows } from "./exit-scenarios.js";
import {
  dnsServiceLive,
  FRESH,
  gateway,
  healthy,
  hsKey,
  hsNode,
  liveReplicas,
  liveStatefulSet,
  liveStateSecret,
  renderInput,
} from "./fixtures.js";
import { identityRows } from "./identity-scenarios.js";
import { rows, run } from "./scenarios.js";

describe("decideGateway", () => {
  for (const row of [...rows, ...identityRows]) {
    it(row.name, () => {
      const { by } = run(row.input, row.outcome);
      const got = Object.fromEntries(Object.keys(row.expect).map((t) => [t, by[t]?.reason]));
      assert.deepEqual(got, row.expect);
    });
  }

  it("lists the conditions in the reasons page order with Ready last", () => {
    const { conditions } = run(healthy());
    assert.deepEqual(
      conditions.map((c) => c.type),
      [
        "Registered",
        "RoutesInSync",
        "ExitNode",
        "DNSReady",
        "StaleNodes",
        "ClusterDNSForward",
        "WorkloadCurrent",
        "ServiceReady",
        "NodeIdentity",
        "Ready",
      ],
    );
  });

  it("a key minted in this sync: the approval waits for the next sync, which comes in 5 s", () => {
    const row = rows.find((r) => r.name === "a key minted in this sync holds the approval back");
    assert.ok(row);
    const { decision, by } = run(row.input, row.outcome);
    assert.equal(
      by.RoutesInSync.message,
      'approving 10.96.0.0/12 on node 12 "cluster-gw" waits for the next sync: bootstrap key 8 was minted in this one',
    );
    assert.equal(decision.resyncAfterSeconds, 5);
  });

  it("a stale node's deletion waits for the next sync after a mint", () => {
    const row = rows.find((r) => r.name === "deleting a stale node failed");
    assert.ok(row);
    const { by } = run(row.input, { minted: "8", deleted: [] });
    assert.deepEqual(
      [by.StaleNodes.status, by.StaleNodes.reason, by.StaleNodes.message],
      [
        "Unknown",
        "None",
        'deleting stale node 5 "cluster-gw" waits for the next sync: bootstrap key 8 was minted in this one',
      ],
    );
  });

  it("not served: every child kept as observed, scaled to zero when suspended; the tag once known", () => {
    const deployment = liveStatefulSet(renderInput(gateway({ suspend: true })));
    const parent = gateway({ suspend: true }, { status: { tag: "tag:old", node: { id: "12" } } });
    const { decision } = run({
      parent,
      spec: renderInput(parent).spec,
      children: [deployment],
      unserved: { reason: "NoAPIKey", message: "no key", tag: "tag:k8s-infra-gw" },
    });
    assert.equal(decision.children.length, 1);
    const spec = decision.children[0].spec;
    assert.equal(isRecord(spec) ? spec.replicas : undefined, 0);
    assert.deepEqual(decision.fields, { tag: "tag:k8s-infra-gw", node: { id: "12" } });
    assert.equal(decision.suspended, true);
  });

  it("not served: an observed state Secret is kept as metadata only, never with tailscaled's data", () => {
    const parent = gateway();
    const state = liveStateSecret(parent, 0, "12");
    const { decision } = run({
      parent,
      spec: renderInput(parent).spec,
      children: [state],
      unserved: { reason: "NoTailnet", message: "no Tailnet" },
    });
    const { name, namespace, labels } = state.metadata;
    assert.deepEqual(decision.children, [
      { apiVersion: "v1", kind: "Secret", metadata: { name, namespace, labels }, type: "Opaque" },
    ]);
  });

  it("covers every (condition, reason, status) of GATEWAY_REASONS, and nothing else", () => {
    assertCoversTable(
      GATEWAY_REASONS,
      [...rows, ...identityRows, ...exitRows].map((r) => run(r.input, r.outcome).conditions),
    );
  });
});

describe("Ready staircase", () => {
  const dry = (input: GatewayInputs): GatewayInputs => ({
    ...input,
    tailnet: { ...input.tailnet, policyMode: "DryRun" },
  });
  const lb = gateway({ service: { type: "LoadBalancer" } });
  const r = renderInput(lb);
  const pending = { ...dnsServiceLive("10.96.0.53", "LoadBalancer") };
  const assigned = { ...pending, status: { loadBalancer: { ingress: [{ ip: "192.0.2.10" }] } } };
  const earlier = liveStatefulSet({ ...r, noLogsNoSupport: false });
  const live = liveReplicas(r, ["12"]);
  const current = { ...live, legacyKeySecrets: [] };
  const stale = {
    statefulSets: [earlier],
    children: [...live.children.filter((c) => c.kind !== "StatefulSet"), earlier],
    legacyKeySecrets: [],
  };
  const notReady = [
    { name: "gw-gateway-0-0", replica: 0, deleting: false, ready: { tailscale: true, coredns: false } },
  ];
  const ready = [{ name: "gw-gateway-0-0", replica: 0, deleting: false, ready: { tailscale: true, coredns: true } }];
  const base = healthy({ ...r, parent: lb });
  const steps: { name: string; input: GatewayInputs; ready: string }[] = [
    {
      name: "nothing registered, routes unapproved, CoreDNS down, rollout pending, LB pending",
      input: dry({
        ...base,
        headscale: { nodes: { ok: true, value: [] }, keys: { ok: true, value: [hsKey({ used: false })] } },
        ...FRESH,
        previousNode: undefined,
        observed: { ...stale, service: pending },
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
        observed: { ...stale, service: pending },
        related: { ...base.related, pods: notReady },
      }),
      ready: "NotApproved",
    },
    {
      name: "route approved",
      input: {
        ...base,
        observed: { ...stale, service: pending },
        related: { ...base.related, pods: notReady },
      },
      ready: "NotServing",
    },
    {
      name: "CoreDNS ready",
      input: { ...base, observed: { ...stale, service: pending }, related: { ...base.related, pods: ready } },
      ready: "PodTemplateStale",
    },
    {
      name: "rollout done",
      input: {
        ...base,
        observed: { ...current, service: pending },
        related: { ...base.related, pods: ready },
      },
      ready: "LBPending",
    },
    {
      name: "load balancer assigned",
      input: {
        ...base,
        observed: { ...current, service: assigned },
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
