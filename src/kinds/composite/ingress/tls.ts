/**
 * TLSReady (pure): the kubernetes.io/tls Secret of every http expose, read from `related` and
 * checked with node:crypto's X509Certificate against the expose's DNS name and aliases and `now`.
 * Messages name the Secret, the spec field and the uncovered name; they never carry key material
 * (library error texts are not passed through).
 */
import { createPrivateKey, X509Certificate } from "node:crypto";
import { IngressCondition as C, IngressReason as R } from "../../../conditions/tables/ingress.js";
import type { K8sObject } from "../../../k8s/objects.js";
import type { TailnetCertificates } from "../../shared/certificates.js";
import { listNames } from "../../shared/node-names.js";
import { checkIssued, type IssuedCheck, tlsSourceOf } from "./certificate.js";
import { cond, type IngressCondition } from "./conditions.js";
import type { ExposeSpec, IngressSpec } from "./spec.js";

export const TLS_SECRET_TYPE = "kubernetes.io/tls";
export const TLS_CERT_KEY = "tls.crt";
export const TLS_KEY_KEY = "tls.key";

type FailReason = "TLSSecretMissing" | "TLSSecretInvalid" | "TLSNameMismatch" | "TLSExpired";

/** One Secret's verdict: a problem, or the certificate's validity end and the names it was checked for. */
export type SecretCheck = { ok: false; reason: FailReason; message: string } | { ok: true; notAfter: Date };

export interface TlsOutcome {
  condition: IngressCondition<"TLSReady">;
  /** The earliest validity end among valid certificates (for a resync when it passes). */
  nextExpiry?: Date;
}

const pem = (secret: K8sObject, key: string): string | undefined => {
  const raw = (secret.data as Record<string, unknown> | undefined)?.[key];
  if (typeof raw !== "string" || raw === "") return undefined;
  const text = Buffer.from(raw, "base64").toString("utf8");
  return text.trim() ? text : undefined;
};

const iso = (d: Date) => d.toISOString().replace(".000Z", "Z");

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

/** What TLSReady reads besides the spec (decide's facts, the Tailnet's settings and the names). */
export interface TlsContext {
  parent: K8sObject;
  /** The related Secrets of the namespace by name (the exposes' and their Certificates'). */
  secrets: ReadonlyMap<string, K8sObject>;
  /** The observed Certificate children by name. */
  certificates: ReadonlyMap<string, K8sObject>;
  /** Whether Metacontroller watches Certificates for TailnetIngresses. */
  certificatesWatched: boolean;
  /** The Tailnet's name and spec.certificates. */
  tailnet: { name: string; certificates?: TailnetCertificates };
  /** Expose i's DNS name and aliases, as configured (a Secret must cover them all). */
  namesOf: (index: number) => string[];
  /** Expose i's published names (a Certificate is asked for these only). */
  publishedOf: (index: number) => string[];
  now: Date;
}

type ExposeVerdict =
  | { ok: false; reason: FailReason | IssuedFail; message: string }
  | { ok: true; notAfter: Date; secret: string; expiring?: string };
type IssuedFail = Extract<IssuedCheck, { ok: false }>["reason"];

function exposeVerdict(e: ExposeSpec, ctx: TlsContext): ExposeVerdict | undefined {
  const namespace = ctx.parent.metadata.namespace ?? "";
  const source = tlsSourceOf(ctx.parent, e, ctx.tailnet.certificates);
  if (source.kind === "none") return undefined;
  if (source.kind === "secret") {
    const field = `spec.exposes[${e.index}].tls`;
    const r = checkTlsSecret(
      ctx.secrets.get(source.secret),
      { namespace, name: source.secret, field },
      ctx.namesOf(e.index),
      ctx.now,
    );
    return r.ok ? { ...r, secret: source.secret } : r;
  }
  return checkIssued({
    namespace,
    expose: e,
    source,
    certificates: ctx.tailnet.certificates,
    tailnet: ctx.tailnet.name,
    watched: ctx.certificatesWatched,
    names: ctx.publishedOf(e.index),
    certificate: ctx.certificates.get(source.secret),
    secret: ctx.secrets.get(source.secret),
    now: ctx.now,
  });
}

/**
 * TLSReady for the ingress: True/TLSNotRequired in tcp mode and in kube-api mode without tls; otherwise the first
 * problem in expose order, or True/TLSExpiring (a cert-manager renewal late or failing while the certificate still
 * serves), or True/Valid. Without the Tailnet (and so its baseDomain and certificates settings) decide does not
 * call this: TLSReady is not evaluated.
 */
export function tlsCondition(spec: IngressSpec, ctx: TlsContext): TlsOutcome {
  if (spec.mode === "tcp") {
    return {
      condition: cond(C.TLSReady, "True", R.TLSNotRequired, "mode tcp: TLS is end to end, not terminated"),
    };
  }
  if (spec.mode === "kube-api" && !spec.exposes.some((e) => e.hasTls)) {
    return {
      condition: cond(
        C.TLSReady,
        "True",
        R.TLSNotRequired,
        "mode kube-api without tls: plain HTTP inside WireGuard; the agent speaks TLS to the API server",
      ),
    };
  }
  let nextExpiry: Date | undefined;
  let nextSecret = "";
  let late: string | undefined;
  const checked = new Set<string>();
  for (const e of spec.exposes) {
    const result = exposeVerdict(e, ctx);
    if (!result) continue;
    if (!result.ok) return { condition: cond(C.TLSReady, "False", result.reason, result.message) };
    checked.add(result.secret);
    late ??= result.expiring;
    if (!nextExpiry || result.notAfter < nextExpiry) {
      nextExpiry = result.notAfter;
      nextSecret = result.secret;
    }
  }
  if (late) return { condition: cond(C.TLSReady, "True", R.TLSExpiring, late), nextExpiry };
  const n = spec.exposes.length;
  const namespace = ctx.parent.metadata.namespace ?? "";
  const message =
    `${checked.size === 1 ? "the certificate covers" : `${checked.size} certificates cover`} the names of ` +
    `${n === 1 ? "the expose" : `all ${n} exposes`}; the first expires at ${nextExpiry ? iso(nextExpiry) : "?"} ` +
    `(Secret ${namespace}/${nextSecret})`;
  return { condition: cond(C.TLSReady, "True", R.Valid, message), nextExpiry };
}
