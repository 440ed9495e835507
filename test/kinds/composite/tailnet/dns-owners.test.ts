/**
 * The Tailnet's records file (Headscale `dns.extra_records_path`) never carries a name that belongs to
 * another machine: tailscale's quad-100 resolver answers from control's extra records before the
 * MagicDNS names of nodes (tailscale v1.102.3 net/dns/resolver/tsdns.go resolveLocal: `hosts[domain]`
 * first, then MagicDNSHosts), so a tenant's record for `db-1` would send connections for the real
 * db-1 to the tenant's agent.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { HsNode } from "../../../../src/headscale/types.js";
import type { K8sObject } from "../../../../src/k8s/objects.js";
import { dnsRecords } from "../../../../src/kinds/composite/tailnet/compose.js";
import { readInputs } from "../../../../src/kinds/composite/tailnet/inputs.js";
import { agentHostname } from "../../../../src/kinds/shared/dns-tenancy.js";
import { toMaps } from "../../../fixtures/hooks.js";
import { agentNode, hsNode, hsUser, ingress, tailnet, tailnetSpec } from "./fixtures.js";

const laptop = hsNode({ id: "3", givenName: "db-1", user: hsUser("1", "alice") });
const agent = agentNode({ id: "20", givenName: "attack", tags: ["tag:k8s-tenant-attack"] });
const tcp = (hostname: string) => ingress("attack", "tenant", { hostname });
const http = (host: string, aliases: string[] = []) =>
  ingress("attack", "tenant", {
    hostname: "attack",
    mode: "http",
    exposes: [{ name: "web", port: 443, backend: { service: "attack", port: 3000 }, host, aliases }],
  });

/** The names published (one per name: replicas give a name several records). */
const names = (objects: K8sObject[], nodes = [laptop, agent], spec = tailnetSpec()) => [
  ...new Set(dnsRecords(readInputs(tailnet(spec), toMaps(objects)), nodes).map((r) => r.name)),
];

describe("DNS records: a name of another machine is never published", () => {
  it("an ingress hostname equal to a node's MagicDNS name", () => {
    assert.deepEqual(names([tcp("db-1")]), []);
  });

  it("an http host or alias equal to a node's name; the ingress's other names are still published", () => {
    assert.deepEqual(names([http("db-1")]), ["attack.ts.example.com"]);
    assert.deepEqual(names([http("web", ["db-1", "db"])]), [
      "attack.ts.example.com",
      "db.ts.example.com",
      "web.ts.example.com",
    ]);
  });

  it("compares case-insensitively: a node that reported an upper-case hostname", () => {
    const mixed = hsNode({ id: "4", givenName: "files", name: "Files-NAS" });
    assert.deepEqual(names([tcp("files-nas")], [mixed, agent]), []);
    assert.deepEqual(names([tcp("files")], [mixed, agent]), []);
  });

  it("a name written as an FQDN under the baseDomain, or with a trailing dot, is not a label: nothing published", () => {
    assert.deepEqual(names([tcp("db-1.ts.example.com")]), []);
    assert.deepEqual(names([tcp("db-1.")]), []);
    assert.deepEqual(names([tcp("DB-1")]), []);
  });

  it("the names of other agent nodes (an egress's, another ingress's replicas) are not an ingress's to take", () => {
    const egressAgent = hsNode({ id: "7", givenName: "shop-db-egress", tags: ["tag:k8s-shop-db"] });
    assert.deepEqual(names([tcp("shop-db-egress")], [egressAgent, agent]), []);
    const grafana = ingress("grafana", "monitoring");
    const replicas = ["grafana", "grafana-1"].map((g, i) =>
      agentNode({ id: String(30 + i), givenName: g, tags: ["tag:k8s-monitoring-grafana"] }),
    );
    // grafana keeps its own name (its own node is named after it); the tenant cannot take grafana-1.
    assert.deepEqual(names([grafana, tcp("grafana-1")], [...replicas, agent]), ["grafana.ts.example.com"]);
  });

  it("a name that later becomes a node's name stops being published (the node wins)", () => {
    assert.deepEqual(names([tcp("web")]), ["web.ts.example.com"]);
    const newcomer = hsNode({ id: "40", givenName: "web" });
    assert.deepEqual(names([tcp("web")], [laptop, agent, newcomer]), []);
  });

  it("its own agent node carries its hostname: that is no conflict", () => {
    const own = agentNode({ id: "21", givenName: "db-2", tags: ["tag:k8s-tenant-attack"] });
    assert.deepEqual(names([tcp("db-2")], [laptop, own]), ["db-2.ts.example.com"]);
  });
});

describe("DNS records: an agent never holds the bare name it publishes (issue 31 item 7)", () => {
  it("an admin machine joining after a tenant ingress gets the bare name: the record goes, the agent never held it", () => {
    // the tenant's ingress "vault" registered first, as its agent registers (agentHostname)
    const registered = agentHostname("vault", "tenant", undefined);
    assert.equal(registered, "vault-tenant");
    const tenantAgent = agentNode({ id: "60", givenName: registered, tags: ["tag:k8s-tenant-attack"] });
    // before the machine: the record is published, the bare name is no node's
    assert.deepEqual(names([tcp("vault")], [laptop, tenantAgent]), ["vault.ts.example.com"]);
    // the admin machine joins later: Headscale gives it the free bare name (no -1), and the record goes
    const machine = hsNode({ id: "61", givenName: "vault", user: hsUser("1", "alice") });
    assert.deepEqual(names([tcp("vault")], [laptop, tenantAgent, machine]), []);
  });

  it("a record's address is only an agent the ingress registered: a node merely carrying its tag answers for none of its names", () => {
    // an administrator's (or anyone's) node under the ingress's derived tag, registered with a key the ingress did not mint
    const carrier = hsNode({
      id: "62",
      givenName: "other",
      tags: ["tag:k8s-tenant-attack"],
      ipAddresses: ["100.64.0.62"],
    });
    const records = (nodes: HsNode[]) =>
      dnsRecords(readInputs(tailnet(tailnetSpec()), toMaps([tcp("vault")])), nodes).map((r) => `${r.name} ${r.value}`);
    assert.deepEqual(records([laptop, carrier]), []);
    assert.deepEqual(records([laptop, carrier, agent]), ["vault.ts.example.com 100.64.0.20"]);
  });

  it("a node named like the ingress and carrying its tag, not registered by it, holds the name against it", () => {
    // e.g. an administrator's machine `vault` tagged with the tenant's derived tag: no agent of the ingress
    const lookalike = hsNode({ id: "63", givenName: "vault", tags: ["tag:k8s-tenant-attack"] });
    assert.deepEqual(names([tcp("vault")], [laptop, agent, lookalike]), []);
    // its own agent under the bare name (an earlier version's) is still no conflict
    const ownOld = agentNode({ id: "64", givenName: "vault", tags: ["tag:k8s-tenant-attack"] });
    assert.deepEqual(names([tcp("vault")], [laptop, ownOld]), ["vault.ts.example.com"]);
  });

  it("in every namespace, listed as flat or not", () => {
    assert.equal(agentHostname("grafana", "monitoring", ["monitoring"]), "grafana-monitoring");
    assert.equal(agentHostname("web", "team-a", ["monitoring"]), "web-team-a");
    assert.equal(agentHostname("web", "team-a", []), "web-team-a");
  });
});

describe("DNS records: spec.tenancy.dns.flatNamespaces gives the other namespaces a subtree of their own", () => {
  const spec = { ...tailnetSpec(), tenancy: { dns: { flatNamespaces: ["monitoring"] } } };
  const web = (namespace: string, created: string) =>
    parentWith(ingress("web", namespace, { hostname: "web" }), created);

  it("a listed namespace publishes flat; another publishes <host>.<namespace>.<baseDomain>, even when older", () => {
    const got = names(
      [web("tenant", "2026-01-01T00:00:00Z"), web("monitoring", "2026-06-01T00:00:00Z")],
      agents("tenant", "monitoring"),
      spec,
    );
    assert.deepEqual(got, ["web.tenant.ts.example.com", "web.ts.example.com"]);
  });

  it("two unlisted namespaces never compete for a name", () => {
    const got = names([web("a", "2026-01-01T00:00:00Z"), web("b", "2026-06-01T00:00:00Z")], agents("a", "b"), spec);
    assert.deepEqual(got, ["web.a.ts.example.com", "web.b.ts.example.com"]);
  });

  it("an unlisted namespace cannot publish a node's name (a tenant ingress named db-1 gets db-1.tenant)", () => {
    assert.deepEqual(names([tcp("db-1")], [laptop, agent], spec), ["db-1.tenant.ts.example.com"]);
  });

  it("a subtree under a node's name is refused: it would shadow that node's subdomains", () => {
    assert.deepEqual(names([ingress("web", "db-1", { hostname: "web" })], [laptop, ...agents("db-1")], spec), []);
  });

  it("the node-name rule still holds for a listed namespace", () => {
    assert.deepEqual(names([ingress("x", "monitoring", { hostname: "db-1" })], [laptop], spec), []);
  });
});

/** One agent node per namespace's ingress "web", named as its agent registers (agentHostname: web-<ns>). */
function agents(...namespaces: string[]) {
  return namespaces.map((ns, i) => {
    const name = `web-${ns}`;
    return agentNode({ id: String(50 + i), givenName: name, tags: [`tag:k8s-${ns}-web`] });
  });
}

function parentWith(o: K8sObject, creationTimestamp: string): K8sObject {
  return { ...o, metadata: { ...o.metadata, creationTimestamp } };
}
