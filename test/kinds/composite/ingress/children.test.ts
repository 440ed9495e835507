import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { DEFAULT_CONFIG } from "../../../../src/config.js";
import { validateAgentConfig } from "../../../../src/contract/agent-config.js";
import type { K8sObject } from "../../../../src/k8s/objects.js";
import {
  ingressAgentConfig,
  ingressChildren,
  ingressServeConfig,
  ingressTlsSecrets,
} from "../../../../src/kinds/composite/ingress/children.js";
import {
  exposeListenPorts,
  ingressSpecProblem,
  readIngressSpec,
} from "../../../../src/kinds/composite/ingress/spec.js";
import { authKeySecret } from "../../../../src/kinds/shared/authkey.js";
import { ingressNames } from "../../../../src/kinds/shared/ingress-names.js";
import { configHash } from "../../../../src/kinds/shared/pod-template.js";
import { stampWorkload } from "../../../../src/kinds/shared/template-hash.js";
import { bootTailscale } from "../../../fakes/containerboot.js";
import { validateChildren } from "../../../helpers/validate.js";
import {
  expectedAgentStatefulSet,
  expectedConfigMap,
  expectedNetworkPolicy,
  expectedReplicaIdentity,
} from "../../shared/golden.js";
import { observedReplicas } from "../../shared/replica-fixtures.js";
import { BASE, type ExposeInput, ingress, LOGIN, TAG, tcpIngress, WEB } from "./fixtures.js";

const API: ExposeInput = {
  name: "api",
  port: 443,
  backend: { service: "grafana-api", port: 8080 },
  host: "api",
  tls: { secretName: "api-tls" },
};
const METRICS: ExposeInput = {
  name: "metrics",
  port: 8443,
  backend: { service: "grafana", port: 9090 },
  tls: { secretName: "grafana-tls" },
};

interface GoldenOptions {
  parent: K8sObject;
  /** Agent config exposes, written out by hand. */
  exposes: Record<string, unknown>[];
  serve: Record<string, { TCPForward: string; ProxyProtocol?: number }>;
  tlsSecrets: string[];
  hostname: string;
  authKeySecret?: K8sObject;
  scrapeFrom?: unknown[];
  ca?: string;
}

function expectedChildren(o: GoldenOptions): K8sObject[] {
  const id = {
    kind: "TailnetIngress" as const,
    name: o.parent.metadata.name,
    namespace: o.parent.metadata.namespace ?? "",
    uid: o.parent.metadata.uid ?? "",
  };
  const config = {
    role: "ingress",
    metricsPort: 9080,
    metricsHost: "pod-ip",
    listenHost: "127.0.0.2",
    refuseHost: "127.0.0.1",
    tailscale: { localApiSocket: "/var/run/tailscale/tailscaled.sock" },
    exposes: o.exposes,
  };
  const serve = { TCP: o.serve };
  const deployment = expectedAgentStatefulSet({
    ...id,
    replicas: 1,
    tag: TAG,
    loginServer: LOGIN,
    authKeySecret: o.authKeySecret?.metadata.name,
    hostname: o.hostname,
    images: DEFAULT_CONFIG.images,
    listenPorts: [],
    configHash: o.ca ? configHash(config, serve, o.ca) : configHash(config, serve),
    serveConfig: true,
    tlsSecrets: o.tlsSecrets,
    ca: !!o.ca,
  });
  // the ingress differences: TLS Secret volumes are optional, and the agent is Ready only while serving
  type Container = { name: string; readinessProbe: Record<string, unknown> };
  const pod = (
    deployment.spec as { template: { spec: { volumes: Record<string, unknown>[]; containers: Container[] } } }
  ).template.spec;
  pod.volumes = pod.volumes.map((v) =>
    typeof v.name === "string" && v.name.startsWith("tls-")
      ? { ...v, secret: { ...(v.secret as object), optional: true } }
      : v,
  );
  for (const c of pod.containers) {
    if (c.name === "agent") c.readinessProbe = { ...c.readinessProbe, httpGet: { path: "/readyz", port: "metrics" } };
  }
  return [
    expectedConfigMap(id, config, serve, o.ca),
    ...expectedReplicaIdentity(id, 0),
    // never a tailscale container without its key: no StatefulSet before the key Secret exists
    // the template carries the hash of itself (src/kinds/shared/template-hash.ts)
    ...(o.authKeySecret ? [stampWorkload(deployment)] : []),
    expectedNetworkPolicy(id, { operatorNamespace: DEFAULT_CONFIG.operatorNamespace, scrapeFrom: o.scrapeFrom }),
    ...(o.authKeySecret ? [o.authKeySecret] : []),
  ];
}

function build(parent: K8sObject, authKey?: K8sObject, config = DEFAULT_CONFIG, ca?: string): K8sObject[] {
  const spec = readIngressSpec(parent);
  return ingressChildren(parent, config, spec, {
    tag: TAG,
    loginServer: LOGIN,
    names: ingressNames(parent, BASE).exposes,
    authKeySecret: authKey,
    ca,
    replicas: observedReplicas(parent, spec.replicas),
    released: new Set(),
    migrated: true,
  });
}

const tlsFiles = (s: string) => ({
  certFile: `/etc/tailnet-tls/${s}/tls.crt`,
  keyFile: `/etc/tailnet-tls/${s}/tls.key`,
});

describe("ingress children", () => {
  const parent = ingress("grafana", { exposes: [WEB, API, METRICS], uid: "5f1d6c2e-0000-4000-8000-000000000001" });
  const key = authKeySecret(
    parent,
    {
      id: "12",
      key: "hskey-auth-k-secret",
      createdAt: new Date("2026-11-29T00:00:00Z"),
      expiresAt: new Date("2026-11-30T00:00:00Z"),
    },
    {},
  );

  it("http: golden children, exposes on one port sharing the TLS listener", () => {
    const got = build(parent, key);
    const want = expectedChildren({
      parent,
      hostname: "grafana",
      authKeySecret: key,
      tlsSecrets: ["api-tls", "grafana-tls"],
      // http mode: tailscaled sends a PROXY v2 header first, so the agent learns the client address
      serve: {
        "443": { TCPForward: "127.0.0.2:20000", ProxyProtocol: 2 },
        "8443": { TCPForward: "127.0.0.2:20002", ProxyProtocol: 2 },
      },
      exposes: [
        {
          name: "web",
          listenPort: 20000,
          mode: "http",
          backend: { host: "grafana.monitoring.svc.cluster.local", port: 3000 },
          tls: tlsFiles("grafana-tls"),
          proxyProtocol: true,
          names: ["dash.ts.example.com", "grafana-eu.ts.example.com"],
        },
        {
          name: "api",
          listenPort: 20000,
          mode: "http",
          backend: { host: "grafana-api.monitoring.svc.cluster.local", port: 8080 },
          tls: tlsFiles("api-tls"),
          proxyProtocol: true,
          names: ["api.ts.example.com"],
        },
        {
          name: "metrics",
          listenPort: 20002,
          mode: "http",
          backend: { host: "grafana.monitoring.svc.cluster.local", port: 9090 },
          tls: tlsFiles("grafana-tls"),
          proxyProtocol: true,
          names: ["grafana.ts.example.com"],
        },
      ],
    });
    assert.deepStrictEqual(got, want);
    validateChildren(got);
  });

  it("tcp: golden children without TLS, one listener per expose, no key Secret (so no Deployment) yet", () => {
    const pg = tcpIngress("pg", {
      exposes: [
        { name: "postgres", port: 5432, backend: { service: "db", port: 5432 } },
        { name: "replica", port: 5433, backend: { service: "db-ro", port: 5432 } },
      ],
    });
    const got = build(pg, undefined, {
      ...DEFAULT_CONFIG,
      monitoring: {
        ...DEFAULT_CONFIG.monitoring,
        podMonitor: { scrapeFrom: [{ namespaceSelector: { matchLabels: { team: "obs" } } }] },
      },
    });
    const want = expectedChildren({
      parent: pg,
      hostname: "pg",
      tlsSecrets: [],
      scrapeFrom: [{ namespaceSelector: { matchLabels: { team: "obs" } } }],
      serve: { "5432": { TCPForward: "127.0.0.2:20000" }, "5433": { TCPForward: "127.0.0.2:20001" } },
      exposes: [
        {
          name: "postgres",
          listenPort: 20000,
          mode: "tcp",
          backend: { host: "db.monitoring.svc.cluster.local", port: 5432 },
          names: ["pg.ts.example.com"],
        },
        {
          name: "replica",
          listenPort: 20001,
          mode: "tcp",
          backend: { host: "db-ro.monitoring.svc.cluster.local", port: 5432 },
          names: ["pg.ts.example.com"],
        },
      ],
    });
    assert.deepStrictEqual(got, want);
    validateChildren(got);
  });

  it("renders an agent config the agent accepts, and TLS files under the mounted Secret paths", () => {
    const spec = readIngressSpec(parent);
    const config = ingressAgentConfig(parent, spec, ingressNames(parent, BASE).exposes);
    const parsed = validateAgentConfig(JSON.parse(JSON.stringify(config)));
    // serve's targets sit where tailscaled's netstack never forwards a peer's own connection (issue 31)
    assert.equal(parsed.listenHost, "127.0.0.2");
    assert.equal(parsed.refuseHost, "127.0.0.1");
    assert.equal(parsed.metricsHost, "pod-ip");
    const deployment = build(parent, key).find((c) => c.kind === "StatefulSet");
    const mounts = JSON.stringify(deployment);
    for (const e of parsed.exposes) assert.ok(mounts.includes(e.tls?.certFile.replace(/\/tls\.crt$/, "") ?? "?"));
  });

  it("copies every user field into a child", () => {
    const text = JSON.stringify(build(parent, key));
    for (const needle of [
      '"value":"grafana"', // TS_HOSTNAME from spec.hostname
      '\\"443\\"', // spec.exposes[].port in serve.json
      '\\"8443\\"',
      "grafana-api.monitoring.svc.cluster.local", // backend.service
      '\\"port\\": 8080', // backend.port
      "dash.ts.example.com", // host
      "grafana-eu.ts.example.com", // aliases
      '"secretName":"api-tls"', // tls.secretName
      `--login-server=${LOGIN}`,
      '"name":"grafana-authkey-12"',
    ]) {
      assert.ok(text.includes(needle), needle);
    }
  });

  it("a private Headscale CA: ca.crt in the ConfigMap, SSL_CERT_FILE, a new hash; the pod trusts the CA", () => {
    const ca = "-----BEGIN CERTIFICATE-----\nPRIVATE CA\n-----END CERTIFICATE-----\n";
    const got = build(parent, key, DEFAULT_CONFIG, ca);
    const want = expectedChildren({
      parent,
      hostname: "grafana",
      authKeySecret: key,
      tlsSecrets: ["api-tls", "grafana-tls"],
      // http mode: tailscaled sends a PROXY v2 header first, so the agent learns the client address
      serve: {
        "443": { TCPForward: "127.0.0.2:20000", ProxyProtocol: 2 },
        "8443": { TCPForward: "127.0.0.2:20002", ProxyProtocol: 2 },
      },
      exposes: JSON.parse((build(parent, key)[0].data as Record<string, string>)["config.json"]).exposes,
      ca,
    });
    assert.deepStrictEqual(got, want);
    validateChildren(got);
    const deployment = got.find((c) => c.kind === "StatefulSet") as K8sObject;
    const boot = bootTailscale(deployment, got, { serverCa: ca, imageVersion: "1.90.6" });
    assert.ok(boot.ok, boot.ok ? "" : boot.error);
    assert.deepEqual(boot.boot.requestTags, []);
  });

  it("changes the pod template hash when the config changes", () => {
    const hashOf = (p: K8sObject) => {
      const spec = build(p, key).find((c) => c.kind === "StatefulSet")?.spec as
        | { template: { metadata: { annotations: Record<string, string> } } }
        | undefined;
      return spec?.template.metadata.annotations["tailnet.internal/config-hash"];
    };
    const a = hashOf(ingress("grafana"));
    assert.equal(hashOf(ingress("grafana")), a);
    assert.notEqual(
      hashOf(ingress("grafana", { exposes: [{ ...WEB, backend: { service: "grafana", port: 3001 } }] })),
      a,
    );
  });
});

describe("ingress spec", () => {
  it("assigns listen ports by position; http exposes on one port share the first one's listener", () => {
    assert.deepEqual(
      exposeListenPorts(readIngressSpec(ingress("g", { exposes: [WEB, API, METRICS] }))),
      [20000, 20000, 20002],
    );
    assert.deepEqual(ingressServeConfig(readIngressSpec(ingress("g", { exposes: [METRICS, WEB, API] }))), {
      TCP: {
        "443": { TCPForward: "127.0.0.2:20001", ProxyProtocol: 2 },
        "8443": { TCPForward: "127.0.0.2:20000", ProxyProtocol: 2 },
      },
    });
    assert.deepEqual(ingressTlsSecrets(tcpIngress(), readIngressSpec(tcpIngress())), []);
    // tcp mode: a byte pipe, no PROXY header asked of tailscaled (the backend would receive it raw)
    for (const handler of Object.values(ingressServeConfig(readIngressSpec(tcpIngress())).TCP))
      assert.equal(handler.ProxyProtocol, undefined);
  });

  const problems: [string, () => K8sObject, string | undefined][] = [
    ["a valid http spec", () => ingress("g", { exposes: [WEB, API, METRICS] }), undefined],
    [
      "an http expose without a TLS Secret",
      () => ingress("g", { exposes: [WEB, { ...METRICS, tls: undefined }] }),
      "spec.exposes[1].tls: required in mode http (secretName, issuerRef, or {} for the Tailnet's spec.certificates.issuerRef)",
    ],
    [
      "two tcp exposes on one port",
      () =>
        tcpIngress("pg", {
          exposes: [
            { name: "a", port: 5432, backend: { service: "a", port: 1 } },
            { name: "b", port: 5432, backend: { service: "b", port: 1 } },
          ],
        }),
      "spec.exposes[1].port: 5432 is already used by spec.exposes[0] (one expose per port in mode tcp)",
    ],
    [
      "two http exposes on one port answering for the same name",
      () => ingress("g", { exposes: [WEB, { ...API, host: undefined, aliases: ["GRAFANA-EU"] }] }),
      'spec.exposes[1]: name "grafana-eu" is already served on port 443 by spec.exposes[0]',
    ],
    [
      "two http exposes on different ports with the same name",
      () => ingress("g", { exposes: [WEB, { ...METRICS, host: "dash" }] }),
      undefined,
    ],
  ];
  for (const [name, parent, want] of problems) {
    it(`ingressSpecProblem: ${name}`, () => assert.equal(ingressSpecProblem(parent()), want));
  }
});
