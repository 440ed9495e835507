import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { configFrom } from "../../../src/config.js";
import { validateAgentConfig } from "../../../src/contract/agent-config.js";
import type { HsPreAuthKey } from "../../../src/headscale/types.js";
import { registrationFact, tagFact } from "../../../src/kinds/shared/agent-conditions.js";
import { agentNetworkPolicy, namespacePeer } from "../../../src/kinds/shared/agent-network-policy.js";
import {
  type AgentDeploymentInputs,
  agentConfigMap,
  agentDeployment,
  agentServiceAccount,
  dnsLabel,
} from "../../../src/kinds/shared/agent-pod.js";
import { listNames, nodesWithTag } from "../../../src/kinds/shared/node-names.js";
import { configHash } from "../../../src/kinds/shared/pod-template.js";
import { b64 } from "../../../src/kinds/shared/secrets.js";
import { supersededNodes } from "../../../src/kinds/shared/superseded.js";
import { bootTailscale } from "../../fakes/containerboot.js";
import { parentObject } from "../../fixtures/hooks.js";
import { validateChildren } from "../../helpers/validate.js";
import { failed, hsNode, ok, policy, preAuthKey } from "./fixtures.js";
import {
  type AgentGoldenOptions,
  expectedAgentDeployment,
  expectedConfigMap,
  expectedNetworkPolicy,
  expectedServiceAccount,
} from "./golden.js";

const config = configFrom({
  operatorNamespace: "tailnet-ops",
  images: { agent: "registry.example/tailnet-operator:9.9.9", tailscale: "tailscale/tailscale:v1.2.3" },
  monitoring: {
    podMonitor: {
      scrapeFrom: [
        {
          namespaceSelector: { matchLabels: { "kubernetes.io/metadata.name": "monitoring" } },
          podSelector: { matchLabels: { "app.kubernetes.io/name": "prometheus" } },
        },
      ],
    },
  },
});

const egress = parentObject(
  "TailnetEgress",
  "db",
  { tailnetRef: { name: "home" }, targets: [] },
  { namespace: "shop", uid: "11111111-2222-4333-8444-555555555555" },
);
const ingress = parentObject(
  "TailnetIngress",
  "web",
  { tailnetRef: { name: "home" }, hostname: "web", exposes: [] },
  { namespace: "front", uid: "99999999-2222-4333-8444-555555555555" },
);

function inputs(over: Partial<AgentDeploymentInputs> = {}): AgentDeploymentInputs {
  return {
    replicas: 2,
    tag: "tag:k8s-shop-db",
    loginServer: "https://hs.example.com",
    authKeySecret: "db-authkey-7",
    hostname: "shop-db",
    images: config.images,
    listenPorts: [10000, 10001],
    configHash: "0123456789abcdef",
    noLogsNoSupport: true,
    socks: true,
    ...over,
  };
}

function golden(over: Partial<AgentGoldenOptions> = {}): AgentGoldenOptions {
  return {
    kind: "TailnetEgress",
    name: "db",
    namespace: "shop",
    uid: "11111111-2222-4333-8444-555555555555",
    replicas: 2,
    tag: "tag:k8s-shop-db",
    loginServer: "https://hs.example.com",
    authKeySecret: "db-authkey-7",
    hostname: "shop-db",
    images: { agent: "registry.example/tailnet-operator:9.9.9", tailscale: "tailscale/tailscale:v1.2.3" },
    listenPorts: [10000, 10001],
    configHash: "0123456789abcdef",
    socks: true,
    ...over,
  };
}

/** agentDeployment against the golden, one input changed per row. */
const DEPLOYMENT_CASES: {
  name: string;
  parent: typeof egress;
  in: Partial<AgentDeploymentInputs>;
  want: Partial<AgentGoldenOptions>;
}[] = [
  { name: "egress agent with a key and two listeners", parent: egress, in: {}, want: {} },
  {
    name: "no key yet: no TS_AUTHKEY, the pod waits",
    parent: egress,
    in: { authKeySecret: undefined },
    want: { authKeySecret: undefined },
  },
  { name: "one replica", parent: egress, in: { replicas: 1 }, want: { replicas: 1 } },
  {
    name: "a private Headscale CA: SSL_CERT_FILE on the ConfigMap's ca.crt",
    parent: egress,
    in: { ca: true },
    want: { ca: true },
  },
  {
    name: "noLogsNoSupport switched off: no TS_NO_LOGS_NO_SUPPORT",
    parent: egress,
    in: { noLogsNoSupport: false },
    want: { noLogsNoSupport: false },
  },
  {
    name: "ingress agent with serve config and TLS Secrets",
    parent: ingress,
    in: {
      listenPorts: [],
      serveConfig: true,
      tlsSecrets: ["web-tls", "api.example.com-tls"],
      hostname: "web",
      socks: false,
    },
    want: {
      socks: false,
      kind: "TailnetIngress",
      name: "web",
      namespace: "front",
      uid: "99999999-2222-4333-8444-555555555555",
      listenPorts: [],
      serveConfig: true,
      tlsSecrets: ["web-tls", "api.example.com-tls"],
      hostname: "web",
    },
  },
];

describe("agentDeployment", () => {
  for (const c of DEPLOYMENT_CASES) {
    it(`${c.name}: equals the golden object and is a valid Deployment`, () => {
      const got = agentDeployment(c.parent, inputs(c.in));
      assert.deepStrictEqual(got, expectedAgentDeployment(golden(c.want)));
      validateChildren([got]);
    });
  }

  it("no empty string in the spec: the API server drops omitempty strings, so dynamic-apply would update the Deployment on every sync", () => {
    // Found by test/real/kube/loop.test.ts: `value: ""` (TS_KUBE_SECRET) is stored without `value`,
    // and the 3-way merge put it back each time, a PUT per sync.
    const empty = (v: unknown, path: string): string[] =>
      v === ""
        ? [path]
        : v && typeof v === "object"
          ? Object.entries(v).flatMap(([k, x]) => empty(x, `${path}.${k}`))
          : [];
    for (const c of DEPLOYMENT_CASES) {
      assert.deepEqual(empty(agentDeployment(c.parent, inputs(c.in)).spec, "spec"), [], c.name);
    }
  });

  it("carries every input into the pod (spec-fields passthrough)", () => {
    const got = JSON.stringify(agentDeployment(egress, inputs()));
    for (const needle of [
      '"replicas":2',
      "--login-server=https://hs.example.com",
      '"name":"db-authkey-7"',
      '"value":"shop-db"',
      "registry.example/tailnet-operator:9.9.9",
      "tailscale/tailscale:v1.2.3",
      '"containerPort":10001',
      '"tailnet.internal/config-hash":"0123456789abcdef"',
    ]) {
      assert.ok(got.includes(needle), needle);
    }
  });

  it("boots under containerboot on the pinned and on older images: no requested tags, no logs, state kept", () => {
    const key = {
      apiVersion: "v1",
      kind: "Secret",
      metadata: { name: "db-authkey-7", namespace: "shop" },
      data: { authkey: b64("hskey-auth-x") },
    };
    const ca = "-----BEGIN CERTIFICATE-----\nPRIVATE CA\n-----END CERTIFICATE-----\n";
    const cm = agentConfigMap(egress, { role: "egress", metricsPort: 9080 }, undefined, ca);
    const deployment = agentDeployment(egress, inputs({ ca: true }));
    // before v1.96.0 containerboot builds a kube client at boot and needs namespace and ca.crt
    for (const imageVersion of ["1.102.3", "1.90.6", "1.80.0"]) {
      const result = bootTailscale(deployment, [key, cm], { imageVersion, serverCa: ca });
      assert.ok(result.ok, `${imageVersion}: ${result.ok ? "" : result.error}`);
      assert.deepEqual(result.boot.requestTags, [], "Headscale >= 0.28 refuses any requested tag with a pre-auth key");
      assert.equal(result.boot.noLogsNoSupport, true);
      assert.equal(result.boot.persistentState, true);
      assert.equal(result.boot.authKey, "hskey-auth-x");
      assert.equal(result.boot.loginServer, "https://hs.example.com");
    }
    const noCa = bootTailscale(agentDeployment(egress, inputs()), [key, cm], { serverCa: ca });
    assert.equal(noCa.ok, false, "without SSL_CERT_FILE the private CA is unknown to tailscaled");
    const spec = (deployment.spec as { template: { spec: Record<string, unknown> } }).template.spec;
    assert.equal(spec.automountServiceAccountToken, false, "the pod holds no API token");
  });

  it("both containers run non-root with a read-only root FS and no added capabilities", () => {
    const spec = (agentDeployment(egress, inputs()).spec as { template: { spec: Record<string, unknown> } }).template
      .spec;
    const containers = spec.containers as { name: string; securityContext: Record<string, unknown> }[];
    assert.deepEqual(
      containers.map((c) => c.name),
      ["tailscale", "agent"],
    );
    for (const c of containers) {
      assert.equal(c.securityContext.runAsNonRoot, true);
      assert.equal(c.securityContext.readOnlyRootFilesystem, true);
      assert.deepEqual(c.securityContext.capabilities, { drop: ["ALL"] });
    }
  });
});

describe("the other agent children", () => {
  it("ServiceAccount without a token, ConfigMap with the agent config, both golden", () => {
    const agentConfig = {
      role: "egress" as const,
      metricsPort: 9080,
      targets: [{ name: "pg", host: "db-1", ports: [{ port: 5432, listenPort: 10000 }] }],
    };
    const sa = agentServiceAccount(egress);
    const cm = agentConfigMap(egress, agentConfig);
    assert.deepStrictEqual(sa, expectedServiceAccount(golden()));
    assert.deepStrictEqual(cm, expectedConfigMap(golden(), agentConfig));
    validateChildren([sa, cm]);
    // what the pod mounts is what the agent accepts
    validateAgentConfig(JSON.parse((cm.data as Record<string, string>)["config.json"]));
  });

  it("ConfigMap with a serve config for ingress", () => {
    const serve = { TCP: { "443": { HTTPS: true } } };
    const cm = agentConfigMap(ingress, { role: "ingress", metricsPort: 9080 }, serve);
    assert.deepStrictEqual(
      cm,
      expectedConfigMap(
        golden({ kind: "TailnetIngress", name: "web", namespace: "front", uid: ingress.metadata.uid }),
        { role: "ingress", metricsPort: 9080 },
        serve,
      ),
    );
  });

  it("NetworkPolicy: data ports from the given peers, TCP 9080 from the operator namespace plus scrapeFrom", () => {
    const np = agentNetworkPolicy(egress, config, { ports: [10000, 10001], from: [namespacePeer("shop")] });
    assert.deepStrictEqual(
      np,
      expectedNetworkPolicy(golden(), {
        operatorNamespace: "tailnet-ops",
        scrapeFrom: config.monitoring.podMonitor.scrapeFrom,
        dataPorts: [10000, 10001],
        dataFrom: [{ namespaceSelector: { matchLabels: { "kubernetes.io/metadata.name": "shop" } } }],
      }),
    );
    validateChildren([np]);
  });

  it("NetworkPolicy without data ports (ingress listens on loopback): only TCP 9080", () => {
    const np = agentNetworkPolicy(egress, configFrom({}), undefined);
    assert.deepStrictEqual(np, expectedNetworkPolicy(golden(), { operatorNamespace: "tailnet-system" }));
  });
});

describe("helpers", () => {
  it("configHash is stable and changes with its input", () => {
    assert.equal(configHash({ a: 1 }), configHash({ a: 1 }));
    assert.notEqual(configHash({ a: 1 }), configHash({ a: 2 }));
    assert.match(configHash("x"), /^[0-9a-f]{16}$/);
  });

  const labels: [string, string][] = [
    ["shop-db", "shop-db"],
    ["Shop_DB.prod", "shop-db-prod"],
    ["--x--", "x"],
    [`a${"b".repeat(70)}`, `a${"b".repeat(62)}`],
    [`${"a".repeat(62)}--b`, "a".repeat(62)],
    ["___", "agent"],
  ];
  for (const [input, want] of labels) {
    it(`dnsLabel(${JSON.stringify(input.slice(0, 12))}…) = ${want.slice(0, 12)}…`, () => {
      assert.equal(dnsLabel(input), want);
    });
  }

  it("listNames caps long lists", () => {
    assert.equal(listNames(["a", "b"]), "a, b");
    assert.equal(listNames(["a", "b", "c", "d", "e", "f", "g"]), "a, b, c, d, e and 2 more");
  });

  it("nodesWithTag includes multi-tag nodes", () => {
    const nodes = [
      hsNode({ id: "1", name: "b", tags: ["tag:x"] }),
      hsNode({ id: "2", name: "a", tags: ["tag:x", "tag:y"] }),
      hsNode({ id: "3", name: "c", tags: ["tag:y"] }),
    ];
    assert.deepEqual(
      nodesWithTag(nodes, "tag:x").map((n) => n.name),
      ["a", "b"],
    );
  });
});

describe("tagFact", () => {
  const tag = "tag:k8s-shop-db";
  const rows = [
    {
      name: "tag in tagOwners",
      policy: ok(policy({ [tag]: [] })),
      want: ["known", "tag:k8s-shop-db is in the live policy's tagOwners"],
    },
    {
      name: "tag missing from tagOwners",
      policy: ok(policy({ "tag:other": [] })),
      want: [
        "pending",
        "tag:k8s-shop-db is not in the live policy's tagOwners yet (the Tailnet adds it when it applies the policy; in DryRun it is never written)",
      ],
    },
    {
      name: "no policy stored yet",
      policy: ok(null),
      want: ["pending", "no policy is stored in Headscale yet, so tag:k8s-shop-db is not in tagOwners"],
    },
    {
      name: "policy unreadable",
      policy: failed<null>("GET /api/v1/policy", "fault injected: 500", { status: 500 }),
      want: ["unreadable", "the live policy could not be read: Headscale GET /api/v1/policy: 500 fault injected: 500"],
    },
    {
      name: "policy not HuJSON",
      policy: ok({ policy: "{ nope", updatedAt: null }),
      want: ["unreadable", "the live policy could not be parsed: line 1:3: invalid symbol"],
    },
  ];
  for (const r of rows) {
    it(r.name, () => {
      const f = tagFact(r.policy, tag);
      assert.deepEqual([f.state, f.message], r.want);
    });
  }
});

describe("registrationFact", () => {
  const tag = "tag:k8s-shop-db";
  it("one node", () => {
    const c = registrationFact(ok([hsNode({ id: "4", name: "shop-db", tags: [tag] })]), tag);
    assert.deepEqual([c.state, c.message], ["registered", "1 node carries tag:k8s-shop-db: shop-db"]);
  });
  it("two nodes, sorted", () => {
    const c = registrationFact(
      ok([hsNode({ id: "5", name: "shop-db-1", tags: [tag] }), hsNode({ id: "4", name: "shop-db", tags: [tag] })]),
      tag,
    );
    assert.equal(c.message, "2 nodes carry tag:k8s-shop-db: shop-db, shop-db-1");
  });
  it("none, with the key note", () => {
    const c = registrationFact(
      ok([hsNode({ id: "4", name: "x", tags: ["tag:other"] })]),
      tag,
      "no pre-auth key yet: boom",
    );
    assert.deepEqual(
      [c.state, c.message],
      ["absent", "no Headscale node carries tag:k8s-shop-db yet; no pre-auth key yet: boom"],
    );
  });
  it("nodes unreadable", () => {
    const c = registrationFact(failed("GET /api/v1/node", "ECONNREFUSED", { classification: "refused" }), tag);
    assert.deepEqual(
      [c.state, c.message],
      ["unreadable", "Headscale nodes could not be listed: Headscale GET /api/v1/node: ECONNREFUSED"],
    );
  });
});

describe("supersededNodes", () => {
  const TAG = "tag:k8s-monitoring-grafana";
  const NOW = new Date("2026-11-29T10:00:00Z");
  const agentKey = { ...preAuthKey({ id: "5", aclTags: [TAG], expiration: null }), reusable: true, ephemeral: true };
  const node = (
    id: string,
    o: { online?: boolean; lastSeen?: string | null; tags?: string[]; key?: HsPreAuthKey | null } = {},
  ) => ({
    ...hsNode({ id, name: id === "1" ? "grafana" : `grafana-${id}`, tags: o.tags ?? [TAG], online: o.online ?? true }),
    lastSeen: o.lastSeen === undefined ? "2026-11-29T09:50:00Z" : o.lastSeen,
    preAuthKey: o.key === undefined ? agentKey : o.key,
  });
  const cases: { name: string; nodes: ReturnType<typeof node>[]; replicas: number; want: string[] }[] = [
    {
      name: "a restarted pod: the old node offline, the new one online",
      nodes: [node("1", { online: false }), node("2")],
      replicas: 1,
      want: ["1"],
    },
    {
      name: "only the offline node: the pod may come back, nothing removed",
      nodes: [node("1", { online: false })],
      replicas: 1,
      want: [],
    },
    {
      name: "offline for less than the grace period: kept",
      nodes: [node("1", { online: false, lastSeen: "2026-11-29T09:59:30Z" }), node("2")],
      replicas: 1,
      want: [],
    },
    {
      name: "never seen: superseded",
      nodes: [node("1", { online: false, lastSeen: null }), node("2")],
      replicas: 1,
      want: ["1"],
    },
    {
      name: "replicas 2, two online and one offline: the offline one",
      nodes: [node("1"), node("2", { online: false }), node("3")],
      replicas: 2,
      want: ["2"],
    },
    {
      name: "replicas 2, one online: nothing (a pod is on its way back)",
      nodes: [node("1"), node("2", { online: false })],
      replicas: 2,
      want: [],
    },
    {
      name: "a rollout surge (two online for one replica): online nodes are never removed",
      nodes: [node("1"), node("2")],
      replicas: 1,
      want: [],
    },
    {
      name: "scaled to zero: every offline node of ours",
      nodes: [node("1", { online: false }), node("2", { online: false })],
      replicas: 0,
      want: ["1", "2"],
    },
    {
      name: "another tag as well: not ours alone",
      nodes: [node("1", { online: false, tags: [TAG, "tag:other"] }), node("2")],
      replicas: 1,
      want: [],
    },
    {
      name: "an admin's agent-shaped node with our tag, registered with a key we did not mint: never ours",
      nodes: [node("1", { online: false, key: { ...agentKey, id: "99" } }), node("2", { online: false }), node("3")],
      replicas: 1,
      want: ["2"],
    },
    {
      name: "registered without a key (CLI): not an agent node",
      nodes: [node("1", { online: false, key: null }), node("2")],
      replicas: 1,
      want: [],
    },
    {
      name: "a single-use, non-ephemeral key (not the agent shape): not ours",
      nodes: [node("1", { online: false, key: { ...agentKey, reusable: false, ephemeral: false } }), node("2")],
      replicas: 1,
      want: [],
    },
  ];
  for (const c of cases) {
    it(c.name, () => {
      assert.deepEqual(
        supersededNodes(c.nodes, TAG, new Set(["5"]), c.replicas, NOW).map((n) => n.id),
        c.want,
      );
    });
  }
});
