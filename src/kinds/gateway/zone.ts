/**
 * The derived zone (api.md § TailnetGateway): an A record for every TailnetEgress target of the
 * same Tailnet that is named by a MagicDNS name (`<node>.<baseDomain>`), pointing at the ClusterIP
 * of the target's egress Service, so cluster workloads that use tailnet names reach the target
 * through the egress agent. Ingress names are not in it (in-cluster clients use the backend
 * Service). The file is an RFC 1035 master file whose content depends only on its inputs; its SOA
 * serial is derived from a hash of the records, never from the clock, so an unchanged zone renders
 * byte-identical and a changed one gets a new serial (CoreDNS' file plugin reloads on a new serial).
 */
import { createHash } from "node:crypto";
import { EGRESS_TARGET_LABEL } from "../../k8s/labels.js";
import type { K8sObject } from "../../k8s/objects.js";
import { isIp } from "../../net/cidr.js";
import { isDnsName, normalizeZone } from "./spec.js";

export const ZONE_FILE_KEY = "zone.db";
export const ZONE_TTL_SECONDS = 30;

export interface ZoneRecord {
  /** Fully qualified name without the trailing dot. */
  fqdn: string;
  ipv4: string;
  /** `<namespace>/<egress>` whose target produced the record. */
  egress: string;
  target: string;
}

export interface DerivedZoneInput {
  tailnet: string;
  zone: string;
  /** The Tailnet's spec.dns.baseDomain; without it no host is a MagicDNS name. */
  baseDomain?: string;
  egresses: readonly K8sObject[];
  /** Related Services labelled tailnet.internal/egress-target=true. */
  services: readonly K8sObject[];
}

type Rec = Record<string, unknown>;
const rec = (v: unknown): Rec => (v && typeof v === "object" && !Array.isArray(v) ? (v as Rec) : {});

/** `<label>.<baseDomain>` (one label, any case, optional trailing dot) → the lower-case FQDN; else undefined. */
export function magicDNSName(host: string, baseDomain: string | undefined): string | undefined {
  if (!baseDomain) return undefined;
  const h = normalizeZone(host);
  const base = normalizeZone(baseDomain);
  if (!h.endsWith(`.${base}`)) return undefined;
  const label = h.slice(0, -(base.length + 1));
  return label && !label.includes(".") && isDnsName(label) ? h : undefined;
}

const inZone = (fqdn: string, zone: string) => fqdn === zone || fqdn.endsWith(`.${zone}`);

/** Oldest egress first, so when two egresses name the same host the older one keeps the record. */
function byAge(a: K8sObject, b: K8sObject): number {
  const ta = a.metadata.creationTimestamp ?? "";
  const tb = b.metadata.creationTimestamp ?? "";
  if (ta !== tb) return ta < tb ? -1 : 1;
  return `${a.metadata.namespace}/${a.metadata.name}`.localeCompare(`${b.metadata.namespace}/${b.metadata.name}`);
}

/** The egress Service of a target: labelled as an egress target and, when owned, owned by that egress. */
function targetService(services: readonly K8sObject[], egress: K8sObject, target: string): K8sObject | undefined {
  return services.find((s) => {
    if (s.metadata.namespace !== egress.metadata.namespace || s.metadata.name !== target) return false;
    if (s.metadata.labels?.[EGRESS_TARGET_LABEL] !== "true") return false;
    const refs = Array.isArray(s.metadata.ownerReferences) ? s.metadata.ownerReferences : [];
    const owner = refs.find((r) => r?.controller);
    return !owner || owner.uid === egress.metadata.uid;
  });
}

export function derivedZoneRecords(input: DerivedZoneInput): ZoneRecord[] {
  const zone = normalizeZone(input.zone);
  const byName = new Map<string, ZoneRecord>();
  const egresses = input.egresses
    .filter((e) => !e.metadata.deletionTimestamp && rec(rec(e.spec).tailnetRef).name === input.tailnet)
    .sort(byAge);
  for (const egress of egresses) {
    const targets = Array.isArray(rec(egress.spec).targets) ? (rec(egress.spec).targets as unknown[]) : [];
    for (const t of targets.map(rec)) {
      if (typeof t.name !== "string" || typeof t.host !== "string") continue;
      const fqdn = magicDNSName(t.host, input.baseDomain);
      if (!fqdn || !inZone(fqdn, zone) || byName.has(fqdn)) continue;
      const ip = rec(targetService(input.services, egress, t.name)?.spec).clusterIP;
      // A records only: a headless ("None") or IPv6 Service gives no record.
      if (typeof ip !== "string" || !isIp(ip) || ip.includes(":")) continue;
      byName.set(fqdn, {
        fqdn,
        ipv4: ip,
        egress: `${egress.metadata.namespace}/${egress.metadata.name}`,
        target: t.name,
      });
    }
  }
  return [...byName.values()].sort((a, b) => a.fqdn.localeCompare(b.fqdn));
}

export interface ZoneFileInput {
  zone: string;
  /** Name server host written in SOA and NS (the gateway's DNS Service name; informational). */
  nameServer: string;
  /** Who the file belongs to, for the header comment. */
  owner: string;
  records: readonly ZoneRecord[];
}

/** RFC 1982 serial from the records' hash: 1 … 2^32-1, stable for the same content. */
export function zoneSerial(body: string): number {
  const n = Number.parseInt(createHash("sha256").update(body).digest("hex").slice(0, 8), 16);
  return n === 0 ? 1 : n;
}

export function renderZoneFile(input: ZoneFileInput): string {
  const zone = normalizeZone(input.zone);
  const ns = `${normalizeZone(input.nameServer)}.`;
  const rel = (fqdn: string) => (fqdn === zone ? "@" : fqdn.slice(0, -(zone.length + 1)));
  const width = Math.max(1, ...input.records.map((r) => rel(r.fqdn).length));
  const records = input.records.map(
    (r) => `${rel(r.fqdn).padEnd(width)}  IN  A  ${r.ipv4}  ; ${r.egress} target ${r.target}`,
  );
  const body = [`@  IN  NS  ${ns}`, ...records].join("\n");
  const serial = zoneSerial(`${zone}\n${body}`);
  return [
    `; Derived zone of TailnetGateway ${input.owner}, rendered by tailnet-operator. Do not edit:`,
    "; every change is overwritten. Serial = hash of the records, not a date.",
    `$ORIGIN ${zone}.`,
    `$TTL ${ZONE_TTL_SECONDS}`,
    `@  IN  SOA  ${ns} hostmaster.${zone}. ${serial} 3600 600 86400 ${ZONE_TTL_SECONDS}`,
    body,
    "",
  ].join("\n");
}
