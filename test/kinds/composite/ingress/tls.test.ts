import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import type { K8sObject } from "../../../../src/k8s/objects.js";
import { readIngressSpec } from "../../../../src/kinds/composite/ingress/spec.js";
import { checkTlsSecret, type TlsContext, tlsCondition } from "../../../../src/kinds/composite/ingress/tls.js";
import { createTestPki, type IssuedCertificate, type TestPki } from "../../../fakes/agent/pki.js";
import { ingress, tcpIngress, tlsSecret, WEB } from "./fixtures.js";

const NOW = new Date("2026-11-29T10:00:00Z");
const validity = { notBefore: new Date("2026-11-01T00:00:00Z"), notAfter: new Date("2027-01-01T00:00:00Z") };
const REF = { namespace: "monitoring", name: "grafana-tls", field: "spec.exposes[0].tls" };
const NAMES = ["dash.ts.example.com", "grafana-eu.ts.example.com"];

let pki: TestPki;
let pair: IssuedCertificate;
let other: IssuedCertificate;
let wildcard: IssuedCertificate;
let future: IssuedCertificate;

before(async () => {
  pki = await createTestPki();
  pair = await pki.issue({ names: NAMES, ...validity });
  other = await pki.issue({ names: NAMES, ...validity });
  wildcard = await pki.issue({ names: ["*.ts.example.com"], ...validity });
  future = await pki.issue({
    names: NAMES,
    notBefore: new Date("2026-12-01T00:00:00Z"),
    notAfter: new Date("2027-12-01T00:00:00Z"),
  });
});
after(() => pki.cleanup());

const check = (secret: ReturnType<typeof tlsSecret> | undefined, names = NAMES) =>
  checkTlsSecret(secret, REF, names, NOW);

describe("checkTlsSecret", () => {
  const invalid: [string, () => ReturnType<typeof tlsSecret>, string][] = [
    ["no certificate", () => tlsSecret("grafana-tls", { keyPem: pair.keyPem }), "has no tls.crt"],
    ["no key", () => tlsSecret("grafana-tls", { certPem: pair.certPem }), "has no tls.key"],
    [
      "a certificate that is not PEM",
      () => tlsSecret("grafana-tls", { certPem: "not a certificate", keyPem: pair.keyPem }),
      "has a tls.crt that is not a PEM certificate",
    ],
    [
      "a key that is not PEM",
      () => tlsSecret("grafana-tls", { certPem: pair.certPem, keyPem: "-----BEGIN PRIVATE KEY-----\nAAAA\n" }),
      "has a tls.key that is not a PEM private key",
    ],
    [
      "the key of another certificate",
      () => tlsSecret("grafana-tls", { certPem: pair.certPem, keyPem: other.keyPem }),
      "has a tls.key that does not belong to the certificate in tls.crt",
    ],
    [
      "a certificate not valid yet",
      () => tlsSecret("grafana-tls", future),
      "holds a certificate that is not valid before 2026-12-01T00:00:00Z",
    ],
  ];
  for (const [name, secret, problem] of invalid) {
    it(`TLSSecretInvalid: ${name}`, () => {
      const got = check(secret());
      assert.deepEqual(got, {
        ok: false,
        reason: "TLSSecretInvalid",
        message: `Secret monitoring/grafana-tls (spec.exposes[0].tls) ${problem}`,
      });
      assert.ok(!got.ok && !got.message.includes(pair.keyPem.split("\n")[1]), "no key material");
    });
  }

  it("accepts a wildcard certificate for every name under it", () => {
    const got = check(tlsSecret("grafana-tls", wildcard));
    assert.deepEqual(got, { ok: true, notAfter: validity.notAfter });
    const deeper = check(tlsSecret("grafana-tls", wildcard), ["a.b.ts.example.com"]);
    assert.equal(deeper.ok ? "" : deeper.reason, "TLSNameMismatch", "a wildcard covers one label only");
  });
});

/** TLSReady's context for Secret-only exposes (no Certificates watched). */
const ctxOf = (parent: K8sObject, secrets: Map<string, K8sObject>, namesOf: (i: number) => string[]): TlsContext => ({
  parent,
  secrets,
  certificates: new Map(),
  certificatesWatched: false,
  tailnet: { name: "home" },
  namesOf,
  publishedOf: namesOf,
  now: NOW,
});

describe("tlsCondition", () => {
  it("is True/TLSNotRequired in tcp mode, whatever the Secrets", () => {
    const got = tlsCondition(
      readIngressSpec(tcpIngress()),
      ctxOf(tcpIngress(), new Map(), () => []),
    );
    assert.equal(got.condition.reason, "TLSNotRequired");
    assert.equal(got.condition.status, "True");
  });

  it("reports the first expose with a problem, naming its field, and counts a shared Secret once", () => {
    const parent = ingress("grafana", {
      exposes: [
        WEB,
        { name: "api", port: 8443, backend: { service: "grafana", port: 3001 }, tls: { secretName: "api-tls" } },
        {
          name: "admin",
          port: 9443,
          backend: { service: "grafana", port: 3002 },
          tls: { secretName: "grafana-tls" },
        },
      ],
    });
    const spec = readIngressSpec(parent);
    const namesOf = () => NAMES;
    const secrets = new Map([["grafana-tls", tlsSecret("grafana-tls", pair)]]);
    const missing = tlsCondition(spec, ctxOf(parent, secrets, namesOf));
    assert.equal(missing.condition.reason, "TLSSecretMissing");
    assert.equal(missing.condition.message, "Secret monitoring/api-tls (spec.exposes[1].tls) does not exist");
    secrets.set("api-tls", tlsSecret("api-tls", wildcard));
    const valid = tlsCondition(spec, ctxOf(parent, secrets, namesOf));
    assert.equal(
      valid.condition.message,
      "2 certificates cover the names of all 3 exposes; the first expires at 2027-01-01T00:00:00Z (Secret monitoring/grafana-tls)",
    );
    assert.deepEqual(valid.nextExpiry, validity.notAfter);
  });
});
