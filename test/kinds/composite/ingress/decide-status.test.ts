/**
 * decideIngress beyond the reasons (status fields, children, resync) and planIngress (which Headscale
 * writes a sync wants), in the decide tests' one style: named builders over the real inputs, rows
 * { name, input, expect }.
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { isDeepStrictEqual } from "node:util";
import type { HsNode } from "../../../../src/headscale/types.js";
import type { K8sObject } from "../../../../src/k8s/objects.js";
import {
  decideIngress,
  type IngressDecideInput,
  type IngressDecision,
  type IngressStatusFields,
} from "../../../../src/kinds/composite/ingress/decide.js";
import { planIngress } from "../../../../src/kinds/composite/ingress/plan.js";
import { AT, failed, hsNode, ok, policy, preAuthKey } from "../../shared/fixtures.js";
import { observedReplicas } from "../../shared/replica-fixtures.js";
import { ingress, scraped, TAG, WEB } from "./fixtures.js";
import {
  AGENT_RECORD,
  type Certificates,
  certificates,
  healthyInput,
  NO_API_KEY,
  NO_TAILNET,
  type Over,
  VALIDITY,
} from "./inputs.js";

let certs: Certificates;
before(async () => {
  certs = await certificates();
});
after(() => certs.pki.cleanup());

const input = (over: Over = {}) => healthyInput(certs.good, over);
const older = () =>
  ingress("old", { namespace: "team", created: "2026-10-01T00:00:00Z", exposes: [{ ...WEB, aliases: [] }] });
const kindNames = (children: readonly K8sObject[]) => children.map((c) => `${c.kind}/${c.metadata.name}`);

/** Two exposes, web reachable, api not. */
function twoExposes(): IngressDecideInput {
  const parent = ingress("grafana", {
    exposes: [
      { ...WEB, name: "web" },
      { name: "api", port: 8443, backend: { service: "grafana", port: 3001 }, tls: { secretName: "grafana-tls" } },
    ],
  });
  return input({
    parent,
    scrapes: [
      scraped([
        { name: "web", reachable: true },
        { name: "api", reachable: false },
      ]),
    ],
  });
}

/** The children a healthy sync returned, as Metacontroller observes them (server-owned fields added). */
function observedChildren(): K8sObject[] {
  return decideIngress(input()).children.map((c) => ({
    ...c,
    metadata: { ...c.metadata, uid: "x", annotations: { ...(c.metadata.annotations ?? {}) } },
  }));
}

/** The value at a path of plain JSON (undefined where the path leaves it). */
function at(value: unknown, ...path: (string | number)[]): unknown {
  let cur = value;
  for (const key of path) cur = cur !== null && typeof cur === "object" ? Reflect.get(cur, key) : undefined;
  return cur;
}
const deploymentOf = (d: IngressDecision) => d.children.find((c) => c.kind === "StatefulSet");
const agentContainer = (d: IngressDecision): unknown => {
  const containers = at(deploymentOf(d), "spec", "template", "spec", "containers");
  return Array.isArray(containers) ? containers.find((c) => at(c, "name") === "agent") : undefined;
};

const deployments = (children: readonly K8sObject[]) => children.filter((c) => c.kind === "StatefulSet");
const withoutStatus = ({ status: _status, ...rest }: K8sObject): K8sObject => rest;

/** The Deployment a healthy sync returned, as observed with a status. */
function runningDeployment(): K8sObject[] {
  return deployments(decideIngress(input()).children).map((d) => ({ ...d, status: { readyReplicas: 1 } }));
}

/** spec.tag set: the effective tag everywhere. */
function explicitTag(): IngressDecideInput {
  return input({
    parent: ingress("grafana", { tag: "tag:dash" }),
    policy: ok(policy({ "tag:dash": [] })),
    // its agent under the name the operator gives it (agentHostname): the explicit tag's node is no one's label
    nodes: ok([hsNode({ id: "9", name: "grafana-monitoring", tags: ["tag:dash"] })]),
  });
}

/**
 * An agent node of the ingress as a pod registers it: the tag from a reusable ephemeral key; offline ones
 * last seen an hour before AT (well past the superseded grace period).
 */
function agentNode(id: string, name: string, online: boolean): HsNode {
  return {
    ...hsNode({ id, name, tags: [TAG], online }),
    lastSeen: online ? AT.toISOString() : "2026-11-29T09:00:00Z",
    preAuthKey: { ...preAuthKey({ id: "4", aclTags: [TAG], expiration: null }), reusable: true },
  };
}

/** replicas 3: three pods' nodes (one offline), every pod reaching the backend. */
function threeReplicas(): IngressDecideInput {
  const parent = ingress("grafana", { replicas: 3 });
  const i = input({
    parent,
    nodes: ok([
      agentNode("9", "grafana", true),
      agentNode("10", "grafana-1", false),
      agentNode("11", "grafana-2", true),
    ]),
  });
  // all three replicas' SA, Role, RoleBinding and state Secret observed: their StatefulSets are answered
  return { ...i, replicas: { ...i.replicas, identity: observedReplicas(parent, 3).identity } };
}

interface DecisionRow {
  name: string;
  input: () => IngressDecideInput;
  expect: {
    fields?: IngressStatusFields;
    exposes?: IngressDecision["exposes"];
    children?: string[];
    /** Seconds, or "none" for no resync. */
    resync?: number | "none";
    ready?: string;
    /** Further facts of the decision, each with what it checks. */
    holds?: { what: string; check: (d: IngressDecision, input: IngressDecideInput) => boolean }[];
  };
}

/** Replica i's identity children (issue 32), in creation order, and its StatefulSet. */
const replica = (i: number, sts = true) => [
  `ServiceAccount/grafana-agent-${i}`,
  `Role/grafana-agent-${i}`,
  `RoleBinding/grafana-agent-${i}`,
  `Secret/grafana-agent-${i}-state`,
  ...(sts ? [`StatefulSet/grafana-agent-${i}`] : []),
];

const AGENT_CHILDREN = [
  "ConfigMap/grafana-agent",
  ...replica(0),
  "NetworkPolicy/grafana-agent",
  "Secret/grafana-authkey",
];

const decisionRows: DecisionRow[] = [
  {
    name: "publishes the tag, the ingress-level name and each expose's names and reachability, sorted",
    input: twoExposes,
    expect: {
      fields: {
        tag: TAG,
        dnsName: "grafana.ts.example.com",
        exposes: [
          { name: "api", dnsName: "grafana.ts.example.com", dnsAliases: [], reachable: false },
          { name: "web", dnsName: "dash.ts.example.com", dnsAliases: ["grafana-eu.ts.example.com"], reachable: true },
        ],
        nodes: [AGENT_RECORD],
        preAuthKeyIds: ["4"],
      },
      exposes: [
        { name: "web", reachable: true },
        { name: "api", reachable: false },
      ],
    },
  },
  {
    name: "does not publish names in conflict; reachability unknown is left out",
    input: () => {
      const parent = ingress();
      return input({ parent, ingresses: [older(), parent], scrapes: [] });
    },
    expect: {
      fields: {
        tag: TAG,
        dnsName: "grafana.ts.example.com",
        exposes: [{ name: "web", dnsAliases: ["grafana-eu.ts.example.com"] }],
        nodes: [AGENT_RECORD],
        preAuthKeyIds: ["4"],
      },
    },
  },
  {
    name: "publishes no name of an ingress with an invalid one",
    input: () => {
      const parent = ingress("grafana", { exposes: [{ ...WEB, aliases: ["Nope"] }] });
      return input({ parent, ingresses: [parent] });
    },
    expect: {
      fields: {
        tag: TAG,
        exposes: [{ name: "web", dnsAliases: [], reachable: true }],
        nodes: [AGENT_RECORD],
        preAuthKeyIds: ["4"],
      },
    },
  },
  {
    name: "returns the agent children with the key Secret",
    input: () => input(),
    expect: { children: AGENT_CHILDREN },
  },
  {
    name: "without a Tailnet, returns the observed children unchanged, server-owned fields stripped",
    input: () => input({ ...NO_TAILNET, children: observedChildren() }),
    expect: {
      children: AGENT_CHILDREN,
      holds: [{ what: "no uid", check: (d) => d.children.every((c) => c.metadata.uid === undefined) }],
    },
  },
  {
    name: "no pre-auth key: no StatefulSet (never a tailscale container without its key)",
    input: () => input({ authKey: { error: "Headscale POST /api/v1/preauthkey: 500" } }),
    expect: { children: ["ConfigMap/grafana-agent", ...replica(0, false), "NetworkPolicy/grafana-agent"] },
  },
  {
    name: "no pre-auth key: a running StatefulSet comes back as it is",
    input: () => {
      const running = runningDeployment();
      const i = input({ children: running, authKey: { error: "down" } });
      for (const s of running) i.replicas.statefulSets.set(0, s);
      return i;
    },
    expect: {
      holds: [
        {
          what: "the observed StatefulSet, unchanged (its status is the server's)",
          check: (d, i) => isDeepStrictEqual(deployments(d.children), deployments(i.children).map(withoutStatus)),
        },
      ],
    },
  },
  {
    name: "replicas 3: a StatefulSet per replica, a PodDisruptionBudget (maxUnavailable 1) across them",
    input: threeReplicas,
    expect: {
      children: [
        "ConfigMap/grafana-agent",
        ...replica(0),
        ...replica(1),
        ...replica(2),
        "NetworkPolicy/grafana-agent",
        "PodDisruptionBudget/grafana-agent",
        "Secret/grafana-authkey",
      ],
      ready: "Ready",
      holds: [
        { what: "3 replicas", check: (d) => deployments(d.children).length === 3 },
        {
          what: "the budget selects the agent pods, one at a time",
          check: (d) => {
            const pdb = d.children.find((c) => c.kind === "PodDisruptionBudget");
            const wanted = Object.entries(at(pdb, "spec", "selector", "matchLabels") as Record<string, string>);
            // every replica's pods carry the budget's labels (the replica label is the StatefulSet's own)
            return (
              deployments(d.children).every((s) => {
                const labels = at(s, "spec", "template", "metadata", "labels") as Record<string, string>;
                return wanted.every(([k, v]) => labels[k] === v);
              }) && at(pdb, "spec", "maxUnavailable") === 1
            );
          },
        },
        {
          what: "status.nodes: which node each bound replica is (replica 0's state Secret names node 9)",
          check: (d) => isDeepStrictEqual(d.fields.nodes, [AGENT_RECORD]),
        },
      ],
    },
  },
  {
    name: "every agent container's readiness asks /readyz (serving), liveness stays /healthz",
    input: () => input(),
    expect: {
      holds: [
        {
          what: "readiness /readyz, liveness /healthz",
          check: (d) => {
            const agent = agentContainer(d);
            return (
              at(agent, "readinessProbe", "httpGet", "path") === "/readyz" &&
              at(agent, "livenessProbe", "httpGet", "path") === "/healthz"
            );
          },
        },
      ],
    },
  },
  {
    name: "one replica: no PodDisruptionBudget (it would block every drain)",
    input: () => input(),
    expect: { holds: [{ what: "no budget", check: (d) => !d.children.some((c) => c.kind === "PodDisruptionBudget") }] },
  },
  {
    name: "resyncs after 30 s while waiting on the node",
    input: () => input({ nodes: ok([]) }),
    expect: { resync: 30 },
  },
  {
    name: "healthy: resyncs at the key's half-life (18:00, 8 h after AT), before the certificate expires",
    input: () => input(),
    expect: { resync: 8 * 3600 },
  },
  {
    name: "without a key: resyncs when the certificate expires",
    input: () => input({ authKey: {} }),
    expect: { resync: Math.ceil((VALIDITY.notAfter.getTime() - AT.getTime()) / 1000) },
  },
  {
    name: "a missing Tailnet is not polled",
    input: () => input(NO_TAILNET),
    expect: { resync: "none" },
  },
  {
    name: "uses spec.tag as the effective tag and names it everywhere; no --advertise-tags",
    input: explicitTag,
    expect: {
      ready: "Ready",
      holds: [
        { what: "status.tag", check: (d) => d.fields.tag === "tag:dash" },
        {
          // the key's aclTags tag the node; Headscale >= 0.28 refuses a requested tag with a pre-auth key
          what: "no --advertise-tags",
          check: (d) => !/--advertise-tags/.test(JSON.stringify(d.children.find((c) => c.kind === "Deployment"))),
        },
      ],
    },
  },
];

describe("decideIngress: status, children, resync", () => {
  for (const row of decisionRows) {
    it(row.name, () => {
      const i = row.input();
      const d = decideIngress(i);
      const e = row.expect;
      if (e.fields) assert.deepEqual(d.fields, e.fields);
      if (e.exposes) assert.deepEqual(d.exposes, e.exposes);
      if (e.children) assert.deepEqual(kindNames(d.children), e.children);
      if (e.resync !== undefined) assert.equal(d.resyncAfterSeconds, e.resync === "none" ? undefined : e.resync);
      if (e.ready) assert.equal(d.conditions.find((c) => c.type === "Ready")?.reason, e.ready);
      for (const h of e.holds ?? []) assert.ok(h.check(d, i), h.what);
    });
  }
});

interface PlanRow {
  name: string;
  input: () => IngressDecideInput;
  expect: { write: boolean; authKey: "reuse" | "create"; superseded?: string[] };
}

const planRows: PlanRow[] = [
  {
    name: "a first key: created, Headscale may be written",
    input: () => input({ authKey: {} }),
    expect: { write: true, authKey: "create", superseded: [] },
  },
  {
    name: "the node list failed: nothing is written",
    input: () => input({ nodes: failed("GET /api/v1/node", "timeout") }),
    expect: { write: false, authKey: "create" },
  },
  {
    name: "the policy read failed: nothing is written",
    input: () => input({ policy: failed("GET /api/v1/policy", "timeout") }),
    expect: { write: false, authKey: "create" },
  },
  {
    name: "no credentials: nothing is written",
    input: () => input(NO_API_KEY),
    expect: { write: false, authKey: "create", superseded: [] },
  },
  {
    name: "replicas 3: a node of ours bound to no replica, offline past the grace period, is deleted (issue 32)",
    input: () =>
      input({
        parent: { ...ingress("grafana", { replicas: 3 }), status: { preAuthKeyIds: ["4"] } },
        nodes: ok([
          agentNode("9", "grafana", true),
          agentNode("10", "grafana-1", false),
          agentNode("11", "grafana-2", true),
          agentNode("12", "grafana-3", true),
        ]),
      }),
    expect: { write: true, authKey: "create", superseded: ["10"] },
  },
  {
    name: "the same offline node registered with a key the ingress did not mint (an admin's): never superseded",
    input: () =>
      input({
        parent: { ...ingress("grafana", { replicas: 3 }), status: { preAuthKeyIds: ["5"] } },
        nodes: ok([
          agentNode("9", "grafana", true),
          agentNode("10", "grafana-1", false),
          agentNode("11", "grafana-2", true),
          agentNode("12", "grafana-3", true),
        ]),
      }),
    expect: { write: true, authKey: "create", superseded: [] },
  },
  {
    name: "an ingress that recorded no key: no node is its own, none deleted",
    input: threeReplicas,
    expect: { write: true, authKey: "create", superseded: [] },
  },
  {
    name: "a valid key Secret among the children is reused",
    input: () => input({ children: observedChildren() }),
    expect: { write: true, authKey: "reuse" },
  },
];

describe("planIngress: the writes a sync wants", () => {
  for (const row of planRows) {
    it(row.name, () => {
      const i = row.input();
      const plan = planIngress(i.spec, i);
      assert.equal(plan.write, row.expect.write);
      assert.equal(plan.authKey.action, row.expect.authKey);
      if (row.expect.superseded) {
        assert.deepEqual(
          (plan.replicas?.deletes ?? []).map((n) => n.id),
          row.expect.superseded,
        );
      }
    });
  }
});
