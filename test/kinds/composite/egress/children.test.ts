import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { configFrom } from "../../../../src/config.js";
import { validateAgentConfig } from "../../../../src/contract/agent-config.js";
import type { K8sObject } from "../../../../src/k8s/objects.js";
import {
  type EgressChildrenInputs,
  egressAgentConfig,
  egressChildren,
  egressHostname,
} from "../../../../src/kinds/composite/egress/children.js";
import { readEgressSpec } from "../../../../src/kinds/composite/egress/spec.js";
import { parentObject } from "../../../fixtures/hooks.js";
import { validateChildren } from "../../../helpers/validate.js";
import { observedReplicas } from "../../shared/replica-fixtures.js";
import { egressParent, keySecret, UID } from "./fixtures.js";
import { type EgressGoldenOptions, expectedAgentConfig, expectedEgressChildren } from "./golden.js";

const scrapeFrom = [{ namespaceSelector: { matchLabels: { "kubernetes.io/metadata.name": "monitoring" } } }];
const config = configFrom({
  operatorNamespace: "ops",
  images: { agent: "registry.example/op:2.0.0", tailscale: "tailscale/tailscale:v1.90.6" },
  monitoring: { podMonitor: { scrapeFrom } },
});

interface Options {
  spec?: Record<string, unknown>;
  key?: boolean;
  conflicting?: string[];
  tag?: string;
  ca?: string;
  /** Running StatefulSets, by replica (kept as observed while no key exists). */
  observedStatefulSets?: K8sObject[];
  /** The replicas' SA/Role/RoleBinding/state Secret are not observed yet. */
  noIdentity?: boolean;
}

function build(o: Options = {}) {
  const parent = egressParent(o.spec);
  const inputs: EgressChildrenInputs = {
    config,
    spec: readEgressSpec(parent),
    tag: o.tag ?? "tag:k8s-shop-db",
    loginServer: "https://hs.example.com",
    authKeySecret: o.key === false ? undefined : keySecret(parent),
    conflicting: new Set(o.conflicting ?? []),
    ca: o.ca,
    replicas: observedReplicas(parent, readEgressSpec(parent).replicas, {
      identity: !o.noIdentity,
      ...(o.observedStatefulSets ? { statefulSets: o.observedStatefulSets } : {}),
    }),
    released: new Set(),
    migrated: true,
  };
  return { parent, children: egressChildren(parent, inputs) };
}

function golden(o: Options = {}): EgressGoldenOptions {
  const spec = o.spec ?? {};
  const targets = (spec.targets as { name: string; host: string; ports: { port: number }[] }[] | undefined) ?? [
    { name: "postgres", host: "db-1", ports: [{ port: 5432 }] },
    { name: "printer", host: "192.168.1.10", ports: [{ port: 9100 }, { port: 631 }] },
  ];
  return {
    name: "db",
    namespace: "shop",
    uid: UID,
    replicas: typeof spec.replicas === "number" ? spec.replicas : 1,
    tag: o.tag ?? "tag:k8s-shop-db",
    loginServer: "https://hs.example.com",
    hostname: "shop-db",
    images: { agent: "registry.example/op:2.0.0", tailscale: "tailscale/tailscale:v1.90.6" },
    operatorNamespace: "ops",
    scrapeFrom,
    targets: targets.map((t) => ({ name: t.name, host: t.host, ports: t.ports.map((p) => p.port) })),
    authKeySecret: o.key === false ? undefined : keySecret(egressParent(o.spec)),
    conflicting: o.conflicting,
    ca: o.ca,
    ...(o.observedStatefulSets ? { observedStatefulSets: o.observedStatefulSets } : {}),
    identityObserved: !o.noIdentity,
  };
}

const PRIVATE_CA = "-----BEGIN CERTIFICATE-----\nPRIVATE CA\n-----END CERTIFICATE-----\n";
/** A StatefulSet as the API server holds it (with a status): returned unchanged when no key exists. */
const RUNNING: K8sObject = {
  ...(build().children.find((c) => c.kind === "StatefulSet") as K8sObject),
  status: { readyReplicas: 1 },
};

describe("egress children", () => {
  const cases: { name: string; o: Options }[] = [
    { name: "two targets, three ports, a key", o: {} },
    { name: "three replicas", o: { spec: { replicas: 3 } } },
    { name: "no key yet: no Secret, no StatefulSet (never a tailscale container without its key)", o: { key: false } },
    {
      name: "no key now but a running StatefulSet: it is kept as observed",
      o: { key: false, observedStatefulSets: [RUNNING] },
    },
    {
      name: "first sync: SA, Role, RoleBinding and state Secret first, no StatefulSet until they are observed",
      o: { spec: { replicas: 2 }, noIdentity: true },
    },
    { name: "a private Headscale CA: ca.crt in the ConfigMap, SSL_CERT_FILE", o: { ca: PRIVATE_CA } },
    { name: "a foreign Service holds postgres: no Service for it", o: { conflicting: ["postgres"] } },
    { name: "an explicit tag", o: { spec: { tag: "tag:db-egress" }, tag: "tag:db-egress" } },
    {
      name: "one target with two ports",
      o: { spec: { targets: [{ name: "redis", host: "100.64.0.20", ports: [{ port: 6379 }, { port: 26379 }] }] } },
    },
  ];
  for (const c of cases) {
    it(`${c.name}: golden and valid`, () => {
      const { children } = build(c.o);
      assert.deepStrictEqual(children, expectedEgressChildren(golden(c.o)));
      validateChildren(children);
    });
  }

  it("every user field is found in a child (spec-fields passthrough)", () => {
    const spec = {
      replicas: 4,
      tag: "tag:passthrough",
      targets: [
        { name: "alpha", host: "alpha-host.ts.example.com", ports: [{ port: 1111 }, { port: 2222, protocol: "TCP" }] },
        { name: "beta", host: "10.20.30.40", ports: [{ port: 3333 }] },
      ],
    };
    const text = JSON.stringify(build({ spec, tag: "tag:passthrough" }).children);
    for (const needle of [
      '"name":"db-agent-3"',
      '"name":"alpha"',
      '"name":"beta"',
      "alpha-host.ts.example.com",
      "10.20.30.40",
      '"port":1111',
      '"port":2222',
      '"port":3333',
    ]) {
      assert.ok(text.includes(needle), needle);
    }
  });

  it("each Service port maps to the listen port the agent config gives that target port", () => {
    const { children } = build();
    const cm = children.find((c) => c.kind === "ConfigMap");
    assert.ok(cm);
    const agentConfig = validateAgentConfig(JSON.parse((cm.data as Record<string, string>)["config.json"]));
    for (const target of agentConfig.targets) {
      const svc = children.find((c) => c.kind === "Service" && c.metadata.name === target.name);
      assert.ok(svc, target.name);
      const ports = (svc.spec as { ports: { port: number; targetPort: number }[] }).ports;
      assert.deepEqual(
        ports.map((p) => [p.port, p.targetPort]),
        target.ports.map((p) => [p.port, p.listenPort]),
      );
    }
    assert.deepEqual(agentConfig.tailscale, {
      socksAddr: "127.0.0.2:1055",
      localApiSocket: "/var/run/tailscale/tailscaled.sock",
    });
  });

  it("a change of a target rolls the pods (config hash); a new key Secret changes the env only", () => {
    const hash = (children: { kind: string; spec?: unknown }[]) => {
      const deployment = children.find((c) => c.kind === "StatefulSet");
      assert.ok(deployment);
      const spec = deployment.spec as { template: { metadata: { annotations: Record<string, string> } } };
      return spec.template.metadata.annotations["tailnet.internal/config-hash"];
    };
    const base = build().children;
    const moved = build({
      spec: { targets: [{ name: "postgres", host: "db-2", ports: [{ port: 5432 }] }] },
    }).children;
    assert.notEqual(hash(moved), hash(base));
    const parent = egressParent();
    const rotated = egressChildren(parent, {
      config,
      spec: readEgressSpec(parent),
      tag: "tag:k8s-shop-db",
      loginServer: "https://hs.example.com",
      authKeySecret: keySecret(parent, "99"),
      conflicting: new Set(),
      replicas: observedReplicas(parent, 1),
      released: new Set(),
      migrated: true,
    });
    assert.equal(hash(rotated), hash(base));
    // issue 32: a rotation is the same Secret name rewritten, so the StatefulSet is byte-identical
    const sts = (children: K8sObject[]) => children.filter((c) => c.kind === "StatefulSet");
    assert.deepStrictEqual(sts(rotated), sts(base));
    assert.equal(keySecret(parent, "99").metadata.name, keySecret(parent, "7").metadata.name);
    assert.notEqual(hash(build({ ca: PRIVATE_CA }).children), hash(base), "a new CA rolls the pods too");
  });

  it("agent config: listen ports from 10000 in target then port order", () => {
    assert.deepStrictEqual(egressAgentConfig(readEgressSpec(egressParent())), expectedAgentConfig(golden().targets));
  });

  it("hostname and replicas defaults", () => {
    const p = parentObject("TailnetEgress", "Weird_Name", { targets: [] }, { namespace: "team-a" });
    assert.equal(egressHostname(p), "team-a-weird-name");
    assert.equal(readEgressSpec(p).replicas, 1);
    assert.equal(readEgressSpec(egressParent({ replicas: 0 })).replicas, 0);
  });
});
