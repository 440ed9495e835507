/** Tailnet spec.tenancy.dns as the hook validates it (the CRD's schema): namespace names only. */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { validateSpec } from "../../src/api/validate.js";
import { flatNamespacesOf, zoneOf } from "../../src/kinds/shared/dns-tenancy.js";

const spec = (tenancy: unknown) => ({
  headscale: { url: "https://hs.example.com", apiKeySecretRef: { namespace: "x", name: "y" } },
  dns: { baseDomain: "ts.example.com" },
  tenancy,
});

describe("spec.tenancy.dns.flatNamespaces", () => {
  it("accepts namespace names, an empty list, or nothing", () => {
    assert.equal(validateSpec("tailnet", spec({ dns: { flatNamespaces: ["monitoring", "team-a"] } })), undefined);
    assert.equal(validateSpec("tailnet", spec({ dns: { flatNamespaces: [] } })), undefined);
    assert.equal(validateSpec("tailnet", spec({})), undefined);
  });

  it("refuses what is not a namespace name, naming the field", () => {
    const problem = validateSpec("tailnet", spec({ dns: { flatNamespaces: ["Team_A"] } }));
    assert.match(problem ?? "", /spec\.tenancy\.dns\.flatNamespaces\[0\]/);
  });

  it("unset: every namespace flat; set: the listed ones flat, the others under their own subtree", () => {
    assert.equal(flatNamespacesOf(spec(undefined)), undefined);
    const flat = flatNamespacesOf(spec({ dns: { flatNamespaces: ["b", "a", "b"] } }));
    assert.deepEqual(flat, ["a", "b"]);
    assert.equal(zoneOf("a", "ts.example.com", flat), "ts.example.com");
    assert.equal(zoneOf("c", "ts.example.com", flat), "c.ts.example.com");
    assert.equal(zoneOf("c", "ts.example.com", undefined), "ts.example.com");
    assert.equal(zoneOf("c", undefined, []), "c");
  });
});
