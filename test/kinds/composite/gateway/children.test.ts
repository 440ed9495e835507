/**
 * Golden children of TailnetGateway, built from an options object (Tailscale's expectedSTS style),
 * compared whole and validated with kubernetes-models; every user field copied into a child is
 * found there.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { K8sObject } from "../../../../src/k8s/objects.js";
import { dnsService, gatewayNetworkPolicy, zoneConfigMap } from "../../../../src/kinds/composite/gateway/children.js";
import { gatewayNames } from "../../../../src/kinds/composite/gateway/spec.js";
import { renderCorefile, renderStatefulSet } from "../../../../src/kinds/composite/gateway/workload.js";
import { TEMPLATE_HASH_ANNOTATION, templateHash } from "../../../../src/kinds/shared/template-hash.js";
import { bootTailscale } from "../../../fakes/containerboot.js";
import { validateChildren } from "../../../helpers/validate.js";
import { gateway, healthy, renderInput } from "./fixtures.js";
import { COREFILE, expectedStatefulSet, labels, selector } from "./golden.js";
import { run } from "./scenarios.js";

describe("gateway children", () => {
  it("StatefulSet per replica: tailscale + CoreDNS, its own state Secret and hostname, stamped with its hash", () => {
    const got = renderStatefulSet(renderInput(gateway()), 0, "gw-gateway-authkey");
    assert.deepStrictEqual(got, expectedStatefulSet({ secret: "gw-gateway-authkey", corefile: COREFILE }));
    const second = renderStatefulSet(renderInput(gateway({ replicas: 2 })), 1, "gw-gateway-authkey");
    assert.deepStrictEqual(second, expectedStatefulSet({ secret: "gw-gateway-authkey", corefile: COREFILE, index: 1 }));
    validateChildren([second]);
    const tpl = (got.spec as { template: { metadata: { annotations: Record<string, string> } } }).template;
    assert.equal(tpl.metadata.annotations[TEMPLATE_HASH_ANNOTATION], templateHash(tpl));
    validateChildren([got]);
  });

  it("StatefulSet copies every user field: hostname, routes, tag, suspend (replicas 0), images", () => {
    const p = gateway({
      hostname: "edge-gw",
      routes: ["10.96.0.0/12", "10.244.0.0/16"],
      tag: "tag:edge",
      suspend: true,
    });
    const r = { ...renderInput(p), tag: "tag:edge", images: { agent: "a:1", tailscale: "ts:2", coredns: "cd:3" } };
    const got = renderStatefulSet(r, 0, undefined);
    assert.deepStrictEqual(
      got,
      expectedStatefulSet({
        hostname: "edge-gw",
        routes: ["10.96.0.0/12", "10.244.0.0/16"],
        tag: "tag:edge",
        replicas: 0,
        images: { agent: "a:1", tailscale: "ts:2", coredns: "cd:3" },
        corefile: renderCorefile(r),
      }),
    );
    validateChildren([got]);
  });

  it("Corefile: the derived zone and the split domains on 1053, ready/health/prometheus", () => {
    assert.equal(renderCorefile(renderInput(gateway())), COREFILE);
    const r = renderInput(gateway());
    r.tailnet.splitDomains = ["corp.internal", "svc.cluster.local"];
    assert.match(
      renderCorefile(r),
      /\ncorp\.internal:1053 svc\.cluster\.local:1053 \{\n {4}bind \{\$POD_IP\}\n {4}errors\n/,
    );
  });

  it("DNS Service: spec.service.type, port 53 udp/tcp onto the CoreDNS ports", () => {
    const names = gatewayNames(gateway());
    for (const type of ["ClusterIP", "LoadBalancer"] as const) {
      const got = dnsService(gateway(), names, type);
      assert.deepStrictEqual(got, {
        apiVersion: "v1",
        kind: "Service",
        metadata: { name: "gw-dns", namespace: "infra", labels: labels() },
        spec: {
          type,
          selector,
          ports: [
            { name: "dns", port: 53, targetPort: 1053, protocol: "UDP" },
            { name: "dns-tcp", port: 53, targetPort: 1053, protocol: "TCP" },
          ],
        },
      });
      validateChildren([got]);
    }
  });

  it("NetworkPolicy: DNS from the whole cluster, 8080/9153 only from the metrics peers", () => {
    const peers = [
      { namespaceSelector: { matchLabels: { "kubernetes.io/metadata.name": "tailnet-system" } } },
      {
        namespaceSelector: { matchLabels: { "kubernetes.io/metadata.name": "monitoring" } },
        podSelector: { matchLabels: { app: "prometheus" } },
      },
    ];
    const got = gatewayNetworkPolicy(gateway(), gatewayNames(gateway()), peers);
    assert.deepStrictEqual(got, {
      apiVersion: "networking.k8s.io/v1",
      kind: "NetworkPolicy",
      metadata: { name: "gw-gateway", namespace: "infra", labels: labels() },
      spec: {
        podSelector: { matchLabels: selector },
        policyTypes: ["Ingress"],
        ingress: [
          { from: [{ namespaceSelector: {} }], ports: [{ protocol: "UDP", port: 1053 }] },
          { from: [{ namespaceSelector: {} }], ports: [{ protocol: "TCP", port: 1053 }] },
          {
            from: peers,
            ports: [
              { protocol: "TCP", port: 8080 },
              { protocol: "TCP", port: 9153 },
            ],
          },
        ],
      },
    });
    validateChildren([got]);
  });

  it("zone ConfigMap", () => {
    const got = zoneConfigMap(gateway(), gatewayNames(gateway()), "; zone\n");
    assert.deepStrictEqual(got, {
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: { name: "gw-gateway-zone", namespace: "infra", labels: labels() },
      data: { "zone.db": "; zone\n" },
    });
  });

  it("every child of a healthy sync validates; one replica's identity children; the stable bootstrap Secret", () => {
    const { children } = run(healthy()).decision;
    validateChildren(children);
    assert.deepEqual(
      children.map((c) => `${c.kind}/${c.metadata.name}`),
      [
        "ServiceAccount/gw-gateway-0",
        "Role/gw-gateway-0",
        "RoleBinding/gw-gateway-0",
        "Secret/gw-gateway-0-state",
        "StatefulSet/gw-gateway-0",
        "Service/gw-dns",
        "NetworkPolicy/gw-gateway",
        "ConfigMap/gw-gateway-corefile",
        "ConfigMap/gw-gateway-zone",
        "Secret/gw-gateway-authkey",
      ],
    );
    const state = children.find((c) => c.metadata.name === "gw-gateway-0-state");
    assert.equal(state?.data, undefined, "the observed state (device_id, machine key) never travels back");
    const role = children.find((c) => c.kind === "Role");
    assert.deepEqual(role?.rules, [
      {
        apiGroups: [""],
        resources: ["secrets"],
        resourceNames: ["gw-gateway-0-state"],
        verbs: ["get", "update", "patch"],
      },
    ]);
    const secret = children.find((c) => c.metadata.name === "gw-gateway-authkey");
    assert.equal(secret?.metadata.labels?.["tailnet.internal/authkey"], "true");
    assert.equal(secret?.metadata.labels?.["app.kubernetes.io/name"], "tailnet-gateway");
  });

  it("a private Headscale CA: the gw-gateway-ca ConfigMap, mounted, SSL_CERT_FILE; the config hash covers it", () => {
    const ca = "-----BEGIN CERTIFICATE-----\nPRIVATE CA\n-----END CERTIFICATE-----\n";
    const r = renderInput(gateway());
    r.tailnet.ca = ca;
    const got = renderStatefulSet(r, 0, "gw-gateway-authkey");
    assert.deepStrictEqual(got, expectedStatefulSet({ secret: "gw-gateway-authkey", corefile: COREFILE, ca }));
    const input = healthy();
    input.tailnet.ca = ca;
    const { children } = run(input).decision;
    const cm = children.find((c) => c.metadata.name === "gw-gateway-ca");
    assert.deepStrictEqual(cm, {
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: { name: "gw-gateway-ca", namespace: "infra", labels: labels() },
      data: { "ca.crt": ca },
    });
    validateChildren(children);
    // the cluster holds every child (the replica's Role and RoleBinding too: containerboot checks its RBAC first)
    const boot = bootTailscale(got, children, { serverCa: ca });
    assert.ok(boot.ok, boot.ok ? "" : boot.error);
    const others = children.filter((c) => c !== cm);
    const without = bootTailscale(renderStatefulSet(renderInput(gateway()), 0, "gw-gateway-authkey"), others, {
      serverCa: ca,
    });
    assert.deepEqual(without, {
      ok: false,
      error:
        "tailscale up: fetch control key: tls: failed to verify certificate: x509: certificate signed by unknown authority",
    });
  });

  it("noLogsNoSupport switched off: no TS_NO_LOGS_NO_SUPPORT", () => {
    const got = renderStatefulSet({ ...renderInput(gateway()), noLogsNoSupport: false }, 0, "gw-gateway-authkey");
    assert.deepStrictEqual(
      got,
      expectedStatefulSet({ secret: "gw-gateway-authkey", corefile: COREFILE, noLogsNoSupport: false }),
    );
  });

  it("boots under containerboot on the pinned and older images, requests no tag, sends no logs, keeps its state", () => {
    const { children } = run(healthy()).decision;
    const deployment = children.find((c) => c.kind === "StatefulSet") as K8sObject;
    for (const imageVersion of ["1.102.3", "1.90.6"]) {
      const result = bootTailscale(deployment, children, { imageVersion });
      assert.ok(result.ok, `${imageVersion}: ${result.ok ? "" : result.error}`);
      assert.deepEqual(result.boot.requestTags, []);
      assert.equal(result.boot.noLogsNoSupport, true);
      assert.equal(result.boot.persistentState, true, "a container restart must not log in again");
      assert.deepEqual(result.boot.routes, ["10.96.0.0/12"]);
    }
  });

  it("no bootstrap key yet: no StatefulSet (never a tailscale container without its key); a running one is kept", () => {
    const empty = { statefulSets: [], children: [], legacyKeySecrets: [] };
    const none = run(healthy({ key: { error: "Headscale is down" }, observed: empty })).decision;
    assert.equal(
      none.children.some((c) => c.kind === "StatefulSet"),
      false,
    );
    validateChildren(none.children);
    const input = healthy({ key: { error: "Headscale is down" } });
    const live = input.observed.statefulSets[0];
    const kept = run(input).decision.children.find((c) => c.kind === "StatefulSet");
    assert.deepStrictEqual(kept?.spec, live.spec, "the observed StatefulSet is returned as it is");
  });

  it("the StatefulSet waits for its ServiceAccount, Role, RoleBinding and state Secret to be observed", () => {
    const input = healthy();
    const first = run({ ...input, observed: { ...input.observed, statefulSets: [], children: [] } }).decision;
    assert.deepEqual(
      first.children
        .filter((c) => c.metadata.labels?.["tailnet.internal/replica"])
        .map((c) => `${c.kind}/${c.metadata.name}`),
      ["ServiceAccount/gw-gateway-0", "Role/gw-gateway-0", "RoleBinding/gw-gateway-0", "Secret/gw-gateway-0-state"],
    );
  });

  it("names stay valid for long and dotted parent names", () => {
    const long = gateway();
    long.metadata.name = `a.${"x".repeat(240)}`;
    const names = gatewayNames(long);
    assert.ok(names.service.length <= 63 && /^[a-z]([-a-z0-9]*[a-z0-9])?$/.test(names.service), names.service);
    assert.ok(names.corefile.length <= 253);
    const digits = gateway();
    digits.metadata.name = "1gw";
    assert.equal(gatewayNames(digits).service, "gw-1gw-dns");
  });
});
