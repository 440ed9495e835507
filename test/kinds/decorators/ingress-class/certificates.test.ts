/**
 * An Ingress of class `tailnet` with cert-manager (pure): cert-manager's own annotations become the TailnetIngress
 * expose's tls.issuerRef (the operator's Certificate, for the published names only); a spec.tls Secret naming the
 * host wins (with the annotations, cert-manager's ingress-shim fills that Secret); without either, the Tailnet's
 * default issuer (`tls: {}`); both annotations at once are refused as cert-manager refuses them.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { K8sObject } from "../../../../src/k8s/objects.js";
import { decideIngressClass } from "../../../../src/kinds/decorators/ingress-class/decide.js";
import { planIngressClass } from "../../../../src/kinds/decorators/ingress-class/plan.js";
import { BASE, ingress, observe, simpleSpec, tailnet } from "./fixtures.js";

const noTls = () => simpleSpec({ tls: undefined });
const tlsOfExpose = (d: ReturnType<typeof decideIngressClass>) =>
  ((d.children[0]?.spec as { exposes: { tls?: unknown }[] } | undefined)?.exposes ?? [])[0]?.tls;
const run = (ing: K8sObject, tailnets = [tailnet()]) =>
  decideIngressClass(planIngressClass(observe(ing, { tailnets })));
const exposed = (d: ReturnType<typeof decideIngressClass>) => d.conditions.find((c) => c.type === "Exposed");

describe("Ingress class: certificates through cert-manager", () => {
  it("cert-manager.io/cluster-issuer without spec.tls: tls.issuerRef of that ClusterIssuer", () => {
    const d = run(ingress(noTls(), { annotations: { "cert-manager.io/cluster-issuer": "letsencrypt" } }));
    assert.deepEqual(tlsOfExpose(d), {
      issuerRef: { name: "letsencrypt", kind: "ClusterIssuer", group: "cert-manager.io" },
    });
  });

  it("cert-manager.io/issuer with an external issuer's group: an Issuer of the namespace", () => {
    const d = run(
      ingress(noTls(), {
        annotations: { "cert-manager.io/issuer": "team-ca", "cert-manager.io/issuer-group": "awspca.cert-manager.io" },
      }),
    );
    assert.deepEqual(tlsOfExpose(d), {
      issuerRef: { name: "team-ca", kind: "Issuer", group: "awspca.cert-manager.io" },
    });
  });

  it("a spec.tls Secret naming the host wins over the annotation (ingress-shim's Certificate fills it)", () => {
    const d = run(ingress(simpleSpec(), { annotations: { "cert-manager.io/cluster-issuer": "letsencrypt" } }));
    assert.deepEqual(tlsOfExpose(d), { secretName: "grafana-tls" });
  });

  it("neither: the Tailnet's default issuer (tls {}), or TLSMissing naming the three ways", () => {
    const withDefault: K8sObject = {
      ...tailnet(),
      spec: { dns: { baseDomain: BASE }, certificates: { issuerRef: { name: "ca", kind: "ClusterIssuer" } } },
    };
    assert.deepEqual(tlsOfExpose(run(ingress(noTls()), [withDefault])), {});
    const d = run(ingress(noTls()));
    assert.equal(exposed(d)?.reason, "TLSMissing");
    assert.equal(
      exposed(d)?.message,
      `host grafana.${BASE}: no spec.tls entry with a secretName names it, no cert-manager.io/issuer or cert-manager.io/cluster-issuer annotation and no spec.certificates.issuerRef on Tailnet home; the tailnet agent serves https only (a certificate for grafana.${BASE})`,
    );
  });

  it("both cert-manager.io/issuer and cert-manager.io/cluster-issuer: InvalidAnnotation, nothing attached", () => {
    const d = run(
      ingress(noTls(), {
        annotations: { "cert-manager.io/issuer": "a", "cert-manager.io/cluster-issuer": "b" },
      }),
    );
    assert.equal(exposed(d)?.reason, "InvalidAnnotation");
    assert.equal(
      exposed(d)?.message,
      "cert-manager.io/issuer and cert-manager.io/cluster-issuer are both set: name one issuer",
    );
    assert.deepEqual(d.children, []);
  });
});
