/**
 * Certificates through cert-manager (pure): the issuer an ingress expose names, the Tailnet's default and
 * allowlist (Tailnet.spec.certificates), and which issuer a namespace may use. The threat is a namespace
 * editor: an Issuer lives in its own namespace (it signs with what that namespace holds), a ClusterIssuer
 * signs for anyone who names it, so only the ClusterIssuers the Tailnet lists, or names as its default, are
 * used; and the names on the Certificate are only those the ingress publishes (ingress/certificate.ts).
 */
import { CERT_MANAGER_GROUP } from "../../api/schemas/common.js";
import { recordOf } from "../../k8s/objects.js";

/** cert-manager's Certificate kind (cert-manager.io/v1), as the operator returns it. */
export const CERTIFICATE_API_VERSION = "cert-manager.io/v1";
export const CERTIFICATE_KIND = "Certificate";
/**
 * The key of Certificates in a sync request's `children`: Metacontroller puts it there, even empty, for every
 * child type its CompositeController lists (metacontroller pkg/controller/composite/controller.go
 * claimChildren, "Always include the requested groups"), and it can list it only while cert-manager's CRD
 * exists (newParentController refuses an unknown child type). So its presence says both.
 */
export const CERTIFICATE_CHILD_KEY = `${CERTIFICATE_KIND}.${CERTIFICATE_API_VERSION}`;

export interface IssuerRef {
  name: string;
  kind: "Issuer" | "ClusterIssuer";
  group: string;
}

export interface TailnetCertificates {
  /** spec.certificates.issuerRef: the issuer of `tls: {}`. */
  issuerRef?: IssuerRef;
  /** spec.certificates.allowedClusterIssuers (with the default group). */
  allowedClusterIssuers: { name: string; group: string }[];
}

const str = (v: unknown): string | undefined => (typeof v === "string" && v !== "" ? v : undefined);

/** An issuerRef as written (CRD defaults applied again: kind Issuer, group cert-manager.io); undefined without a name. */
export function readIssuerRef(raw: unknown): IssuerRef | undefined {
  const r = recordOf(raw);
  const name = str(r.name);
  if (!name) return undefined;
  return {
    name,
    kind: r.kind === "ClusterIssuer" ? "ClusterIssuer" : "Issuer",
    group: str(r.group) ?? CERT_MANAGER_GROUP,
  };
}

export function readTailnetCertificates(tailnetSpec: unknown): TailnetCertificates {
  const c = recordOf(recordOf(tailnetSpec).certificates);
  const issuerRef = readIssuerRef(c.issuerRef);
  const allowed = (Array.isArray(c.allowedClusterIssuers) ? c.allowedClusterIssuers : []).flatMap((raw) => {
    const a = recordOf(raw);
    const name = str(a.name);
    return name ? [{ name, group: str(a.group) ?? CERT_MANAGER_GROUP }] : [];
  });
  return { ...(issuerRef ? { issuerRef } : {}), allowedClusterIssuers: allowed };
}

/** How an issuer is named in messages: `ClusterIssuer ca` or `Issuer ca (group example.com)`. */
export function showIssuer(ref: IssuerRef): string {
  return `${ref.kind} ${ref.name}${ref.group === CERT_MANAGER_GROUP ? "" : ` (group ${ref.group})`}`;
}

/**
 * Whether a namespace may use `ref`: an Issuer always (it is the namespace's own), a ClusterIssuer only when
 * the Tailnet lists it in allowedClusterIssuers or names it as its default issuer.
 */
export function issuerAllowed(ref: IssuerRef, certs: TailnetCertificates): boolean {
  if (ref.kind === "Issuer") return true;
  const same = (a: { name: string; group: string }) => a.name === ref.name && a.group === ref.group;
  const d = certs.issuerRef;
  return certs.allowedClusterIssuers.some(same) || (d?.kind === "ClusterIssuer" && same(d));
}
