/**
 * Certificates through cert-manager, decided (pure): one row per TLSReady reason of the Certificate path, the
 * Certificate child (exactly the published names, the allowed issuer, only while Metacontroller watches
 * Certificates), the Secret the agent mounts, and kube-api over HTTPS.
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { DEFAULT_CONFIG } from "../../../../src/config.js";
import type { K8sObject } from "../../../../src/k8s/objects.js";
import { decideIngress } from "../../../../src/kinds/composite/ingress/decide.js";
import { readIngressSpec } from "../../../../src/kinds/composite/ingress/spec.js";
import { ingressRelated } from "../../../../src/kinds/composite/related.js";
import { CERT_NAME, certificateRows, issuedInput, issuerIngress, PUBLISHED } from "./certificate-inputs.js";
import { ingress, tlsSecret, WEB } from "./fixtures.js";
import { type Certificates, certificates, conditionsOf } from "./inputs.js";

let certs: Certificates;
before(async () => {
  certs = await certificates();
});
after(() => certs.pki.cleanup());

const kindOf = (children: K8sObject[], kind: string) => children.filter((c) => c.kind === kind);

describe("decideIngress: cert-manager rows (TLSReady)", () => {
  for (const row of certificateRows(() => certs)) {
    it(row.name, () => {
      const got = conditionsOf(row.input());
      const tls = got.get("TLSReady");
      assert.equal(tls?.reason, row.expect.TLSReady);
      assert.equal(tls?.status, row.expect.status);
      assert.equal(got.get("Ready")?.reason, row.expect.Ready);
      if (row.expect.message !== undefined) assert.equal(tls?.message, row.expect.message);
      if (row.expect.Ready !== "Ready") assert.equal(got.get("Ready")?.message, tls?.message, "Ready repeats TLSReady");
      for (const c of got.values()) assert.doesNotMatch(c.message, /BEGIN|PRIVATE|hskey/, "no key material");
    });
  }
});

describe("decideIngress: the Certificate child", () => {
  it("asks the allowed issuer for exactly the published names, into the Secret the agent mounts", () => {
    const d = decideIngress(issuedInput(certs.good));
    const [cert] = kindOf(d.children, "Certificate");
    assert.deepEqual(cert.spec, {
      secretName: CERT_NAME,
      dnsNames: PUBLISHED,
      issuerRef: { name: "ca", kind: "ClusterIssuer", group: "cert-manager.io" },
      privateKey: { rotationPolicy: "Always" },
      revisionHistoryLimit: 1,
      secretTemplate: { labels: cert.metadata.labels },
    });
    assert.equal(cert.apiVersion, "cert-manager.io/v1");
    assert.equal(cert.metadata.namespace, "monitoring");
    const [sts] = kindOf(d.children, "StatefulSet");
    const volumes = (
      sts.spec as { template: { spec: { volumes: { secret?: { secretName: string; optional?: boolean } }[] } } }
    ).template.spec.volumes;
    assert.ok(
      volumes.some((v) => v.secret?.secretName === CERT_NAME && v.secret.optional === true),
      "mounted, optional",
    );
    const [cm] = kindOf(d.children, "ConfigMap");
    const config = JSON.parse((cm.data as Record<string, string>)["config.json"]);
    assert.deepEqual(config.exposes[0].tls, {
      certFile: `/etc/tailnet-tls/${CERT_NAME}/tls.crt`,
      keyFile: `/etc/tailnet-tls/${CERT_NAME}/tls.key`,
    });
  });

  it("never asks for a name an older ingress holds (status.exposes and the Certificate agree)", () => {
    const parent = issuerIngress();
    const older = ingress("old", {
      namespace: "monitoring",
      created: "2026-10-01T00:00:00Z",
      exposes: [{ ...WEB, host: "grafana-eu", aliases: [] }],
    });
    const d = decideIngress(issuedInput(certs.good, { parent, ingresses: [older, parent] }));
    const [cert] = kindOf(d.children, "Certificate");
    assert.deepEqual((cert.spec as { dnsNames: string[] }).dnsNames, ["dash.ts.example.com"]);
    assert.deepEqual(d.fields.exposes[0].dnsAliases, []);
  });

  for (const [name, over] of [
    ["cert-manager missing", { certificatesWatched: false }],
    ["a ClusterIssuer not allowed", { parent: issuerIngress({ issuerRef: { name: "x", kind: "ClusterIssuer" } }) }],
    ["no issuer at all", { parent: issuerIngress({}) }],
  ] as const) {
    it(`returns no Certificate: ${name}, and the rest of the children as without it`, () => {
      const d = decideIngress(issuedInput(certs.good, { ...over, children: [] }));
      assert.deepEqual(kindOf(d.children, "Certificate"), []);
      assert.equal(kindOf(d.children, "StatefulSet").length, 1);
    });
  }

  it("an Issuer of the ingress's own namespace needs no allowlist", () => {
    const parent = issuerIngress({ issuerRef: { name: "team-ca" } });
    const d = decideIngress(issuedInput(certs.good, { parent, children: [] }));
    const [cert] = kindOf(d.children, "Certificate");
    assert.deepEqual((cert.spec as { issuerRef: unknown }).issuerRef, {
      name: "team-ca",
      kind: "Issuer",
      group: "cert-manager.io",
    });
  });

  it("customize asks for the Certificate's Secret by its derived name", () => {
    const rules = ingressRelated(issuerIngress(), DEFAULT_CONFIG);
    const secrets = rules.find((r) => r.resource === "secrets" && r.namespace === "monitoring");
    assert.deepEqual(secrets?.names, [CERT_NAME]);
  });
});

describe("mode kube-api with tls: HTTPS with a certificate for spec.hostname", () => {
  const kubeApi = (tls?: Record<string, unknown>) =>
    ingress("k8s", { mode: "kube-api", exposes: [{ name: "api", port: 443, ...(tls ? { tls } : {}) } as never] });

  it("without tls: plain HTTP inside WireGuard (TLSNotRequired), no Certificate", () => {
    const parent = kubeApi();
    const d = decideIngress(issuedInput(certs.good, { parent, children: [], services: new Set() }));
    assert.equal(d.conditions.find((c) => c.type === "TLSReady")?.reason, "TLSNotRequired");
    assert.deepEqual(kindOf(d.children, "Certificate"), []);
  });

  it("with an issuer: a Certificate for k8s.<baseDomain> and the agent's kube-api expose gets the files", () => {
    const parent = kubeApi({ issuerRef: { name: "ca", kind: "ClusterIssuer" } });
    const spec = readIngressSpec(parent);
    assert.equal(spec.exposes[0].hasTls, true);
    const d = decideIngress(issuedInput(certs.good, { parent, children: [], services: new Set() }));
    const [cert] = kindOf(d.children, "Certificate");
    assert.deepEqual((cert.spec as { dnsNames: string[] }).dnsNames, ["k8s.ts.example.com"]);
    assert.equal(cert.metadata.name, "k8s.api-tls");
    const [cm] = kindOf(d.children, "ConfigMap");
    const config = JSON.parse((cm.data as Record<string, string>)["config.json"]);
    assert.equal(config.exposes[0].mode, "kube-api");
    assert.equal(config.exposes[0].tls.certFile, "/etc/tailnet-tls/k8s.api-tls/tls.crt");
    assert.equal(d.conditions.find((c) => c.type === "TLSReady")?.reason, "CertificatePending");
  });

  it("with a Secret that covers the name: Valid", () => {
    const parent = kubeApi({ secretName: "api-tls" });
    const d = decideIngress(
      issuedInput(certs.good, {
        parent,
        children: [],
        services: new Set(),
        tlsSecrets: new Map([["api-tls", tlsSecret("api-tls", certs.good)]]),
      }),
    );
    // the test certificate names dash and grafana-eu, not k8s: the check is the same as for http
    assert.equal(d.conditions.find((c) => c.type === "TLSReady")?.reason, "TLSNameMismatch");
  });
});
