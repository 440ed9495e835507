import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { Obs } from "../../../../src/headscale/errors.js";
import type { HsNode } from "../../../../src/headscale/types.js";
import type { K8sObject } from "../../../../src/k8s/objects.js";
import type { EgressTarget } from "../../../../src/kinds/composite/egress/spec.js";
import {
  type AgentObservation,
  agentObservation,
  evaluateTargets,
  scrapeablePods,
} from "../../../../src/kinds/composite/egress/targets.js";
import { agentStatus, failed, hsNode, type NodeInput, ok, type PeerInput } from "../../shared/fixtures.js";
import { TAG } from "./fixtures.js";

const target = (name: string, host: string, port = 5432): EgressTarget => ({
  name,
  host,
  ports: [{ port, protocol: "TCP" }],
});

const router: NodeInput = {
  id: "3",
  name: "router",
  availableRoutes: ["192.168.1.0/24"],
  approvedRoutes: ["192.168.1.0/24"],
};
const db1: NodeInput = { id: "7", name: "db-1" };
const dbPeer: PeerInput = { hostName: "db-1", ips: ["100.64.0.7"] };
const routerPeer: PeerInput = { hostName: "router", ips: ["100.64.0.3"], primaryRoutes: ["192.168.1.0/24"] };

function agents(peers: PeerInput[], probes: Record<string, boolean | string>, pod = "db-agent-0"): AgentObservation {
  return {
    ok: true,
    agents: [{ pod, status: statusOf(peers, probes) }],
  };
}

function statusOf(peers: PeerInput[], probes: Record<string, boolean | string>) {
  return agentStatus({
    peers,
    targets: Object.entries(probes).map(([name, p]) => ({
      name,
      // what the agent reports: the netmap IP of a node, else the configured host
      address: ({ postgres: "100.64.0.7", printer: "192.168.1.10" } as Record<string, string>)[name] ?? name,
      reachable: p === true,
      error: typeof p === "string" ? p : undefined,
    })),
  });
}

interface Row {
  name: string;
  target: EgressTarget;
  nodes: NodeInput[] | Obs<HsNode[]>;
  agents: AgentObservation;
  want: { reason: string; message: string; address: string };
}

const rows: Row[] = [
  {
    name: "node target in the netmap and answering",
    target: target("postgres", "db-1"),
    nodes: [db1],
    agents: agents([dbPeer], { postgres: true }),
    want: { reason: "", message: "", address: "100.64.0.7" },
  },
  {
    name: "MagicDNS name of a node in the netmap",
    target: target("postgres", "db-1.ts.example.com."),
    nodes: [db1],
    agents: agents([dbPeer], { postgres: true }),
    want: { reason: "", message: "", address: "100.64.0.7" },
  },
  {
    name: "node target absent from the netmap: NoGrant",
    target: target("postgres", "db-1"),
    nodes: [db1],
    agents: agents([], { postgres: "dial db-1:5432: SOCKS5 HostUnreachable" }),
    want: {
      reason: "NoGrant",
      message: "db-1 (100.64.0.7) is not in the agent's netmap: the policy does not grant tag:k8s-shop-db access to it",
      address: "100.64.0.7",
    },
  },
  {
    name: "node named by its IP, absent from the netmap: NoGrant",
    target: target("postgres", "100.64.0.7"),
    nodes: [db1],
    agents: agents([], { postgres: false }),
    want: {
      reason: "NoGrant",
      message: "db-1 (100.64.0.7) is not in the agent's netmap: the policy does not grant tag:k8s-shop-db access to it",
      address: "100.64.0.7",
    },
  },
  {
    name: "no node advertises a covering route: NotAdvertised",
    target: target("printer", "192.168.1.10", 9100),
    nodes: [
      db1,
      { id: "4", name: "exit", availableRoutes: ["0.0.0.0/0", "::/0"], approvedRoutes: ["0.0.0.0/0", "::/0"] },
    ],
    agents: agents([dbPeer], { printer: false }),
    want: {
      reason: "NotAdvertised",
      message: "no node advertises a route covering 192.168.1.10",
      address: "192.168.1.10",
    },
  },
  {
    name: "advertised but not approved: NotApproved",
    target: target("printer", "192.168.1.10", 9100),
    nodes: [{ ...router, approvedRoutes: [] }],
    agents: agents([], { printer: false }),
    want: {
      reason: "NotApproved",
      message:
        "route 192.168.1.0/24 advertised by router is not approved (a route inside a TailnetSite is approved on the next policy reconcile)",
      address: "192.168.1.10",
    },
  },
  {
    name: "approved but absent from the netmap: NoGrant",
    target: target("printer", "192.168.1.10", 9100),
    nodes: [router],
    agents: agents([{ hostName: "router", ips: ["100.64.0.3"] }], { printer: false }),
    want: {
      reason: "NoGrant",
      message:
        "route 192.168.1.0/24 is approved on router but not in the agent's netmap: the policy does not grant tag:k8s-shop-db access to 192.168.1.10",
      address: "192.168.1.10",
    },
  },
  {
    name: "the approved covering route is named, not a more specific unapproved one",
    target: target("printer", "192.168.1.10", 9100),
    nodes: [
      { id: "3", name: "wide", availableRoutes: ["192.168.0.0/16"], approvedRoutes: ["192.168.0.0/16"] },
      { id: "5", name: "narrow", availableRoutes: ["192.168.1.0/24"] },
    ],
    agents: agents([], { printer: false }),
    want: {
      reason: "NoGrant",
      message:
        "route 192.168.0.0/16 is approved on wide but not in the agent's netmap: the policy does not grant tag:k8s-shop-db access to 192.168.1.10",
      address: "192.168.1.10",
    },
  },
  {
    name: "subnet target served by a peer's primary route and answering",
    target: target("printer", "192.168.1.10", 9100),
    nodes: [router],
    agents: agents([routerPeer], { printer: true }),
    want: { reason: "", message: "", address: "192.168.1.10" },
  },
  {
    name: "the route is in the netmap but the dial went outside the tailnet: OutsideTailnet",
    target: target("printer", "192.168.1.10", 9100),
    nodes: [router],
    agents: {
      ok: true,
      agents: [
        {
          pod: "db-agent-0",
          status: agentStatus({
            peers: [routerPeer],
            targets: [{ name: "printer", address: "192.168.1.10", reachable: true, via: "outside" }],
          }),
        },
      ],
    },
    want: {
      reason: "OutsideTailnet",
      message:
        "agent pod db-agent-0 reached 192.168.1.10 outside the tailnet, through the pod network: no peer holds it, or the agent does not accept the peers' subnet routes (--accept-routes)",
      address: "192.168.1.10",
    },
  },
  {
    name: "in the netmap but the dial fails: Unreachable",
    target: target("postgres", "db-1"),
    nodes: [db1],
    agents: agents([dbPeer], { postgres: "dial 100.64.0.7:5432: ECONNREFUSED" }),
    want: { reason: "Unreachable", message: "dial 100.64.0.7:5432: ECONNREFUSED", address: "100.64.0.7" },
  },
  {
    name: "a name no node has: NotAdvertised",
    target: target("nas", "nas"),
    nodes: [db1],
    agents: agents([dbPeer], { nas: false }),
    want: {
      reason: "NotAdvertised",
      message:
        '"nas" is not a tailnet node (node names, and MagicDNS names under the Tailnet\'s dns.baseDomain, resolve)',
      address: "",
    },
  },
  {
    name: "agent not scraped: ProbeFailed, nothing claimed",
    target: target("postgres", "db-1"),
    nodes: [db1],
    agents: { ok: false, message: "agent pod db-agent-0 (GET /status: ECONNREFUSED) not scraped" },
    want: {
      reason: "ProbeFailed",
      message: "agent pod db-agent-0 (GET /status: ECONNREFUSED) not scraped",
      address: "100.64.0.7",
    },
  },
  {
    name: "nodes unreadable and the target not in the netmap: ProbeFailed",
    target: target("postgres", "db-1"),
    nodes: failed("GET /api/v1/node", "ECONNREFUSED"),
    agents: agents([], { postgres: false }),
    want: {
      reason: "ProbeFailed",
      message: "Headscale GET /api/v1/node: ECONNREFUSED (routes cannot be checked)",
      address: "100.64.0.7",
    },
  },
  {
    name: "nodes unreadable but the netmap shows the target: granted",
    target: target("postgres", "db-1"),
    nodes: failed("GET /api/v1/node", "ECONNREFUSED"),
    agents: agents([dbPeer], { postgres: true }),
    want: { reason: "", message: "", address: "100.64.0.7" },
  },
  {
    name: "the agent's config predates the target: ProbeFailed",
    target: target("postgres", "db-1"),
    nodes: [db1],
    agents: agents([dbPeer], {}),
    want: {
      reason: "ProbeFailed",
      message: "agent pod db-agent-0 does not serve this target yet (its config predates the spec)",
      address: "100.64.0.7",
    },
  },
];

describe("evaluateTargets", () => {
  for (const r of rows) {
    it(r.name, () => {
      const nodes = Array.isArray(r.nodes) ? ok(r.nodes.map(hsNode)) : r.nodes;
      const [v] = evaluateTargets({
        targets: [r.target],
        tag: TAG,
        nodes,
        baseDomain: "ts.example.com",
        agents: r.agents,
      });
      assert.deepEqual({ reason: v.reason, message: v.message, address: v.address }, r.want);
    });
  }

  it("with two agent pods the worst answer wins (route before dial)", () => {
    const two: AgentObservation = {
      ok: true,
      agents: [
        { pod: "db-agent-0", status: statusOf([dbPeer], { postgres: true }) },
        { pod: "db-agent-1", status: statusOf([], { postgres: "dial 100.64.0.7:5432: timed out after 5s" }) },
      ],
    };
    const [v] = evaluateTargets({
      targets: [target("postgres", "db-1")],
      tag: TAG,
      nodes: ok([hsNode(db1)]),
      agents: two,
    });
    assert.equal(v.reason, "NoGrant");
    assert.deepEqual(v.dial, { state: "unreachable", error: "dial 100.64.0.7:5432: timed out after 5s" });
  });
});

describe("agentObservation", () => {
  const pod = (name: string, phase = "Running", deleting = false): K8sObject => ({
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name, ...(deleting ? { deletionTimestamp: "2026-11-29T10:00:00Z" } : {}) },
    status: { phase },
  });

  it("only running pods that are not being deleted are scraped", () => {
    assert.deepEqual(
      scrapeablePods([pod("a"), pod("b", "Pending"), pod("c", "Running", true)]).map((p) => p.metadata.name),
      ["a"],
    );
  });

  it("no pod", () => {
    assert.deepEqual(agentObservation([], []), {
      ok: false,
      message: "no running agent pod to scrape (no replica is running yet, or replicas is 0)",
    });
  });

  it("a failed scrape names the pod and the error", () => {
    const got = agentObservation(
      [pod("db-agent-1"), pod("db-agent-0")],
      [
        { ok: false, pod: "db-agent-1", error: "GET /status: ECONNREFUSED" },
        { ok: true, pod: "db-agent-0", status: agentStatus({}) },
      ],
    );
    assert.deepEqual(got, {
      ok: false,
      message:
        "agent pod db-agent-1 (GET /status: ECONNREFUSED) not scraped: the pod is down or a NetworkPolicy blocks TCP 9080 from the operator",
    });
  });

  it("an agent whose tailscaled is not running is not trusted for routes", () => {
    const got = agentObservation(
      [pod("db-agent-0")],
      [{ ok: true, pod: "db-agent-0", status: agentStatus({ ready: false }) }],
    );
    assert.deepEqual(got, {
      ok: false,
      message: "agent pod db-agent-0 reports not ready: tailscaled is not running, so its netmap cannot be read",
    });
  });

  it("a pod the kubelet reports not Ready is no endpoint, whatever its agent's last /status says", () => {
    const unready: K8sObject = {
      ...pod("db-agent-0"),
      status: { phase: "Running", conditions: [{ type: "Ready", status: "False" }] },
    };
    const readyPod: K8sObject = {
      ...pod("db-agent-1"),
      status: { phase: "Running", conditions: [{ type: "Ready", status: "True" }] },
    };
    const got = agentObservation(
      [readyPod, unready],
      [
        { ok: true, pod: "db-agent-0", status: agentStatus({}) },
        { ok: true, pod: "db-agent-1", status: agentStatus({}) },
      ],
    );
    assert.deepEqual(got, {
      ok: false,
      message:
        "agent pod db-agent-0 is not Ready (a container is down or fails its readiness probe), so the target Services have no endpoint there",
    });
    assert.ok(agentObservation([readyPod], [{ ok: true, pod: "db-agent-1", status: agentStatus({}) }]).ok);
  });

  it("all answered: sorted by pod", () => {
    const got = agentObservation(
      [pod("b"), pod("a")],
      [
        { ok: true, pod: "b", status: agentStatus({}) },
        { ok: true, pod: "a", status: agentStatus({}) },
      ],
    );
    assert.ok(got.ok);
    assert.deepEqual(
      got.agents.map((a) => a.pod),
      ["a", "b"],
    );
  });
});
