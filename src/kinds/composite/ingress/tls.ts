/**
 * TLSReady (pure): per http expose (and kube-api expose with tls), its kubernetes.io/tls Secret from `related`
 * checked against the expose's DNS name and aliases and `now` (tls-secret.ts), or, with a cert-manager issuer, its
 * Certificate first (certificate.ts). Messages never carry key material.
 */
import { IngressCondition as C, IngressReason as R } from "../../../conditions/tables/ingress.js";
import type { K8sObject } from "../../../k8s/objects.js";
import type { TailnetCertificates } from "../../shared/certificates.js";
import { checkIssued, type IssuedCheck, tlsSourceOf } from "./certificate.js";
import { cond, type IngressCondition } from "./conditions.js";
import type { ExposeSpec, IngressSpec } from "./spec.js";
import { checkTlsSecret, type FailReason, iso } from "./tls-secret.js";

export { checkTlsSecret, type SecretCheck, TLS_CERT_KEY, TLS_KEY_KEY, TLS_SECRET_TYPE } from "./tls-secret.js";

export interface TlsOutcome {
  condition: IngressCondition<"TLSReady">;
  /** The earliest validity end among valid certificates (for a resync when it passes). */
  nextExpiry?: Date;
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
