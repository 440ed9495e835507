/**
 * Issue 31 item 3: the gateway's derived zone is cluster-wide DNS (CoreDNS forwards it for every
 * namespace), so a record is published only from the Service the operator made for the egress that claims
 * the name (its controller ownerReference), of an egress the Tailnet's tenancy admits, and a name claimed
 * twice is refused for the newer claimant with the claimant named (shared/zone-owners.ts).
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { K8sObject } from "../../../../src/k8s/objects.js";
import { dnsReady } from "../../../../src/kinds/composite/gateway/conditions.js";
import { derivedZoneRecords } from "../../../../src/kinds/composite/gateway/zone.js";
import { readTenancy } from "../../../../src/kinds/shared/tenancy.js";
import { zoneClaims } from "../../../../src/kinds/shared/zone-owners.js";
import { toMaps } from "../../../fixtures/hooks.js";

const ZONE = "ts.example.com";
const egress = (name: string, ns: string, created: string, host = "db-1.ts.example.com"): K8sObject => ({
  apiVersion: "tailnet.internal/v1alpha1",
  kind: "TailnetEgress",
  metadata: { name, namespace: ns, uid: `uid-${ns}-${name}`, creationTimestamp: created },
  spec: { tailnetRef: { name: "home" }, targets: [{ name: "pg", host, ports: [{ port: 5432 }] }] },
});
const service = (ns: string, ip: string, owner?: { uid: string; kind?: string; controller?: boolean }): K8sObject => ({
  apiVersion: "v1",
  kind: "Service",
  metadata: {
    name: "pg",
    namespace: ns,
    labels: { "tailnet.internal/egress-target": "true" },
    ...(owner
      ? {
          ownerReferences: [
            {
              apiVersion: "tailnet.internal/v1alpha1",
              kind: owner.kind ?? "TailnetEgress",
              name: "x",
              uid: owner.uid,
              controller: owner.controller ?? true,
            },
          ],
        }
      : {}),
  },
  spec: { clusterIP: ip },
});
const namespace = (name: string, labels: Record<string, string> = {}): K8sObject => ({
  apiVersion: "v1",
  kind: "Namespace",
  metadata: { name, labels },
});

const tenantEgress = egress("steal", "tenant", "2026-11-01T00:00:00Z");
const adminEgress = egress("db", "platform", "2026-11-10T00:00:00Z");
const adminService = service("platform", "10.96.0.10", { uid: "uid-platform-db" });
const base = { tailnet: "home", zone: ZONE, baseDomain: ZONE };

describe("derived zone: a name is published only from the operator's own Service of its admitted claimant", () => {
  it("a hand-made Service (labelled, no controller) of the oldest egress naming db-1 publishes nothing: the admins' egress keeps db-1", () => {
    const records = derivedZoneRecords({
      ...base,
      egresses: [tenantEgress, adminEgress],
      services: [service("tenant", "10.96.6.6"), adminService],
    });
    assert.deepEqual(records, [
      { fqdn: "db-1.ts.example.com", ipv4: "10.96.0.10", egress: "platform/db", target: "pg" },
    ]);
  });

  it("nor one whose controller is another object, or that names the egress's uid without being its controller", () => {
    for (const owner of [
      { uid: "uid-tenant-steal", kind: "Deployment" },
      { uid: "uid-tenant-steal", controller: false },
      { uid: "uid-tenant-other" },
    ]) {
      const records = derivedZoneRecords({
        ...base,
        egresses: [tenantEgress],
        services: [service("tenant", "10.96.6.6", owner)],
      });
      assert.deepEqual(records, [], JSON.stringify(owner));
    }
  });

  it("an egress of a namespace the Tailnet's tenancy refuses claims nothing: the admitted one keeps the name", () => {
    const tenancy = readTenancy({ tenancy: { namespaceSelector: { matchLabels: { "tailnet/allowed": "true" } } } });
    const related = toMaps([namespace("tenant"), namespace("platform", { "tailnet/allowed": "true" })]);
    const { records, refused } = zoneClaims({
      ...base,
      egresses: [tenantEgress, adminEgress],
      services: [service("tenant", "10.96.6.6", { uid: "uid-tenant-steal" }), adminService],
      tenancy,
      related,
    });
    assert.deepEqual(records, [
      { fqdn: "db-1.ts.example.com", ipv4: "10.96.0.10", egress: "platform/db", target: "pg" },
    ]);
    assert.deepEqual(refused, []);
  });

  it("a name claimed from two namespaces: the newer claimant is refused, naming the older", () => {
    const { records, refused } = zoneClaims({
      ...base,
      egresses: [adminEgress, tenantEgress],
      services: [service("tenant", "10.96.6.6", { uid: "uid-tenant-steal" }), adminService],
    });
    assert.deepEqual(records, [
      { fqdn: "db-1.ts.example.com", ipv4: "10.96.6.6", egress: "tenant/steal", target: "pg" },
    ]);
    assert.deepEqual(refused, [
      {
        fqdn: "db-1.ts.example.com",
        egress: "platform/db",
        target: "pg",
        why: "claimed by the older TailnetEgress tenant/steal",
      },
    ]);
  });

  it("the oldest claimant with a hand-made Service holds no name: the next claimant's own Service answers, and why is said", () => {
    const { records, refused } = zoneClaims({
      ...base,
      egresses: [tenantEgress, adminEgress],
      services: [service("tenant", "10.96.6.6"), adminService],
    });
    assert.deepEqual(records, [
      { fqdn: "db-1.ts.example.com", ipv4: "10.96.0.10", egress: "platform/db", target: "pg" },
    ]);
    assert.deepEqual(refused, [
      {
        fqdn: "db-1.ts.example.com",
        egress: "tenant/steal",
        target: "pg",
        why: "Service tenant/pg is not the one the operator made for this egress (no controller ownerReference to it)",
      },
    ]);
  });

  it("the gateway's DNSReady says which names the zone leaves out, and stays True (the zone is served)", () => {
    const pods = [{ name: "gw-0", deleting: false, ready: { coredns: true } }];
    const refused = zoneClaims({
      ...base,
      egresses: [tenantEgress],
      services: [service("tenant", "10.96.6.6")],
    }).refused;
    const c = dnsReady({ suspended: false, pods, workloads: [], refused });
    assert.deepEqual(
      [c.status, c.reason, c.message],
      [
        "True",
        "ZoneNamesRefused",
        "CoreDNS is ready in pod gw-0; not in the zone: db-1.ts.example.com (tenant/steal target pg): Service tenant/pg is not the one the operator made for this egress (no controller ownerReference to it)",
      ],
    );
    assert.equal(dnsReady({ suspended: false, pods, workloads: [], refused: [] }).reason, "Serving");
  });
});
