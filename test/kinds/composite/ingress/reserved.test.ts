/**
 * A TailnetIngress never publishes a name a Headscale node holds (src/kinds/shared/dns-owners.ts):
 * every field that makes a name (hostname, an http expose's host, its aliases), any case the node
 * reported, and a node that takes the name after the ingress had it. The status lists only what is
 * published, and the ingress's own agent nodes under the name Headscale gave them.
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import type { HsNode } from "../../../../src/headscale/types.js";
import type { K8sObject } from "../../../../src/k8s/objects.js";
import { decideIngress } from "../../../../src/kinds/composite/ingress/decide.js";
import { readIngressSpec } from "../../../../src/kinds/composite/ingress/spec.js";
import { holderOf, nameKey } from "../../../../src/kinds/shared/dns-owners.js";
import { hsNode, ok } from "../../shared/fixtures.js";
import { ingress, TAG, tcpIngress, WEB } from "./fixtures.js";
import { agentNode, type Certificates, certificates, healthyInput, resolved } from "./inputs.js";

let certs: Certificates;
before(async () => {
  certs = await certificates();
});
after(() => certs.pki.cleanup());

const own = agentNode({ id: "9", name: "grafana", tags: [TAG] });
const laptop = (name: string) => hsNode({ id: "3", name });

function decide(parent: K8sObject, nodes: HsNode[]) {
  const d = decideIngress({
    ...healthyInput(certs.good, { parent, nodes: ok(nodes), ingresses: [parent] }),
    spec: readIngressSpec(parent),
  });
  const ready = d.conditions.find((c) => c.type === "Ready");
  return { ready, fields: d.fields };
}

describe("decideIngress: names of other machines", () => {
  it("hostname: refused, nothing published under it", () => {
    const { ready, fields } = decide(tcpIngress("pg", { hostname: "db-1", tag: TAG }), [own, laptop("db-1")]);
    assert.equal(ready?.reason, "DNSNameReserved");
    assert.match(ready?.message ?? "", /db-1\.ts\.example\.com \(Headscale node 3\)/);
    assert.equal(fields.dnsName, undefined);
    assert.deepEqual(
      fields.exposes.map((e) => e.dnsName),
      [undefined],
    );
  });

  it("an http host or alias: only that name is withheld", () => {
    const alias = decide(ingress("grafana", { exposes: [{ ...WEB, aliases: ["db-1"] }] }), [own, laptop("db-1")]);
    assert.equal(alias.ready?.reason, "DNSNameReserved");
    assert.equal(alias.fields.dnsName, "grafana.ts.example.com");
    assert.deepEqual(alias.fields.exposes[0].dnsAliases, []);
    assert.equal(alias.fields.exposes[0].dnsName, "dash.ts.example.com");
    const host = decide(ingress("grafana", { exposes: [{ ...WEB, host: "db-1" }] }), [own, laptop("db-1")]);
    assert.equal(host.ready?.reason, "DNSNameReserved");
    assert.equal(host.fields.exposes[0].dnsName, undefined);
  });

  it("the node's name in another case, or with its FQDN and a trailing dot", () => {
    assert.equal(
      decide(tcpIngress("pg", { hostname: "nas", tag: TAG }), [own, laptop("NAS")]).ready?.reason,
      "DNSNameReserved",
    );
    const fq = hsNode({ id: "5", name: "nas.ts.example.com." });
    assert.equal(decide(tcpIngress("pg", { hostname: "nas", tag: TAG }), [own, fq]).ready?.reason, "DNSNameReserved");
  });

  it("a name that later becomes a node's name: the ingress loses it on its next sync", () => {
    const parent = tcpIngress("pg", { hostname: "web", tag: TAG });
    assert.equal(decide(parent, [own]).fields.dnsName, "web.ts.example.com");
    const after = decide(parent, [own, laptop("web")]);
    assert.equal(after.ready?.reason, "DNSNameReserved");
    assert.equal(after.fields.dnsName, undefined);
  });

  it("its own agent node, renamed by Headscale on a collision, is listed under the name it got", () => {
    // Headscale 0.29 gives a newcomer whose hostname is taken `<name>-1` (resolveGivenName).
    const renamed = { ...agentNode({ id: "9", name: "grafana", tags: [TAG] }), givenName: "grafana-1" };
    const other = hsNode({ id: "3", name: "grafana" });
    const { ready, fields } = decide(ingress("grafana"), [renamed, other]);
    assert.equal(ready?.reason, "DNSNameReserved");
    assert.deepEqual(
      fields.nodes?.map((n) => n.name),
      ["grafana-1"],
    );
  });
});

describe("decideIngress: spec.tenancy.dns.flatNamespaces", () => {
  const tenancy = (flatNamespaces: string[]) => resolved({ tenancy: { dns: { flatNamespaces } } });
  const run = (parent: K8sObject, flat: string[], nodes: HsNode[] = [own]) =>
    decideIngress({
      ...healthyInput(certs.good, { parent, nodes: ok(nodes), ingresses: [parent], tailnet: tenancy(flat) }),
      spec: readIngressSpec(parent),
    });
  const tsHostname = (d: ReturnType<typeof decideIngress>) => {
    type Template = { template: { spec: { containers: { env?: { name: string; value?: string }[] }[] } } };
    const deploy = d.children.find((c) => c.kind === "StatefulSet");
    assert.ok(deploy, "an agent StatefulSet");
    const env = (deploy.spec as Template).template.spec.containers.flatMap((c) => c.env ?? []);
    return env.find((e) => e.name === "TS_HOSTNAME")?.value;
  };

  it("an unlisted namespace publishes under its own subtree, and its agent node does not take the flat label", () => {
    const d = run(tcpIngress("pg", { hostname: "db-1", tag: TAG }), ["platform"], [own, laptop("db-1")]);
    assert.equal(d.fields.dnsName, "db-1.monitoring.ts.example.com");
    assert.equal(d.conditions.find((c) => c.type === "Ready")?.reason, "ProbeFailed", "past every name check");
    assert.equal(tsHostname(d), "db-1-monitoring");
  });

  it("a listed namespace publishes flat, under the same node-name rule", () => {
    const d = run(tcpIngress("pg", { hostname: "db-1", tag: TAG }), ["monitoring"], [own, laptop("db-1")]);
    assert.equal(d.fields.dnsName, undefined);
    assert.equal(d.conditions.find((c) => c.type === "Ready")?.reason, "DNSNameReserved");
    // a flat namespace's agent is never the bare name either (issue 31 item 7: agentHostname)
    assert.equal(tsHostname(d), "db-1-monitoring");
  });
});

describe("nameKey and holderOf: how names compare", () => {
  it("lower case, no trailing dot, without the baseDomain", () => {
    assert.equal(nameKey("DB-1.TS.Example.com.", "ts.example.com"), "db-1");
    assert.equal(nameKey("db-1", "ts.example.com."), "db-1");
    assert.equal(nameKey("db-1.other.example", "ts.example.com"), "db-1.other.example");
  });

  it("a name below a node's name is held by that node; a sibling is not", () => {
    const reserved = new Map([["db-1", "Headscale node 3"]]);
    assert.equal(holderOf("web.db-1.ts.example.com", reserved, "ts.example.com"), "Headscale node 3");
    assert.equal(holderOf("db-10.ts.example.com", reserved, "ts.example.com"), undefined);
  });
});
