/**
 * Certificates through cert-manager end to end in the emulator: the Metacontroller loop with (and without) the
 * shipped cert-manager component (manifests/components/cert-manager), the real hook server, the fake Headscale, and
 * a stand-in for cert-manager's controller (test/fakes/cert-manager.ts) that fills each Certificate's Secret from
 * the test PKI. Every Certificate child is checked against cert-manager's own CRD schema (test/helpers/validate.ts).
 */
import assert from "node:assert/strict";
import { X509Certificate } from "node:crypto";
import { after, before, describe, it } from "node:test";
import { IngressReason } from "../../../../src/conditions/tables/ingress.js";
import type { K8sObject } from "../../../../src/k8s/objects.js";
import { createTestPki, type TestPki } from "../../../fakes/agent/pki.js";
import { issueCertificates } from "../../../fakes/cert-manager.js";
import { ingress, NS, service, WEB } from "./fixtures.js";
import { type World, world } from "./world.js";

let pki: TestPki;
before(async () => {
  pki = await createTestPki();
});
after(() => pki.cleanup());

const seen = new Set<string>();
async function settle(w: World): Promise<void> {
  await w.mc.settle();
  for (const o of w.mc.list("TailnetIngress"))
    for (const c of (o.status as { conditions?: { reason: string }[] } | undefined)?.conditions ?? [])
      seen.add(c.reason);
  assert.deepEqual(w.mc.errors, [], "every hook answered 200");
}

const ALLOW_CA = { certificates: { allowedClusterIssuers: [{ name: "ca" }] } };
const caIngress = (
  name = "grafana",
  tls: Record<string, unknown> = { issuerRef: { name: "ca", kind: "ClusterIssuer" } },
) => ingress(name, { exposes: [{ ...WEB, tls }] });
const childKinds = (w: World, name = "grafana") => {
  const parent = w.ingress(name);
  return parent
    ? w.mc
        .childrenOf(parent)
        .map((c: K8sObject) => `${c.kind}/${c.metadata.name}`)
        .sort()
    : [];
};

describe("TailnetIngress: certificates through cert-manager (emulator)", () => {
  it("without the cert-manager component: CertManagerMissing, and the children are those of any http ingress", async (t) => {
    const w = await world(t, { tailnetSpec: ALLOW_CA });
    w.mc.apply(service("grafana", NS));
    w.mc.apply(caIngress());
    await settle(w);
    w.register();
    await settle(w);
    const tls = w.condition("TLSReady");
    assert.equal(tls.reason, IngressReason.CertManagerMissing);
    assert.equal(w.condition("Ready").reason, IngressReason.CertManagerMissing);
    assert.ok(!childKinds(w).some((k) => k.startsWith("Certificate/")));
    // the same ingress with a Secret instead has the same children
    const w2 = await world(t, { tailnetSpec: ALLOW_CA });
    w2.mc.apply(service("grafana", NS));
    w2.mc.apply(ingress("grafana"));
    await settle(w2);
    w2.register();
    await settle(w2);
    assert.deepEqual(childKinds(w), childKinds(w2));
  });

  it("with the component: a Certificate for the published names; issued, Valid; a failure, a late renewal", async (t) => {
    const w = await world(t, { tailnetSpec: ALLOW_CA, components: ["cert-manager"] });
    w.mc.apply(service("grafana", NS));
    w.mc.apply(caIngress());
    await settle(w);
    w.register();
    await settle(w);
    assert.equal(w.condition("TLSReady").reason, IngressReason.CertificatePending);
    const cert = w.mc.get("cert-manager.io/v1", "Certificate", "grafana.web-tls", NS);
    assert.deepEqual(((cert?.spec ?? {}) as { dnsNames: string[] }).dnsNames, [
      "dash.ts.example.com",
      "grafana-eu.ts.example.com",
    ]);
    assert.deepEqual(((cert?.spec ?? {}) as { issuerRef: unknown }).issuerRef, {
      name: "ca",
      kind: "ClusterIssuer",
      group: "cert-manager.io",
    });

    const start = new Date(w.clock.now.getTime() - 3600_000);
    const end = new Date(w.clock.now.getTime() + 3 * 86400_000);
    assert.deepEqual(await issueCertificates(w.mc, pki, { notBefore: start, notAfter: end }), ["grafana.web-tls"]);
    await settle(w);
    assert.equal(w.condition("TLSReady").reason, IngressReason.Valid);
    assert.match(w.condition("TLSReady").message, /\(Secret monitoring\/grafana.web-tls\)$/);
    // the agent reads the Certificate's Secret: the mounted files are the issued pair
    const secret = w.mc.get("v1", "Secret", "grafana.web-tls", NS);
    const pem = Buffer.from(((secret?.data ?? {}) as Record<string, string>)["tls.crt"], "base64").toString();
    assert.ok(new X509Certificate(pem).checkHost("grafana-eu.ts.example.com"));

    // two thirds in, cert-manager renews; an hour after that without a renewal, TLSExpiring (True: it still serves)
    w.clock.now = new Date(start.getTime() + ((end.getTime() - start.getTime()) * 2) / 3 + 2 * 3600_000);
    await settle(w);
    assert.equal(w.condition("TLSReady").reason, IngressReason.TLSExpiring);
    assert.equal(w.condition("TLSReady").status, "True");

    // another ingress whose issuance fails: CertificateFailed with cert-manager's message
    const ca = { issuerRef: { name: "ca", kind: "ClusterIssuer" } };
    w.mc.apply(ingress("wiki", { exposes: [{ ...WEB, host: "wiki", aliases: [], tls: ca }] }));
    await settle(w);
    await issueCertificates(w.mc, pki, {
      fail: { "wiki.web-tls": "The certificate request has failed to complete and will be retried: signing failed" },
    });
    await settle(w);
    assert.equal(w.condition("TLSReady", "wiki").reason, IngressReason.CertificateFailed);
    assert.match(w.condition("TLSReady", "wiki").message, /signing failed$/);
  });

  it("refusals: a ClusterIssuer not allowed, and tls {} without the Tailnet's default issuer; no Certificate", async (t) => {
    const w = await world(t, { tailnetSpec: ALLOW_CA, components: ["cert-manager"] });
    w.mc.apply(service("grafana", NS));
    w.mc.apply(caIngress("grafana", { issuerRef: { name: "public", kind: "ClusterIssuer" } }));
    w.mc.apply(caIngress("wiki", {}));
    await settle(w);
    assert.equal(w.condition("TLSReady").reason, IngressReason.IssuerNotAllowed);
    assert.equal(w.condition("TLSReady", "wiki").reason, IngressReason.NoIssuer);
    assert.deepEqual(w.mc.list("Certificate"), []);
  });

  it("reached every cert-manager reason of TLSReady", () => {
    for (const r of [
      "CertManagerMissing",
      "NoIssuer",
      "IssuerNotAllowed",
      "CertificatePending",
      "CertificateFailed",
      "TLSExpiring",
    ])
      assert.ok(seen.has(r), r);
  });
});
