/**
 * The TailnetIngress an Ingress of our class becomes (pure): mode http, one expose per host on port
 * 443 with that host's backend (what no path matches), its paths and certificate: the spec.tls Secret naming it, else
 * the issuer of cert-manager's annotations (tls.issuerRef), else the Tailnet's default issuer (`tls: {}`). A host is a name in the Tailnet's zone — a bare label
 * (`grafana`) or `<label>.<zone>` — and becomes the expose's `host`; every name rule of a TailnetIngress
 * (docs/dns-names.md: a node's name wins, the older claimant keeps a name, the namespace's subtree) then
 * applies unchanged. Named Service ports are resolved here against the observed Service.
 */

import { API_VERSION, GROUP } from "../../../api/schemas.js";
import type { K8sObject } from "../../../k8s/objects.js";
import { hostLabel } from "../../shared/ingress-names.js";
import { isDns1035Label } from "../annotations.js";
import type { BackendRef, HostRoute, IngressClassSpec, TlsEntry } from "./spec.js";

/** A host's paths with their Service ports resolved, as TailnetIngress spec.exposes[].paths. */
function resolvePaths(route: HostRoute, services: readonly K8sObject[]): Record<string, unknown>[] | AttachmentRefusal {
  const out: Record<string, unknown>[] = [];
  for (const p of route.paths) {
    const port = resolvePort(p, services);
    if (typeof port !== "number") return port;
    out.push({
      path: p.path,
      pathType: p.pathType,
      backend: { service: p.backend.service, port, ...h2cOf(p.backend.service, port, services) },
    });
  }
  return out;
}

/** On the attachment: the Ingress it was made for (`kubectl get tni -l tailnet.internal/ingress=<name>`). */
export const INGRESS_LABEL = `${GROUP}/ingress`;
/** The tailnet port of every expose (left out of the attachment, shared/expose-port.ts): https. */

export type AttachmentRefusal = { reason: "UnsupportedHost" | "UnresolvedPort" | "TLSMissing"; message: string };

const fqdn = (label: string, zone: string | undefined) => (zone ? `${label}.${zone}` : label);

/** The spec.tls entry naming the host (as written, or as its FQDN), else the one naming no host. */
function tlsFor(tls: readonly TlsEntry[], names: readonly string[]): TlsEntry | undefined {
  return (
    tls.find((t) => t.hosts.some((h) => names.includes(h.replace(/\.$/, "")))) ?? tls.find((t) => t.hosts.length === 0)
  );
}

/**
 * A Service port whose appProtocol is `kubernetes.io/h2c` (Kubernetes' standard application protocol for
 * HTTP/2 without TLS, KEP-3726) is spoken to over h2c (TailnetIngress backend.protocol; docs/http2.md).
 */
function h2cOf(service: string, port: number, services: readonly K8sObject[]): { protocol?: "h2c" } {
  const svc = services.find((s) => s.metadata.name === service);
  const ports = (svc?.spec as { ports?: { port?: number; appProtocol?: string }[] } | undefined)?.ports ?? [];
  return ports.some((p) => p.port === port && p.appProtocol === "kubernetes.io/h2c") ? { protocol: "h2c" } : {};
}

function resolvePort(
  route: { backend: BackendRef; field: string },
  services: readonly K8sObject[],
): number | AttachmentRefusal {
  const { service, port } = route.backend;
  if (typeof port === "number") return port;
  const svc = services.find((s) => s.metadata.name === service);
  if (!svc) {
    return {
      reason: "UnresolvedPort",
      message: `${route.field}: port "${port}" of Service ${service} cannot be resolved: the Service does not exist`,
    };
  }
  const ports = (svc.spec as { ports?: { name?: string; port?: number }[] } | undefined)?.ports ?? [];
  const found = ports.find((p) => p.name === port);
  if (!found || !Number.isInteger(found.port)) {
    const names = ports.map((p) => p.name).filter(Boolean);
    return {
      reason: "UnresolvedPort",
      message: `${route.field}: Service ${service} has no port named "${port}"${names.length ? ` (it has ${names.join(", ")})` : ""}`,
    };
  }
  return found.port as number;
}

/**
 * A host's `tls`: a spec.tls Secret naming it wins (with cert-manager's annotations, ingress-shim fills that Secret
 * itself), else cert-manager's annotations as an issuerRef (the operator's Certificate, for the published names only),
 * else `{}` when the Tailnet has a default issuer; undefined: none.
 */
function tlsOf(spec: IngressClassSpec, entry: TlsEntry | undefined, defaultIssuer: boolean) {
  if (entry?.secretName) return { secretName: entry.secretName };
  if (spec.issuer) return { issuerRef: { ...spec.issuer } };
  return defaultIssuer ? {} : undefined;
}

export function ingressAttachment(
  spec: IngressClassSpec,
  tailnet: string,
  zone: string | undefined,
  services: readonly K8sObject[],
  defaultIssuer = false,
): { attachment: K8sObject } | { refusal: AttachmentRefusal } {
  const used = new Set<string>();
  const byLabel = new Map<
    string,
    { service: string; port: number; secret: string; paths: string; expose: Record<string, unknown>; who: string }
  >();
  const exposes: Record<string, unknown>[] = [];
  for (const [i, route] of spec.routes.entries()) {
    const label = route.host === undefined ? spec.hostname : hostLabel(route.host, zone);
    if (label === undefined) {
      const where = zone ? `a label of ${zone} (<label>.${zone}) or a bare label` : "a bare DNS label";
      return {
        refusal: {
          reason: "UnsupportedHost",
          message: `host ${route.host}: not a name the tailnet can publish; use ${where}`,
        },
      };
    }
    const port = resolvePort(route, services);
    if (typeof port !== "number") return { refusal: port };
    const paths = resolvePaths(route, services);
    if (!Array.isArray(paths)) return { refusal: paths };
    const names = [label, fqdn(label, zone), ...(route.host ? [route.host.replace(/\.$/, "")] : [])];
    const tls = tlsOf(spec, tlsFor(spec.tls, names), defaultIssuer);
    if (!tls) {
      return {
        refusal: {
          reason: "TLSMissing",
          message: `${route.host ? `host ${route.host}` : `the default name ${fqdn(label, zone)}`}: no spec.tls entry with a secretName names it, no cert-manager.io/issuer or cert-manager.io/cluster-issuer annotation and no spec.certificates.issuerRef on Tailnet ${tailnet}; the tailnet agent serves https only (a certificate for ${fqdn(label, zone)})`,
        },
      };
    }
    // Two rules naming one tailnet name (`grafana` and `grafana.<zone>`, or a host equal to the
    // hostname next to rules without host) are one expose when they agree, else the name is ambiguous.
    const same = byLabel.get(label);
    if (same) {
      // The default backend's entry (no paths) agrees with a host's paths when their backend is the same: the
      // host's paths route first, the rest goes to that backend either way.
      const pathsAgree = same.paths === JSON.stringify(paths) || paths.length === 0 || same.expose.paths === undefined;
      if (
        same.service === route.backend.service &&
        same.port === port &&
        same.secret === JSON.stringify(tls) &&
        pathsAgree
      ) {
        if (paths.length && same.expose.paths === undefined) same.expose.paths = paths;
        continue;
      }
      return {
        refusal: {
          reason: "UnsupportedHost",
          message: `${route.host ? `host ${route.host}` : "the rules without host"} and ${same.who} are both ${fqdn(label, zone)} with different backends, paths or certificates`,
        },
      };
    }
    // The expose name is the metric label: the host label when it is one, else its position.
    let name = isDns1035Label(label) && !used.has(label) ? label : `host-${i}`;
    while (used.has(name)) name = `${name}-${i}`;
    used.add(name);
    const expose: Record<string, unknown> = {
      name,
      backend: { service: route.backend.service, port, ...h2cOf(route.backend.service, port, services) },
      ...(paths.length ? { paths } : {}),
      ...(label !== spec.hostname ? { host: label } : {}),
      tls,
    };
    exposes.push(expose);
    byLabel.set(label, {
      service: route.backend.service,
      port,
      secret: JSON.stringify(tls),
      paths: JSON.stringify(paths),
      expose,
      who: route.host ? `host ${route.host}` : "the rules without host",
    });
  }
  return {
    attachment: {
      apiVersion: API_VERSION,
      kind: "TailnetIngress",
      metadata: { name: spec.name, namespace: spec.namespace, labels: { [INGRESS_LABEL]: spec.name } },
      spec: {
        tailnetRef: { name: tailnet },
        ...(spec.tag ? { tag: spec.tag } : {}),
        hostname: spec.hostname,
        mode: "http",
        ...(spec.allowFrom.length ? { allowFrom: spec.allowFrom } : {}),
        exposes,
      },
    },
  };
}
