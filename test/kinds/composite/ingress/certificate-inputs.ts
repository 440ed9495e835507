/**
 * Decide inputs for the cert-manager rows (tls.issuerRef, src/kinds/composite/ingress/certificate.ts): the healthy
 * http ingress with its one expose's certificate asked of an issuer, then one row per TLSReady reason of the
 * Certificate path. Shared by certificate.test.ts and the reasons-table coverage in decide.test.ts.
 */
import type { K8sObject } from "../../../../src/k8s/objects.js";
import { ingressCertificate } from "../../../../src/kinds/composite/ingress/certificate.js";
import type { IngressDecideInput } from "../../../../src/kinds/composite/ingress/decide.js";
import { readIngressSpec } from "../../../../src/kinds/composite/ingress/spec.js";
import type { IssuerRef } from "../../../../src/kinds/shared/certificates.js";
import type { IssuedCertificate } from "../../../fakes/agent/pki.js";
import { AT } from "../../shared/fixtures.js";
import { ingress, tlsSecret, WEB } from "./fixtures.js";
import { type Certificates, healthyInput, type Over, resolved } from "./inputs.js";

/** The Certificate's and its Secret's name for expose web of ingress grafana. */
export const CERT_NAME = "grafana.web-tls";
export const CA: IssuerRef = { name: "ca", kind: "ClusterIssuer", group: "cert-manager.io" };
/** The names expose web publishes (host dash, alias grafana-eu). */
export const PUBLISHED = ["dash.ts.example.com", "grafana-eu.ts.example.com"];

/** Ingress grafana whose expose web asks ClusterIssuer ca (or, with `tls`, what is given). */
export const issuerIngress = (tls: Record<string, unknown> = { issuerRef: { name: "ca", kind: "ClusterIssuer" } }) =>
  ingress("grafana", { exposes: [{ ...WEB, tls }] });

/** The Tailnet allowing ClusterIssuer ca (and with `spec` more of spec.certificates). */
export const allowingCa = (certificates: Record<string, unknown> = {}) =>
  resolved({ certificates: { allowedClusterIssuers: [{ name: "ca" }], ...certificates } });

type CertStatus = {
  ready?: { status: string; reason: string; message: string };
  issuing?: { status: string; reason: string; message: string };
  renewalTime?: string;
  lastFailureTime?: string;
};

/** The Certificate as observed: the operator's own child with cert-manager's status. */
export function observedCertificate(parent: K8sObject, s: CertStatus, names = PUBLISHED): K8sObject {
  const spec = readIngressSpec(parent);
  const cert = ingressCertificate(parent, spec.exposes[0], CA, names);
  cert.metadata.generation = 1;
  const conditions = [
    ...(s.ready ? [{ type: "Ready", observedGeneration: 1, ...s.ready }] : []),
    ...(s.issuing ? [{ type: "Issuing", observedGeneration: 1, ...s.issuing }] : []),
  ];
  cert.status = {
    conditions,
    ...(s.ready?.status === "True" ? { notAfter: "2027-01-01T00:00:00Z", notBefore: "2026-11-01T00:00:00Z" } : {}),
    ...(s.renewalTime ? { renewalTime: s.renewalTime } : {}),
    ...(s.lastFailureTime ? { lastFailureTime: s.lastFailureTime } : {}),
  };
  return cert;
}

export const READY = { status: "True", reason: "Ready", message: "Certificate is up to date and has not expired" };
export const FAILED = {
  status: "False",
  reason: "Failed",
  message:
    'The certificate request has failed to complete and will be retried: The CSR PEM requests a commonName that is not present in the list of dnsNames or ipAddresses.\nIf a commonName is set, ACME requires that the value is also present in the list of dnsNames: "x" does not exist in []',
};

/** The healthy ingress with its certificate from ClusterIssuer ca, issued and served. */
export function issuedInput(good: IssuedCertificate, over: Over = {}): IngressDecideInput {
  const parent = over.parent ?? issuerIngress();
  return healthyInput(good, {
    parent,
    tailnet: allowingCa(),
    certificatesWatched: true,
    children: [observedCertificate(parent, { ready: READY, renewalTime: "2026-12-11T00:00:00Z" })],
    tlsSecrets: new Map([[CERT_NAME, tlsSecret(CERT_NAME, good)]]),
    ...over,
  });
}

export interface CertificateRow {
  name: string;
  input: () => IngressDecideInput;
  expect: { TLSReady: string; status: "True" | "False"; Ready: string; message?: string };
}

/** One row per TLSReady reason of the Certificate path, plus the served ones (Valid through an issuer). */
export function certificateRows(certs: () => Certificates): CertificateRow[] {
  const good = () => certs().good;
  const pending = (s: CertStatus) => {
    const parent = issuerIngress();
    return issuedInput(good(), { children: [observedCertificate(parent, s)], tlsSecrets: new Map() });
  };
  return [
    {
      name: "issued and served: Valid",
      input: () => issuedInput(good()),
      expect: {
        TLSReady: "Valid",
        status: "True",
        Ready: "Ready",
        message:
          "the certificate covers the names of the expose; the first expires at 2027-01-01T00:00:00Z (Secret monitoring/grafana.web-tls)",
      },
    },
    {
      name: "cert-manager's Certificate is not watched: CertManagerMissing",
      input: () => issuedInput(good(), { certificatesWatched: false, children: [], tlsSecrets: new Map() }),
      expect: {
        TLSReady: "CertManagerMissing",
        status: "False",
        Ready: "CertManagerMissing",
        message:
          "spec.exposes[0].tls names ClusterIssuer ca, but cert-manager's Certificate is not a child type of TailnetIngresses: install cert-manager, then the operator's cert-manager component (docs/OPERATIONS.md, Certificates)",
      },
    },
    {
      name: "tls {} and the Tailnet names no issuer: NoIssuer",
      input: () => issuedInput(good(), { parent: issuerIngress({}), children: [], tlsSecrets: new Map() }),
      expect: {
        TLSReady: "NoIssuer",
        status: "False",
        Ready: "NoIssuer",
        message:
          "spec.exposes[0].tls names neither secretName nor issuerRef, and Tailnet home has no spec.certificates.issuerRef",
      },
    },
    {
      name: "a ClusterIssuer the Tailnet does not list: IssuerNotAllowed",
      input: () =>
        issuedInput(good(), {
          parent: issuerIngress({ issuerRef: { name: "public-acme", kind: "ClusterIssuer" } }),
          children: [],
          tlsSecrets: new Map(),
        }),
      expect: {
        TLSReady: "IssuerNotAllowed",
        status: "False",
        Ready: "IssuerNotAllowed",
        message:
          "spec.exposes[0].tls: ClusterIssuer public-acme is not in Tailnet home's spec.certificates.allowedClusterIssuers, so no Certificate is asked for",
      },
    },
    {
      name: "the Certificate was just asked for: CertificatePending",
      input: () => issuedInput(good(), { children: [], tlsSecrets: new Map() }),
      expect: {
        TLSReady: "CertificatePending",
        status: "False",
        Ready: "CertificatePending",
        message:
          "Certificate monitoring/grafana.web-tls for dash.ts.example.com, grafana-eu.ts.example.com was asked for",
      },
    },
    {
      name: "cert-manager is issuing: CertificatePending with its message",
      input: () =>
        pending({
          ready: { status: "False", reason: "DoesNotExist", message: "Issuing certificate as Secret does not exist" },
          issuing: { status: "True", reason: "DoesNotExist", message: "Issuing certificate as Secret does not exist" },
        }),
      expect: {
        TLSReady: "CertificatePending",
        status: "False",
        Ready: "CertificatePending",
        message:
          "Certificate monitoring/grafana.web-tls (ClusterIssuer ca) is not issued yet: Issuing certificate as Secret does not exist",
      },
    },
    {
      name: "the issuance failed: CertificateFailed, cert-manager's message on one line",
      input: () =>
        pending({
          ready: { status: "False", reason: "DoesNotExist", message: "Issuing certificate as Secret does not exist" },
          issuing: FAILED,
          lastFailureTime: "2026-11-29T09:00:00Z",
        }),
      expect: {
        TLSReady: "CertificateFailed",
        status: "False",
        Ready: "CertificateFailed",
        message:
          "Certificate monitoring/grafana.web-tls (ClusterIssuer ca): The certificate request has failed to complete and will be retried: The CSR PEM requests a commonName that is not present in the list of dnsNames or ipAddresses. If a commonName is set, ACME requires that the value is also present in the l…",
      },
    },
    {
      name: "renewal an hour past cert-manager's renewalTime: TLSExpiring (still serving)",
      input: () => {
        const parent = issuerIngress();
        return issuedInput(good(), {
          children: [observedCertificate(parent, { ready: READY, renewalTime: "2026-11-29T08:30:00Z" })],
        });
      },
      expect: {
        TLSReady: "TLSExpiring",
        status: "True",
        Ready: "Ready",
        message:
          "Certificate monitoring/grafana.web-tls: renewal overdue (cert-manager was to renew at 2026-11-29T08:30:00Z); the served certificate expires at 2027-01-01T00:00:00Z",
      },
    },
    {
      name: "the renewal failed while the old certificate serves: TLSExpiring naming the failure",
      input: () => {
        const parent = issuerIngress();
        const failing = { ready: READY, issuing: FAILED, lastFailureTime: "2026-11-29T09:00:00Z" };
        return issuedInput(good(), { children: [observedCertificate(parent, failing)] });
      },
      expect: { TLSReady: "TLSExpiring", status: "True", Ready: "Ready" },
    },
    {
      name: "the issued Secret does not cover a published name: TLSNameMismatch",
      input: () => issuedInput(good(), { tlsSecrets: new Map([[CERT_NAME, tlsSecret(CERT_NAME, certs().dashOnly)]]) }),
      expect: {
        TLSReady: "TLSNameMismatch",
        status: "False",
        Ready: "TLSNameMismatch",
        message:
          "the certificate in Secret monitoring/grafana.web-tls (spec.exposes[0].tls) does not cover grafana-eu.ts.example.com (it covers dash.ts.example.com)",
      },
    },
    {
      name: "names changed, cert-manager has not reissued: CertificatePending, not a mismatch",
      input: () => {
        const parent = issuerIngress();
        const old = observedCertificate(parent, { ready: READY }, ["dash.ts.example.com"]);
        return issuedInput(good(), {
          children: [old],
          tlsSecrets: new Map([[CERT_NAME, tlsSecret(CERT_NAME, certs().dashOnly)]]),
        });
      },
      expect: { TLSReady: "CertificatePending", status: "False", Ready: "CertificatePending" },
    },
    {
      name: "tls {} with the Tailnet's default ClusterIssuer (allowed without listing): Valid",
      input: () =>
        issuedInput(good(), {
          parent: issuerIngress({}),
          tailnet: resolved({ certificates: { issuerRef: { name: "ca", kind: "ClusterIssuer" } } }),
        }),
      expect: { TLSReady: "Valid", status: "True", Ready: "Ready" },
    },
  ];
}

export { AT };
