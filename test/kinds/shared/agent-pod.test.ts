import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { configFrom } from "../../../src/config.js";
import { validateAgentConfig } from "../../../src/contract/agent-config.js";
import { agentNetworkPolicy, namespacePeer } from "../../../src/kinds/shared/agent-network-policy.js";
import {
  type AgentDeploymentInputs,
  agentConfigMap,
  agentServiceAccount,
  agentStatefulSet,
  dnsLabel,
} from "../../../src/kinds/shared/agent-pod.js";
import { agentReplica } from "../../../src/kinds/shared/agent-replicas.js";
import { configHash } from "../../../src/kinds/shared/pod-template.js";
import { replicaRole, replicaRoleBinding, stateSecret } from "../../../src/kinds/shared/replica.js";
import { b64 } from "../../../src/kinds/shared/secrets.js";
import { bootTailscale } from "../../fakes/containerboot.js";
import { parentObject } from "../../fixtures/hooks.js";
import { validateChildren } from "../../helpers/validate.js";
import {
  type AgentGoldenOptions,
  expectedAgentStatefulSet,
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

/** agentStatefulSet (replica 0) against the golden, one input changed per row. */
const DEPLOYMENT_CASES: {
  name: string;
  parent: typeof egress;
  in: Partial<AgentDeploymentInputs>;
  want: Partial<AgentGoldenOptions>;
  index?: number;
}[] = [
  { name: "egress agent with a key and two listeners", parent: egress, in: {}, want: {} },
  {
    name: "no key yet: no TS_AUTHKEY, the pod waits",
    parent: egress,
    in: { authKeySecret: undefined },
    want: { authKeySecret: undefined },
  },
  { name: "replica 3: its own names and -r3 host name", parent: egress, in: {}, want: {}, index: 3 },
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

describe("agentStatefulSet", () => {
  for (const c of DEPLOYMENT_CASES) {
    it(`${c.name}: equals the golden object and is a valid StatefulSet`, () => {
      const got = agentStatefulSet(c.parent, inputs(c.in), agentReplica(c.parent, c.index ?? 0));
      assert.deepStrictEqual(got, expectedAgentStatefulSet(golden(c.want), c.index ?? 0));
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
      assert.deepEqual(
        empty(agentStatefulSet(c.parent, inputs(c.in), agentReplica(c.parent, 0)).spec, "spec"),
        [],
        c.name,
      );
    }
  });

  it("carries every input into the pod (spec-fields passthrough)", () => {
    const got = JSON.stringify(agentStatefulSet(egress, inputs(), agentReplica(egress, 0)));
    for (const needle of [
      '"value":"db-agent-0-state"',
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
    const replica = agentReplica(egress, 0);
    const deployment = agentStatefulSet(egress, inputs({ ca: true }), replica);
    // the replica's own RBAC and state Secret: containerboot checks get and update on it before anything
    const rbac = [replicaRole(replica), replicaRoleBinding(replica), stateSecret(replica)];
    // before v1.96.0 containerboot builds a kube client at boot and needs namespace and ca.crt
    for (const imageVersion of ["1.102.3", "1.90.6", "1.80.0"]) {
      const result = bootTailscale(deployment, [key, cm, ...rbac], { imageVersion, serverCa: ca });
      assert.ok(result.ok, `${imageVersion}: ${result.ok ? "" : result.error}`);
      assert.deepEqual(result.boot.requestTags, [], "Headscale >= 0.28 refuses any requested tag with a pre-auth key");
      assert.equal(result.boot.noLogsNoSupport, true);
      assert.equal(result.boot.persistentState, true);
      assert.equal(result.boot.authKey, "hskey-auth-x");
      assert.equal(result.boot.loginServer, "https://hs.example.com");
    }
    const noCa = bootTailscale(agentStatefulSet(egress, inputs(), replica), [key, cm, ...rbac], {
      serverCa: ca,
    });
    assert.equal(noCa.ok, false, "without SSL_CERT_FILE the private CA is unknown to tailscaled");
    // another replica's binding grants nothing on this replica's state Secret (resourceNames)
    const other = agentReplica(egress, 1);
    const foreign = bootTailscale(deployment, [key, cm, replicaRole(other), replicaRoleBinding(other)], {
      serverCa: ca,
    });
    assert.deepEqual(
      foreign.ok ? "booted" : foreign.error,
      [
        "boot: error setting up for running on Kubernetes: some Kubernetes permissions are missing, please check your",
        ' RBAC configuration: missing get permission on secret "db-agent-0-state"\n',
        'missing update permission on secret "db-agent-0-state"',
      ].join(""),
    );
    const spec = (deployment.spec as { template: { spec: Record<string, unknown> } }).template.spec;
    assert.equal(spec.automountServiceAccountToken, false, "the pod holds no API token");
  });

  it("the API token (for the state Secret) is mounted in the tailscale container only; the pod automounts none", () => {
    const spec = (
      agentStatefulSet(egress, inputs(), agentReplica(egress, 1)).spec as {
        template: { spec: Record<string, unknown> };
      }
    ).template.spec;
    assert.equal(spec.automountServiceAccountToken, false);
    assert.equal(spec.serviceAccountName, "db-agent-1");
    const volumes = spec.volumes as { name: string; projected?: { sources: Record<string, unknown>[] } }[];
    const withToken = volumes.filter((v) => v.projected?.sources.some((x) => "serviceAccountToken" in x));
    assert.deepEqual(
      withToken.map((v) => v.name),
      ["serviceaccount"],
    );
    const containers = spec.containers as { name: string; volumeMounts: { name: string }[] }[];
    assert.deepEqual(
      containers.filter((c) => c.volumeMounts.some((m) => m.name === "serviceaccount")).map((c) => c.name),
      ["tailscale"],
    );
  });

  it("both containers run non-root with a read-only root FS and no added capabilities", () => {
    const spec = (
      agentStatefulSet(egress, inputs(), agentReplica(egress, 0)).spec as {
        template: { spec: Record<string, unknown> };
      }
    ).template.spec;
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
});
