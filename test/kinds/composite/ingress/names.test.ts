import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { ingressNames, nameConflicts, nameOwners, publishedNames } from "../../../../src/kinds/shared/ingress-names.js";
import { BASE, ingress, tcpIngress, WEB } from "./fixtures.js";

describe("ingressNames", () => {
  it("gives the ingress-level name and, in http mode, each expose's host and aliases", () => {
    const names = ingressNames(
      ingress("grafana", {
        exposes: [
          WEB,
          { name: "api", port: 8443, backend: { service: "grafana", port: 3001 }, tls: { secretName: "t" } },
        ],
      }),
      BASE,
    );
    assert.deepEqual(names, {
      dnsName: "grafana.ts.example.com",
      exposes: [
        { name: "web", dnsName: "dash.ts.example.com", dnsAliases: ["grafana-eu.ts.example.com"] },
        { name: "api", dnsName: "grafana.ts.example.com", dnsAliases: [] },
      ],
      all: ["grafana.ts.example.com", "dash.ts.example.com", "grafana-eu.ts.example.com"],
      invalid: [],
      invalidAt: [],
    });
  });

  it("ignores host and aliases in tcp mode, and leaves names bare without a baseDomain", () => {
    const tcp = tcpIngress("pg", { exposes: [{ ...WEB, host: "Nope", aliases: ["x.y"] }] });
    const names = ingressNames(tcp, undefined);
    assert.deepEqual(names.all, ["pg"]);
    assert.deepEqual(names.invalid, []);
  });

  it("locates every label that is not a DNS label", () => {
    const names = ingressNames(
      ingress("grafana", { exposes: [{ ...WEB, host: "Dash", aliases: ["ok", "a.b", "Dash"] }] }),
      BASE,
    );
    assert.deepEqual(names.invalid, ["Dash", "a.b"]);
    assert.deepEqual(names.invalidAt, [
      { field: "spec.exposes[0].host", label: "Dash" },
      { field: "spec.exposes[0].aliases[1]", label: "a.b" },
      { field: "spec.exposes[0].aliases[2]", label: "Dash" },
    ]);
  });
});

describe("name conflicts and owners agree", () => {
  const oldest = ingress("a", { namespace: "x", created: "2026-01-01T00:00:00Z", exposes: [{ ...WEB, aliases: [] }] });
  const middle = ingress("b", { namespace: "x", created: "2026-02-01T00:00:00Z" });
  const newest = ingress("c", { namespace: "x", created: "2026-03-01T00:00:00Z", hostname: "b" });
  const all = [newest, middle, oldest];

  it("the older ingress keeps a shared name; the newer one loses exactly the shared names", () => {
    assert.deepEqual(nameConflicts(oldest, all, BASE), []);
    assert.deepEqual(nameConflicts(middle, all, BASE), [{ name: "dash.ts.example.com", claimedBy: "x/a" }]);
    assert.deepEqual(nameConflicts(newest, all, BASE), [
      { name: "b.ts.example.com", claimedBy: "x/b" },
      { name: "dash.ts.example.com", claimedBy: "x/a" },
      { name: "grafana-eu.ts.example.com", claimedBy: "x/b" },
    ]);
    assert.deepEqual(publishedNames(middle, all, BASE), ["b.ts.example.com", "grafana-eu.ts.example.com"]);
    assert.deepEqual(publishedNames(newest, all, BASE), []);
  });

  it("breaks a creationTimestamp tie by namespace/name", () => {
    const p = ingress("p", { namespace: "n" });
    const q = ingress("q", { namespace: "n" });
    assert.deepEqual(nameConflicts(p, [q, p], BASE), []);
    assert.deepEqual(nameConflicts(q, [q, p], BASE), [
      { name: "dash.ts.example.com", claimedBy: "n/p" },
      { name: "grafana-eu.ts.example.com", claimedBy: "n/p" },
    ]);
  });

  it("an older ingress that is being deleted, has an invalid name or belongs to another Tailnet claims nothing", () => {
    const deleting = ingress("a", { namespace: "x", created: "2026-01-01T00:00:00Z", deleting: true });
    const invalid = ingress("a", {
      namespace: "x",
      created: "2026-01-01T00:00:00Z",
      exposes: [{ ...WEB, aliases: ["No"] }],
    });
    const elsewhere = ingress("a", { namespace: "x", created: "2026-01-01T00:00:00Z", tailnet: "work" });
    for (const o of [deleting, invalid, elsewhere]) assert.deepEqual(nameConflicts(middle, [o, middle], BASE), []);
  });

  it("nameOwners gives every published name to the claimant nameConflicts names", () => {
    const invalid = ingress("z", {
      namespace: "x",
      created: "2025-01-01T00:00:00Z",
      exposes: [{ ...WEB, host: "No" }],
    });
    const set = [newest, middle, oldest, invalid];
    const owners = nameOwners(set, BASE);
    assert.deepEqual(Object.fromEntries(owners), {
      "a.ts.example.com": "x/a",
      "dash.ts.example.com": "x/a",
      "b.ts.example.com": "x/b",
      "grafana-eu.ts.example.com": "x/b",
    });
    for (const ing of set) {
      const id = `${ing.metadata.namespace}/${ing.metadata.name}`;
      const mine = [...owners].filter(([, owner]) => owner === id).map(([name]) => name);
      assert.deepEqual(mine.sort(), publishedNames(ing, set, BASE).sort(), id);
    }
  });
});
