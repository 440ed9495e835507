/**
 * One kubernetes.io/tls Secret checked for one expose (pure): present, a usable pair, covering the names, valid at
 * `now` (node:crypto's X509Certificate). Messages name the Secret, the spec field and the uncovered name; they never
 * carry key material (library error texts are not passed through). Used for a Secret the expose names and for the
 * Secret of its cert-manager Certificate (certificate.ts).
 */
import { createPrivateKey, X509Certificate } from "node:crypto";
import type { K8sObject } from "../../../k8s/objects.js";
import { listNames } from "../../shared/node-names.js";

export const TLS_SECRET_TYPE = "kubernetes.io/tls";
export const TLS_CERT_KEY = "tls.crt";
export const TLS_KEY_KEY = "tls.key";

export type FailReason = "TLSSecretMissing" | "TLSSecretInvalid" | "TLSNameMismatch" | "TLSExpired";

/** One Secret's verdict: a problem, or the certificate's validity end and the names it was checked for. */
export type SecretCheck = { ok: false; reason: FailReason; message: string } | { ok: true; notAfter: Date };

const pem = (secret: K8sObject, key: string): string | undefined => {
  const raw = (secret.data as Record<string, unknown> | undefined)?.[key];
  if (typeof raw !== "string" || raw === "") return undefined;
  const text = Buffer.from(raw, "base64").toString("utf8");
  return text.trim() ? text : undefined;
};

export const iso = (d: Date) => d.toISOString().replace(".000Z", "Z");

/** Checks one Secret for one expose: present, a usable pair, covering `names`, valid at `now`. */
export function checkTlsSecret(
  secret: K8sObject | undefined,
  ref: { namespace: string; name: string; field: string },
  names: readonly string[],
  now: Date,
): SecretCheck {
  const id = `Secret ${ref.namespace}/${ref.name} (${ref.field})`;
  const invalid = (problem: string): SecretCheck => ({
    ok: false,
    reason: "TLSSecretInvalid",
    message: `${id} ${problem}`,
  });
  if (!secret) return { ok: false, reason: "TLSSecretMissing", message: `${id} does not exist` };
  const type = typeof secret.type === "string" ? secret.type : "Opaque";
  if (type !== TLS_SECRET_TYPE) return invalid(`is of type ${type}, not ${TLS_SECRET_TYPE}`);
  const certPem = pem(secret, TLS_CERT_KEY);
  const keyPem = pem(secret, TLS_KEY_KEY);
  if (!certPem) return invalid(`has no ${TLS_CERT_KEY}`);
  if (!keyPem) return invalid(`has no ${TLS_KEY_KEY}`);
  let cert: X509Certificate;
  try {
    cert = new X509Certificate(certPem);
  } catch {
    return invalid(`has a ${TLS_CERT_KEY} that is not a PEM certificate`);
  }
  try {
    if (!cert.checkPrivateKey(createPrivateKey(keyPem))) {
      return invalid(`has a ${TLS_KEY_KEY} that does not belong to the certificate in ${TLS_CERT_KEY}`);
    }
  } catch {
    return invalid(`has a ${TLS_KEY_KEY} that is not a PEM private key`);
  }
  const uncovered = names.filter((n) => cert.checkHost(n) === undefined);
  if (uncovered.length > 0) {
    const covers = (cert.subjectAltName ?? "")
      .split(", ")
      .filter((s) => s.startsWith("DNS:"))
      .map((s) => s.slice(4));
    return {
      ok: false,
      reason: "TLSNameMismatch",
      message: `the certificate in ${id} does not cover ${listNames(uncovered)} (it covers ${covers.length ? listNames(covers) : "no DNS name"})`,
    };
  }
  const notBefore = new Date(cert.validFrom);
  const notAfter = new Date(cert.validTo);
  if (now.getTime() >= notAfter.getTime()) {
    return {
      ok: false,
      reason: "TLSExpired",
      message: `the certificate in ${id} expired at ${iso(notAfter)}`,
    };
  }
  if (now.getTime() < notBefore.getTime())
    return invalid(`holds a certificate that is not valid before ${iso(notBefore)}`);
  return { ok: true, notAfter };
}
