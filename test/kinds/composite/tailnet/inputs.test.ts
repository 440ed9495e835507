import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { HeadscaleViews } from "../../../../src/headscale/view.js";
import { readInputs } from "../../../../src/kinds/composite/tailnet/inputs.js";
import { tailnetSpecProblem } from "../../../../src/kinds/composite/tailnet/spec.js";
import { syncRequest, toMaps } from "../../../fixtures/hooks.js";
import { build } from "../../../helpers/server.js";
import { apiKeySecret, egress, gateway, ingress, tailnet, tailnetSpec } from "./fixtures.js";

describe("tailnetSpecProblem: what the schema cannot catch", () => {
  const rows: { name: string; targets: unknown[]; want: string | undefined }[] = [
    { name: "CIDRs, IPs and tags", targets: ["100.64.0.0/10", "192.168.1.7", "fd00::/8", "tag:db"], want: undefined },
    {
      name: "a bare name",
      targets: ["100.64.0.0/10", "db"],
      want: 'spec.allowedEgressTargets[1]: "db" is neither a CIDR, an IP address nor a tag',
    },
    {
      name: "a CIDR with host bits",
      targets: ["10.0.0.1/8"],
      want: "spec.allowedEgressTargets[0]: 10.0.0.1/8 has non-address bits set; expected 10.0.0.0/8",
    },
    {
      name: "a tag outside the grammar",
      targets: ["tag:DB"],
      want: 'spec.allowedEgressTargets[0]: "tag:DB" is not a valid tag',
    },
  ];
  for (const row of rows) {
    it(row.name, () => {
      assert.equal(tailnetSpecProblem(tailnet(tailnetSpec({ allowedEgressTargets: row.targets }))), row.want);
    });
  }

  it("the hook answers PolicyRendered=False/InvalidSpec (specProblem) without any Headscale call", async (t) => {
    const views = new HeadscaleViews({ timeoutMs: 1000, cacheTTLSeconds: 1 });
    const { app } = await build(t, { server: { deps: { views } } });
    const req = syncRequest({
      parent: tailnet(tailnetSpec({ allowedEgressTargets: ["db"] })),
      related: [apiKeySecret()],
    });
    const res = await app.inject({ method: "POST", url: "/hooks/tailnet/sync", payload: req });
    assert.equal(res.statusCode, 200, res.body);
    const conds = (
      res.json() as { status: { conditions: { type: string; status: string; reason: string; message: string }[] } }
    ).status.conditions;
    const rendered = conds.find((c) => c.type === "PolicyRendered");
    assert.deepEqual(
      { status: rendered?.status, reason: rendered?.reason, message: rendered?.message },
      {
        status: "False",
        reason: "InvalidSpec",
        message: 'spec.allowedEgressTargets[0]: "db" is neither a CIDR, an IP address nor a tag',
      },
    );
    assert.equal(conds.length, 9);
    assert.equal(views.size, 0, "no Headscale connection was opened");
  });
});

describe("readInputs", () => {
  it("keeps only this Tailnet's workload objects, sorted by namespace/name", () => {
    const other = { ...egress("x", "a"), spec: { tailnetRef: { name: "work" }, targets: [] } };
    const inputs = readInputs(
      tailnet(),
      toMaps([egress("db", "shop"), egress("api", "shop"), egress("z", "a"), other]),
    );
    assert.deepEqual(
      inputs.egresses.map((o) => `${o.metadata.namespace}/${o.metadata.name}`),
      ["a/z", "shop/api", "shop/db"],
    );
  });

  it("tenancy: an ungranted spec.tag and an unselected namespace render nothing into the policy", () => {
    const spec = tailnetSpec({
      tenancy: {
        namespaceSelector: { matchLabels: { tenant: "yes" } },
        tags: [{ namespaceSelector: { matchLabels: { team: "db" } }, tags: ["tag:db"] }],
      },
    });
    const ns = (name: string, labels: Record<string, string>) => ({
      apiVersion: "v1",
      kind: "Namespace",
      metadata: { name, labels },
    });
    const tagged = (name: string, namespace: string) => {
      const o = egress(name, namespace);
      return { ...o, spec: { ...(o.spec as object), tag: "tag:db" } };
    };
    const inputs = readInputs(
      tailnet(spec),
      toMaps([
        ns("shop", { tenant: "yes" }),
        ns("dbteam", { tenant: "yes", team: "db" }),
        ns("lab", {}),
        egress("web", "shop"),
        tagged("takeover", "shop"),
        tagged("db", "dbteam"),
        egress("x", "lab"),
      ]),
    );
    assert.deepEqual(
      inputs.egresses.map((o) => `${o.metadata.namespace}/${o.metadata.name}`),
      ["dbteam/db", "shop/web"],
    );
  });

  it("split DNS domains and gateway DNS Service IPs are sorted and unique; invalid IPs ignored", () => {
    const spec = tailnetSpec({
      dns: { splitDNS: { domains: ["svc.cluster.local", "corp.internal", "corp.internal"] } },
    });
    const g2 = { ...gateway("10.96.0.10"), metadata: { ...gateway().metadata, name: "gw2" } };
    const g3 = { ...gateway("not-an-ip"), metadata: { ...gateway().metadata, name: "gw3" } };
    const inputs = readInputs(tailnet(spec), toMaps([gateway("10.96.0.53"), g2, g3, ingress()]));
    assert.deepEqual(inputs.splitDNSDomains, ["corp.internal", "svc.cluster.local"]);
    assert.deepEqual(inputs.dnsServiceIPs, ["10.96.0.10", "10.96.0.53"]);
  });

  it("a missing CA Secret does not block the connection but is named for TLS failures", () => {
    const spec = tailnetSpec({
      headscale: {
        url: "https://hs.example.com",
        apiKeySecretRef: { namespace: "tailnet-system", name: "headscale-api-key" },
        caSecretRef: { namespace: "tailnet-system", name: "headscale-ca" },
      },
    });
    const inputs = readInputs(tailnet(spec), toMaps([apiKeySecret()]));
    assert.ok(inputs.connection.ok);
    assert.equal(inputs.connection.conn.ca, undefined);
    assert.equal(
      inputs.connection.caMissing,
      'CA Secret tailnet-system/headscale-ca (key "ca.crt", spec.headscale.caSecretRef) not found',
    );
  });
});
