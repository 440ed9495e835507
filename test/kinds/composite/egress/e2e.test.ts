// TailnetEgress end to end: the Metacontroller emulator calls the real hook server, which talks to
// the fake Headscale and scrapes a real agent on loopback (SOCKS5 stand-in, fake LocalAPI, TCP echo).
// This file: the way to Ready and every reason on the way; e2e-headscale.test.ts: Headscale's side.
import assert from "node:assert/strict";
import { connect } from "node:net";
import { describe, it } from "node:test";
import type { K8sObject } from "../../../../src/k8s/objects.js";
import { egressAgentConfig } from "../../../../src/kinds/composite/egress/children.js";
import { readEgressSpec } from "../../../../src/kinds/composite/egress/spec.js";
import { sample } from "../../../agent/helpers.js";
import { closedPort } from "../../../fakes/agent/echo.js";
import {
  deploymentEnv,
  type EgressStatus,
  foreignService,
  kindsOf,
  policyText,
  READY,
  reasons,
  TAG,
  targetReasons,
  toReady,
  world,
} from "./world.js";

function echoThrough(port: number, text: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: "127.0.0.1", port });
    let got = "";
    socket.on("data", (chunk: Buffer) => {
      got += chunk.toString();
      if (got.length >= text.length) socket.end();
    });
    socket.on("close", () => resolve(got));
    socket.on("error", reject);
    socket.write(text);
  });
}

describe("TailnetEgress end to end", () => {
  it("NotRegistered → Conflict → Ready: key, children, data path, metrics, stable status", async (t) => {
    const w = await world(t, {
      extraTargets: (port) => [{ name: "cache", host: "db-1.ts.example.com", ports: [{ port }] }],
      before: [foreignService("cache")],
    });
    await w.settle();
    assert.deepEqual(w.mc.errors, []);
    assert.deepEqual(reasons(w), {
      ...READY,
      Registered: "NotRegistered",
      RoutesGranted: "ProbeFailed",
      TargetsReachable: "ProbeFailed",
      ServiceConflict: "Conflict",
      Ready: "NotRegistered",
    });
    assert.equal(w.cond("Registered")?.message, "no Headscale node carries tag:k8s-shop-db yet");
    assert.equal(
      w.cond("RoutesGranted")?.message,
      "agent pod db-agent-0-0 reports not ready: tailscaled is not running, so its netmap cannot be read",
    );
    const posts = w.fake.writes();
    assert.deepEqual(
      posts.map((r) => [r.method, r.path, r.body]),
      [
        [
          "POST",
          "/api/v1/preauthkey",
          { reusable: true, ephemeral: false, expiration: "2026-11-30T10:00:00Z", aclTags: [TAG] },
        ],
      ],
    );
    const keyName = w.keySecret()?.metadata.name;
    assert.equal(keyName, "db-authkey");
    assert.deepEqual(kindsOf(w), [
      "ConfigMap/db-agent",
      "NetworkPolicy/db-agent",
      "Role/db-agent-0",
      "RoleBinding/db-agent-0",
      "Secret/db-agent-0-state",
      "Secret/db-authkey",
      "Service/postgres",
      "Service/printer",
      "ServiceAccount/db-agent-0",
      "StatefulSet/db-agent-0",
    ]);
    assert.deepEqual(deploymentEnv(w).find((e) => e.name === "TS_AUTHKEY")?.valueFrom, {
      secretKeyRef: { name: "db-authkey", key: "authkey" },
    });

    w.register();
    await w.settle();
    assert.deepEqual(reasons(w), { ...READY, ServiceConflict: "Conflict", Ready: "Conflict" });
    assert.equal(
      w.cond("Ready")?.message,
      "Service shop/cache exists and is not owned by this TailnetEgress: target cache gets no Service",
    );
    assert.equal(
      w.mc.get("v1", "Service", "cache", "shop")?.metadata.labels?.app,
      "legacy",
      "the foreign Service is untouched",
    );

    w.mc.delete("v1", "Service", "cache", "shop");
    await w.settle();
    assert.deepEqual(reasons(w), READY);
    const status = w.egress().status as EgressStatus;
    assert.equal(status.tag, TAG);
    assert.deepEqual(status.targets, [
      { name: "postgres", host: "db-1", address: w.db1.ipv4, service: "postgres", state: "Ready", reason: "" },
      {
        name: "printer",
        host: "192.168.1.10",
        address: "192.168.1.10",
        service: "printer",
        state: "Ready",
        reason: "",
      },
      { name: "cache", host: "db-1.ts.example.com", address: w.db1.ipv4, service: "cache", state: "Ready", reason: "" },
    ]);
    const cache = w.mc.get("v1", "Service", "cache", "shop") as K8sObject;
    assert.equal(cache.metadata.labels?.["tailnet.internal/egress-target"], "true");
    assert.equal(cache.metadata.annotations?.["tailnet.internal/target-host"], "db-1.ts.example.com");

    // the agent runs exactly what the operator rendered (its listeners moved to loopback for the test)
    const cm = w.mc.get("v1", "ConfigMap", "db-agent", "shop") as K8sObject;
    assert.deepEqual(
      JSON.parse((cm.data as Record<string, string>)["config.json"]),
      egressAgentConfig(readEgressSpec(w.egress())),
    );
    assert.equal(
      await echoThrough(w.agent.ports.targets[0].ports[0].listenPort, "ping through the agent"),
      "ping through the agent",
    );
    assert.ok(
      w.socks.requests.some((r) => r.host === "db-1" && r.port === w.echo.port),
      "the agent dialled the target by its tailnet name through tailscaled's SOCKS5 proxy",
    );

    const metrics = await w.metricsText();
    const id = { namespace: "shop", name: "db" };
    assert.equal(sample(metrics, "tailnet_egress_target_state", { ...id, target: "postgres", state: "Ready" }), 1);
    assert.equal(sample(metrics, "tailnet_egress_target_state", { ...id, target: "postgres", state: "NoGrant" }), 0);
    assert.equal(sample(metrics, "tailnetegress_routes_missing", id), 0);
    assert.equal(
      sample(metrics, "tailnet_auth_key_expiry_timestamp_seconds", { kind: "TailnetEgress", ...id }),
      Date.parse("2026-11-30T10:00:00Z") / 1000,
    );
    assert.equal(sample(metrics, "tailnet_resource_ready", { kind: "TailnetEgress", ...id, reason: "Ready" }), 1);

    const before = JSON.stringify(w.egress().status);
    assert.equal(await w.settle(), 1, "a repeat sync changes nothing");
    assert.equal(JSON.stringify(w.egress().status), before);
    assert.equal(w.fake.writes().length, 1, "one key, nothing else written");
    assert.deepEqual(w.mc.errors, []);
  });

  it("every per-target reason and ProbeFailed, each back to Ready; children kept, nothing written", async (t) => {
    const w = await world(t);
    await toReady(w);
    assert.deepEqual(reasons(w), READY);
    const children = w.childrenSnapshot();
    const writes = w.fake.writes().length;
    const router = w.fake.state.nodes.get(w.router.id);
    assert.ok(router);
    const p = w.peers();
    const scenarios: {
      name: string;
      apply: () => void | Promise<void>;
      undo: () => void | Promise<void>;
      want: Record<string, string>;
      targets: Record<string, string>;
      message?: [string, string];
    }[] = [
      {
        name: "db-1 not granted",
        apply: () => w.setPeers([p.router]),
        undo: () => w.setPeers([p.db1, p.router]),
        want: { ...READY, RoutesGranted: "RoutesMissing", Ready: "RoutesMissing" },
        targets: { postgres: "NoGrant", printer: "" },
        message: [
          "RoutesGranted",
          `postgres NoGrant: db-1 (${w.db1.ipv4}) is not in the agent's netmap: the policy does not grant tag:k8s-shop-db access to it`,
        ],
      },
      {
        name: "route not approved",
        apply: () => {
          router.approvedRoutes = [];
          w.setPeers([p.db1, { ...p.router, PrimaryRoutes: [] }]);
        },
        undo: () => {
          router.approvedRoutes = ["192.168.1.0/24"];
          w.setPeers([p.db1, p.router]);
        },
        // no peer serves the route now, so the agent's dial to the printer left through the pod network
        want: { ...READY, RoutesGranted: "RoutesMissing", TargetsReachable: "OutsideTailnet", Ready: "RoutesMissing" },
        targets: { postgres: "", printer: "NotApproved" },
        message: [
          "Ready",
          "printer NotApproved: route 192.168.1.0/24 advertised by router is not approved (a route inside a TailnetSite is approved on the next policy reconcile)",
        ],
      },
      {
        name: "route not advertised",
        apply: () => {
          router.availableRoutes = [];
          w.setPeers([p.db1, { ...p.router, PrimaryRoutes: [] }]);
        },
        undo: () => {
          router.availableRoutes = ["192.168.1.0/24"];
          w.setPeers([p.db1, p.router]);
        },
        want: { ...READY, RoutesGranted: "RoutesMissing", TargetsReachable: "OutsideTailnet", Ready: "RoutesMissing" },
        targets: { postgres: "", printer: "NotAdvertised" },
        message: ["RoutesGranted", "printer NotAdvertised: no node advertises a route covering 192.168.1.10"],
      },
      {
        // tailscaled without --accept-routes (Linux default): the route shows in the netmap, but the
        // SOCKS5 dial to 192.168.1.10 goes out of the pod network (net/tsdial); the probe "succeeds"
        name: "routes not accepted by the agent's tailscaled",
        apply: () => w.localApi.setPrefs({ RouteAll: false }),
        undo: () => w.localApi.setPrefs({ RouteAll: true }),
        want: { ...READY, TargetsReachable: "OutsideTailnet", Ready: "OutsideTailnet" },
        targets: { postgres: "", printer: "OutsideTailnet" },
        message: [
          "TargetsReachable",
          "printer: agent pod db-agent-0-0 reached 192.168.1.10 outside the tailnet, through the pod network: no peer holds it, or the agent does not accept the peers' subnet routes (--accept-routes)",
        ],
      },
      {
        name: "printer does not answer",
        apply: () => void w.unreachable.add("192.168.1.10"),
        undo: () => void w.unreachable.delete("192.168.1.10"),
        want: { ...READY, TargetsReachable: "Unreachable", Ready: "Unreachable" },
        targets: { postgres: "", printer: "Unreachable" },
      },
      {
        name: "agent not scraped",
        apply: async () => {
          const closed = await closedPort();
          for (const pod of w.mc.list("Pod")) {
            const c = (pod.spec as { containers: { ports?: { name: string; containerPort: number }[] }[] })
              .containers[1];
            for (const port of c.ports ?? []) if (port.name === "metrics") port.containerPort = closed;
          }
        },
        undo: () => {
          for (const pod of w.mc.list("Pod")) {
            const c = (pod.spec as { containers: { ports?: { name: string; containerPort: number }[] }[] })
              .containers[1];
            for (const port of c.ports ?? []) if (port.name === "metrics") port.containerPort = w.agent.metricsPort;
          }
        },
        want: { ...READY, RoutesGranted: "ProbeFailed", TargetsReachable: "ProbeFailed", Ready: "ProbeFailed" },
        targets: { postgres: "ProbeFailed", printer: "ProbeFailed" },
        message: [
          "Ready",
          "agent pod db-agent-0-0 (GET /status: ECONNREFUSED) not scraped: the pod is down or a NetworkPolicy blocks TCP 9080 from the operator",
        ],
      },
      {
        name: "tag not in the live policy",
        apply: () => w.fake.setPolicy(policyText(["tag:router"])),
        undo: () => w.fake.setPolicy(policyText([TAG, "tag:router"])),
        want: { ...READY, TagKnown: "PolicyPending", Ready: "TagUnknown" },
        targets: { postgres: "", printer: "" },
      },
    ];
    for (const s of scenarios) {
      await s.apply();
      await w.settle();
      assert.deepEqual(reasons(w), s.want, s.name);
      assert.deepEqual(targetReasons(w), s.targets, s.name);
      if (s.message) assert.equal(w.cond(s.message[0])?.message, s.message[1], s.name);
      if (s.name === "printer does not answer") {
        assert.match(w.cond("TargetsReachable")?.message ?? "", /^printer: dial 192\.168\.1\.10:\d+: /);
      }
      if (s.name === "agent not scraped") {
        const metrics = await w.metricsText();
        assert.equal(sample(metrics, "tailnetegress_routes_missing", { namespace: "shop", name: "db" }), undefined);
      }
      assert.equal(w.childrenSnapshot(), children, `${s.name}: children kept`);
      await s.undo();
      await w.settle();
      assert.deepEqual(reasons(w), READY, `${s.name} undone`);
    }
    assert.equal(w.fake.writes().length, writes, "reporting writes nothing to Headscale");
    assert.deepEqual(w.mc.errors, []);
  });
});
