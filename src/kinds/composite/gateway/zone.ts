/**
 * The derived zone (api.md § TailnetGateway): an A record for every TailnetEgress target of the
 * same Tailnet that is named by a MagicDNS name (`<node>.<baseDomain>`), pointing at the ClusterIP
 * of the target's egress Service (only the Service the operator made for that egress, of an egress the
 * Tailnet's tenancy admits, the oldest claimant of the name: shared/zone-owners.ts), so cluster workloads that use tailnet names reach the target
 * through the egress agent. Ingress names are not in it (in-cluster clients use the backend
 * Service). The file is an RFC 1035 master file whose content depends only on its inputs; its SOA
 * serial is derived from a hash of the records, never from the clock, so an unchanged zone renders
 * byte-identical and a changed one gets a new serial (CoreDNS' file plugin reloads on a new serial).
 */
import { createHash } from "node:crypto";
import { type ZoneClaimsInput, type ZoneRecord, zoneClaims } from "../../shared/zone-owners.js";
import { normalizeZone } from "./spec.js";

export const ZONE_FILE_KEY = "zone.db";
export const ZONE_TTL_SECONDS = 30;

/** The records and the names refused (shared/zone-owners.ts: tenancy, oldest claimant, the operator's own Service). */
export const derivedZone = zoneClaims;

export function derivedZoneRecords(input: ZoneClaimsInput): ZoneRecord[] {
  return zoneClaims(input).records;
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
