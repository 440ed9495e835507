import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { describe, it } from "node:test";
import { parse } from "yaml";
import { allCrds, CATEGORY } from "../../src/api/crd.js";
import { generatedManifests } from "../../src/api/generate.js";
import { KINDS } from "../../src/api/schemas.js";

const root = new URL("../../", import.meta.url);

describe("generated CRDs", () => {
  it("the committed YAML equals what `npm run manifests` writes", () => {
    for (const [path, text] of generatedManifests()) {
      let committed = "";
      try {
        committed = readFileSync(new URL(path, root), "utf8");
      } catch {
        assert.fail(`${path} is missing: run npm run manifests`);
      }
      assert.equal(committed, text, `${path} is stale: run npm run manifests`);
    }
  });

  for (const info of KINDS) {
    it(`${info.kind}: scope, short name, status subresource, conditions as a map, printer columns`, () => {
      const crd = parse(readFileSync(new URL(`manifests/crds/${info.plural}.tailnet.internal.yaml`, root), "utf8"));
      assert.equal(crd.spec.group, "tailnet.internal");
      assert.equal(crd.spec.scope, info.scope);
      assert.deepEqual(crd.spec.names.shortNames, [info.shortName]);
      const v = crd.spec.versions[0];
      assert.equal(v.name, "v1alpha1");
      assert.deepEqual(v.subresources, { status: {} });
      const conds = v.schema.openAPIV3Schema.properties.status.properties.conditions;
      assert.equal(conds["x-kubernetes-list-type"], "map");
      assert.deepEqual(conds["x-kubernetes-list-map-keys"], ["type"]);
      const cols = v.additionalPrinterColumns.map((c: { name: string }) => c.name);
      const own: Record<string, string[]> = {
        Tailnet: ["API", "COMPAT", "DNS", "POLICY", "AGE"],
        TailnetIngress: ["TAG", "DNS", "READY", "AGE"],
        TailnetUser: ["USER", "ID", "READY", "AGE"],
        TailnetAuthKey: ["SECRET", "EXPIRES", "READY", "AGE"],
      };
      assert.deepEqual(cols, own[info.kind] ?? ["TAG", "READY", "AGE"]);
    });
  }

  it("every schema node is structural (has a type)", () => {
    const walk = (node: Record<string, unknown>, path: string) => {
      assert.ok(typeof node.type === "string", `${path} has no type`);
      for (const [k, v] of Object.entries((node.properties as Record<string, Record<string, unknown>>) ?? {}))
        walk(v, `${path}.${k}`);
      if (node.items) walk(node.items as Record<string, unknown>, `${path}[]`);
    };
    for (const info of KINDS) {
      walk(info.spec, `${info.kind}.spec`);
      walk(info.status, `${info.kind}.status`);
    }
  });
});

describe("CRD categories (issue 24: `kubectl get tailnet home` failed)", () => {
  it("no category equals any plural, singular, short name or kind of any CRD, nor kubectl's own `all`", () => {
    const crds = allCrds().map((c) => (c.spec as { names: Record<string, unknown> }).names);
    const names = new Set<string>(["all"]);
    for (const n of crds) {
      for (const v of [n.plural, n.singular, n.kind, ...((n.shortNames as string[]) ?? [])]) {
        names.add(String(v).toLowerCase());
      }
    }
    const categories = new Set(crds.flatMap((n) => (n.categories as string[]) ?? []));
    assert.ok(categories.size > 0, "every CRD has a category");
    for (const c of categories)
      assert.ok(!names.has(c), `category ${c} is also a resource name: kubectl expands it first`);
    assert.deepEqual([...categories], [CATEGORY]);
  });
});
