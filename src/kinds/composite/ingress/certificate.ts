/**
 * An expose's certificate from cert-manager (pure): which issuer it uses (its tls.issuerRef, or `tls: {}` with the
 * Tailnet's spec.certificates.issuerRef), the Certificate child asked for exactly the names the expose publishes
 * (status.exposes[]: never a name held by another machine or an older ingress), into the Secret
 * `<ingress>.<expose>-tls` that the agent mounts, and TLSReady's verdict on it: the Certificate's conditions
 * (cert-manager.io/v1 CertificateStatus: Ready, Issuing, lastFailureTime, renewalTime), then the Secret itself
 * (tls.ts checkTlsSecret). cert-manager's messages are condensed (one line, bounded); they name requests and
 * issuers, never key material.
 */
import { IngressReason as R } from "../../../conditions/tables/ingress.js";
import { commonLabels } from "../../../k8s/labels.js";
import { type K8sObject, recordOf } from "../../../k8s/objects.js";
import {
  CERTIFICATE_API_VERSION,
  CERTIFICATE_KIND,
  type IssuerRef,
  issuerAllowed,
  showIssuer,
  type TailnetCertificates,
} from "../../shared/certificates.js";
import { listNames } from "../../shared/node-names.js";
import type { ExposeSpec, IngressSpec } from "./spec.js";
import { checkTlsSecret } from "./tls-secret.js";

/**
 * The Certificate's and its Secret's name for an expose: `<ingress>.<expose>-tls`. An expose name is a DNS label (no
 * dot), so the last dot splits the two and no two exposes of a namespace share a name (with a dash, ingress `a-b`'s
 * expose `c` and ingress `a`'s expose `b-c` would).
 */
export const certificateName = (parent: K8sObject, e: Pick<ExposeSpec, "name">) =>
  `${parent.metadata.name}.${e.name}-tls`;

/** The Secret the agent mounts for an expose: its tls.secretName, else the Certificate's; none without tls. */
export function servedSecretOf(parent: K8sObject, e: ExposeSpec): string | undefined {
  if (e.tlsSecret) return e.tlsSecret;
  return e.hasTls ? certificateName(parent, e) : undefined;
}

/** How an expose gets its certificate once the Tailnet is known. */
export type TlsSource =
  | { kind: "none" }
  | { kind: "secret"; secret: string }
  | { kind: "issuer"; issuer: IssuerRef | undefined; secret: string };

export function tlsSourceOf(parent: K8sObject, e: ExposeSpec, defaults: TailnetCertificates | undefined): TlsSource {
  if (e.tlsSecret) return { kind: "secret", secret: e.tlsSecret };
  if (!e.hasTls) return { kind: "none" };
  return { kind: "issuer", issuer: e.tlsIssuer ?? defaults?.issuerRef, secret: certificateName(parent, e) };
}

/** Renewal later than this past cert-manager's own renewalTime is reported as TLSExpiring. */
export const RENEWAL_GRACE_MS = 60 * 60 * 1000;
const MAX_MESSAGE = 240;

/** cert-manager's message on one line, bounded. */
export const condense = (text: string) => {
  const line = text.replace(/\s+/g, " ").trim();
  return line.length > MAX_MESSAGE ? `${line.slice(0, MAX_MESSAGE - 1)}…` : line;
};

export function ingressCertificate(parent: K8sObject, e: ExposeSpec, issuer: IssuerRef, dnsNames: string[]): K8sObject {
  const name = certificateName(parent, e);
  const labels = commonLabels(parent, "ingress");
  return {
    apiVersion: CERTIFICATE_API_VERSION,
    kind: CERTIFICATE_KIND,
    metadata: { name, namespace: parent.metadata.namespace, labels },
    spec: {
      secretName: name,
      dnsNames,
      issuerRef: { name: issuer.name, kind: issuer.kind, group: issuer.group },
      // a fresh key per renewal, and only the last request kept
      privateKey: { rotationPolicy: "Always" },
      revisionHistoryLimit: 1,
      secretTemplate: { labels },
    },
  };
}

type Fail =
  | "CertManagerMissing"
  | "NoIssuer"
  | "IssuerNotAllowed"
  | "CertificatePending"
  | "CertificateFailed"
  | "TLSSecretMissing"
  | "TLSSecretInvalid"
  | "TLSNameMismatch"
  | "TLSExpired";

/** One issuer expose's verdict: a problem, or the served certificate's end and, when renewal is late, why. */
export type IssuedCheck =
  | { ok: false; reason: Fail; message: string }
  | { ok: true; notAfter: Date; secret: string; expiring?: string };

export interface IssuedInput {
  namespace: string;
  expose: ExposeSpec;
  source: Extract<TlsSource, { kind: "issuer" }>;
  certificates: TailnetCertificates | undefined;
  tailnet: string;
  /** Whether Metacontroller watches Certificates for TailnetIngresses (certificates.ts CERTIFICATE_CHILD_KEY). */
  watched: boolean;
  /** The names the expose publishes (the Certificate's dnsNames). */
  names: readonly string[];
  certificate?: K8sObject;
  secret?: K8sObject;
  now: Date;
}

/** The issuer the expose may use, or why none: what decides whether a Certificate child is returned at all. */
export function usableIssuer(input: Omit<IssuedInput, "certificate" | "secret" | "now">): IssuedCheck | IssuerRef {
  const f = `spec.exposes[${input.expose.index}].tls`;
  const { issuer } = input.source;
  if (!issuer) {
    return {
      ok: false,
      reason: R.NoIssuer,
      message: `${f} names neither secretName nor issuerRef, and Tailnet ${input.tailnet} has no spec.certificates.issuerRef`,
    };
  }
  if (!input.watched) {
    return {
      ok: false,
      reason: R.CertManagerMissing,
      message: `${f} names ${showIssuer(issuer)}, but cert-manager's Certificate is not a child type of TailnetIngresses: install cert-manager, then the operator's cert-manager component (docs/OPERATIONS.md, Certificates)`,
    };
  }
  if (input.certificates && !issuerAllowed(issuer, input.certificates)) {
    return {
      ok: false,
      reason: R.IssuerNotAllowed,
      message: `${f}: ${showIssuer(issuer)} is not in Tailnet ${input.tailnet}'s spec.certificates.allowedClusterIssuers, so no Certificate is asked for`,
    };
  }
  return issuer;
}

type Cond = { type?: unknown; status?: unknown; reason?: unknown; message?: unknown; observedGeneration?: unknown };
const conditionOf = (cert: K8sObject, type: string): Cond | undefined => {
  const list = recordOf(cert.status).conditions;
  return (Array.isArray(list) ? (list as Cond[]) : []).find((c) => c?.type === type);
};
const text = (v: unknown) => (typeof v === "string" ? v : "");
const sameNames = (a: readonly string[], b: unknown) =>
  Array.isArray(b) && a.length === b.length && a.every((n, i) => n === b[i]);

/** Whether cert-manager has acted on the Certificate as it is now asked for (names, issuer, generation). */
function current(cert: K8sObject, names: readonly string[], issuer: IssuerRef): boolean {
  const spec = recordOf(cert.spec);
  const ref = recordOf(spec.issuerRef);
  const ready = conditionOf(cert, "Ready");
  const gen = Number(cert.metadata.generation ?? 0);
  return (
    sameNames(names, spec.dnsNames) &&
    ref.name === issuer.name &&
    (ref.kind ?? "Issuer") === issuer.kind &&
    (ref.group ?? "cert-manager.io") === issuer.group &&
    Number(ready?.observedGeneration ?? gen) >= gen
  );
}

/** TLSReady for one expose whose certificate cert-manager issues. */
export function checkIssued(input: IssuedInput): IssuedCheck {
  const usable = usableIssuer(input);
  if ("ok" in usable) return usable;
  const id = `Certificate ${input.namespace}/${input.source.secret}`;
  if (input.names.length === 0) {
    return {
      ok: false,
      reason: R.CertificatePending,
      message: `no name of spec.exposes[${input.expose.index}] is published yet, so no Certificate is asked for`,
    };
  }
  const cert = input.certificate;
  if (!cert) {
    return { ok: false, reason: R.CertificatePending, message: `${id} for ${listNames(input.names)} was asked for` };
  }
  const ready = conditionOf(cert, "Ready");
  const issuing = conditionOf(cert, "Issuing");
  const failedAt = text(recordOf(cert.status).lastFailureTime);
  const failed =
    (issuing?.status === "False" && issuing.reason === "Failed") || (failedAt !== "" && issuing?.status !== "True");
  const served = checkTlsSecret(
    input.secret,
    { namespace: input.namespace, name: input.source.secret, field: `spec.exposes[${input.expose.index}].tls` },
    input.names,
    input.now,
  );
  const upToDate = current(cert, input.names, usable) && ready?.status === "True";
  if (!served.ok && (!upToDate || served.reason === "TLSSecretMissing")) {
    // nothing usable is served yet: the Certificate says why
    if (failed) {
      const why = condense(text(issuing?.message) || text(ready?.message) || "the last issuance failed");
      return { ok: false, reason: R.CertificateFailed, message: `${id} (${showIssuer(usable)}): ${why}` };
    }
    const why = condense(text(ready?.message) || "waiting for cert-manager");
    return {
      ok: false,
      reason: R.CertificatePending,
      message: `${id} (${showIssuer(usable)}) is not issued yet: ${why}`,
    };
  }
  if (!served.ok) return served;
  return {
    ok: true,
    notAfter: served.notAfter,
    secret: input.source.secret,
    ...expiring(cert, id, failed, issuing, input.now),
  };
}

/** Renewal overdue (cert-manager's renewalTime passed an hour ago) or failing while the old certificate still serves. */
function expiring(
  cert: K8sObject,
  id: string,
  failed: boolean,
  issuing: Cond | undefined,
  now: Date,
): { expiring?: string } {
  const status = recordOf(cert.status);
  const notAfter = text(status.notAfter);
  if (failed) {
    const why = condense(text(issuing?.message) || "the last issuance failed");
    return { expiring: `${id}: renewal failed (${why}); the served certificate expires at ${notAfter || "?"}` };
  }
  const renewal = Date.parse(text(status.renewalTime));
  if (Number.isFinite(renewal) && now.getTime() > renewal + RENEWAL_GRACE_MS) {
    return {
      expiring: `${id}: renewal overdue (cert-manager was to renew at ${text(status.renewalTime)}); the served certificate expires at ${notAfter || "?"}`,
    };
  }
  return {};
}

/** The observed Certificate children by name. */
export function certificatesOf(children: readonly K8sObject[]): Map<string, K8sObject> {
  return new Map(
    children
      .filter((c) => c.kind === CERTIFICATE_KIND && c.apiVersion === CERTIFICATE_API_VERSION)
      .map((c) => [c.metadata.name, c] as const),
  );
}

/**
 * The Certificate children: one per expose whose issuer the namespace may use, for the names it publishes; none
 * for an expose that publishes no name, and none at all unless Metacontroller watches Certificates.
 */
export function certificateChildren(
  parent: K8sObject,
  spec: IngressSpec,
  ctx: {
    tailnet: string;
    certificates: TailnetCertificates | undefined;
    watched: boolean;
    publishedOf: (index: number) => string[];
  },
): K8sObject[] {
  if (spec.mode === "tcp") return [];
  return spec.exposes.flatMap((e) => {
    const source = tlsSourceOf(parent, e, ctx.certificates);
    if (source.kind !== "issuer") return [];
    const names = ctx.publishedOf(e.index);
    const issuer = usableIssuer({
      namespace: parent.metadata.namespace ?? "",
      expose: e,
      source,
      certificates: ctx.certificates,
      tailnet: ctx.tailnet,
      watched: ctx.watched,
      names,
    });
    if ("ok" in issuer || names.length === 0) return [];
    return [ingressCertificate(parent, e, issuer, names)];
  });
}
