/**
 * Whose names the gateway's derived zone may answer (pure; issue 31 item 3). The zone is cluster-wide DNS:
 * CoreDNS forwards it for every namespace (docs/gateway.md), so a record in it is an answer every workload
 * trusts. A name (`<node>.<baseDomain>`, the MagicDNS name an egress target uses) is published only:
 * - for an egress the Tailnet's tenancy admits (tenancy.ts admitObject): a refused namespace claims nothing;
 * - with the address of the Service the operator made for that egress's target: labelled as an egress
 *   target AND controlled by that egress (its controller ownerReference names the egress's uid, as
 *   Metacontroller sets it on the egress's children). A Service of the same name that an editor made by
 *   hand — no controller, or another one — is no proof, whatever its labels say, and an egress without
 *   that proof claims nothing;
 * - by its oldest claimant (creationTimestamp, then namespace/name) among those with the proof; every newer
 *   claim is refused with the claimant named, also from the same namespace.
 */
import { API_VERSION } from "../../api/schemas.js";
import { isOlder } from "../../k8s/age.js";
import { EGRESS_TARGET_LABEL } from "../../k8s/labels.js";
import type { K8sObject, ObjectMaps } from "../../k8s/objects.js";
import { recordOf } from "../../k8s/objects.js";
import { isIp } from "../../net/cidr.js";
import { admitObject, type Tenancy } from "./tenancy.js";

const normalize = (name: string) => name.trim().toLowerCase().replace(/\.+$/, "");
const LABEL = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;

/** `<label>.<baseDomain>` (one label, any case, optional trailing dot) → the lower-case FQDN; else undefined. */
export function magicDNSName(host: string, baseDomain: string | undefined): string | undefined {
  if (!baseDomain) return undefined;
  const h = normalize(host);
  const base = normalize(baseDomain);
  if (!h.endsWith(`.${base}`)) return undefined;
  const label = h.slice(0, -(base.length + 1));
  return LABEL.test(label) ? h : undefined;
}

export interface ZoneRecord {
  /** Fully qualified name without the trailing dot. */
  fqdn: string;
  ipv4: string;
  /** `<namespace>/<egress>` whose target produced the record. */
  egress: string;
  target: string;
}

/** A name left out of the zone, and why (the gateway's DNSReady says it). */
export interface ZoneRefusal {
  fqdn: string;
  egress: string;
  target: string;
  why: string;
}

export interface ZoneClaimsInput {
  tailnet: string;
  zone: string;
  /** The Tailnet's spec.dns.baseDomain; without it no host is a MagicDNS name. */
  baseDomain?: string;
  egresses: readonly K8sObject[];
  /** Related Services labelled tailnet.internal/egress-target=true. */
  services: readonly K8sObject[];
  /** The Tailnet's tenancy and the Namespaces it judges; without them every egress counts as admitted. */
  tenancy?: Tenancy;
  related?: ObjectMaps;
}

const idOf = (o: K8sObject) => `${o.metadata.namespace}/${o.metadata.name}`;
const byAge = (a: K8sObject, b: K8sObject) => (isOlder(a, b) ? -1 : isOlder(b, a) ? 1 : 0);
const inZone = (fqdn: string, zone: string) => fqdn === zone || fqdn.endsWith(`.${zone}`);

/** Whether the operator made `s` for `egress`: labelled as an egress target and controlled by the egress. */
export function isOwnTargetService(s: K8sObject, egress: K8sObject): boolean {
  if (s.metadata.namespace !== egress.metadata.namespace) return false;
  if (s.metadata.labels?.[EGRESS_TARGET_LABEL] !== "true") return false;
  const refs = Array.isArray(s.metadata.ownerReferences) ? s.metadata.ownerReferences : [];
  const controller = refs.find((r) => r?.controller === true);
  return (
    !!egress.metadata.uid &&
    controller?.uid === egress.metadata.uid &&
    controller.kind === "TailnetEgress" &&
    controller.apiVersion === API_VERSION
  );
}

function targetsOf(egress: K8sObject): { name: string; host: string }[] {
  const list = Array.isArray(recordOf(egress.spec).targets) ? (recordOf(egress.spec).targets as unknown[]) : [];
  return list
    .map(recordOf)
    .flatMap((t) => (typeof t.name === "string" && typeof t.host === "string" ? [{ name: t.name, host: t.host }] : []));
}

/** The records of the zone and the names refused, each sorted by name. */
export function zoneClaims(input: ZoneClaimsInput): { records: ZoneRecord[]; refused: ZoneRefusal[] } {
  const zone = normalize(input.zone);
  const claimed = new Map<string, { egress: string; target: string }>();
  const records: ZoneRecord[] = [];
  const refused: ZoneRefusal[] = [];
  const egresses = input.egresses
    .filter((e) => !e.metadata.deletionTimestamp && recordOf(recordOf(e.spec).tailnetRef).name === input.tailnet)
    .filter((e) => !input.tenancy || !admitObject(e, input.tenancy, input.related))
    .sort(byAge);
  for (const egress of egresses) {
    const id = idOf(egress);
    for (const t of targetsOf(egress)) {
      const fqdn = magicDNSName(t.host, input.baseDomain);
      if (!fqdn || !inZone(fqdn, zone)) continue;
      const named = input.services.filter(
        (s) => s.metadata.namespace === egress.metadata.namespace && s.metadata.name === t.name,
      );
      const own = named.find((s) => isOwnTargetService(s, egress));
      // no proof, no claim: an egress whose Service the operator has not made (a hand-made one holds the
      // name: ServiceConflict on the egress) does not keep the name from the next claimant
      if (!own) {
        if (named.length) {
          const why = `Service ${id.split("/")[0]}/${t.name} is not the one the operator made for this egress (no controller ownerReference to it)`;
          refused.push({ fqdn, egress: id, target: t.name, why });
        }
        continue;
      }
      const holder = claimed.get(fqdn);
      if (holder) {
        if (holder.egress !== id)
          refused.push({
            fqdn,
            egress: id,
            target: t.name,
            why: `claimed by the older TailnetEgress ${holder.egress}`,
          });
        continue;
      }
      claimed.set(fqdn, { egress: id, target: t.name });
      const ip = recordOf(own.spec).clusterIP;
      // A records only: a headless ("None") or IPv6 Service gives no record.
      if (typeof ip !== "string" || !isIp(ip) || ip.includes(":")) continue;
      records.push({ fqdn, ipv4: ip, egress: id, target: t.name });
    }
  }
  const byName = <T extends { fqdn: string; egress: string }>(a: T, b: T) =>
    a.fqdn < b.fqdn ? -1 : a.fqdn > b.fqdn ? 1 : a.egress < b.egress ? -1 : a.egress > b.egress ? 1 : 0;
  // records as before (localeCompare by name): an unchanged zone renders byte-identical across the upgrade
  records.sort((a, b) => a.fqdn.localeCompare(b.fqdn));
  return { records, refused: refused.sort(byName) };
}
