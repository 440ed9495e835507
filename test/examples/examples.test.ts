import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join, relative } from "node:path";
import { describe, it } from "node:test";
import { fileURLToPath } from "node:url";
import { parse } from "yaml";
import type { K8sObject } from "../../src/k8s/objects.js";
import { exampleDirs, renderExample } from "../../src/render/examples.js";
import { validateChildren } from "../helpers/validate.js";

const root = fileURLToPath(new URL("../../", import.meta.url));

describe("examples render as their golden files", () => {
  const dirs = exampleDirs(root);
  it("there is one example per kind (and one of annotated Services, one of the Ingress class, one of LoadBalancer Services, one of an exit node, one of the kube-api mode, one of the Gateway API class; auth keys and users share one)", () => {
    assert.deepEqual(
      dirs.map((d) => relative(join(root, "examples"), d)),
      [
        "authkey",
        "egress",
        "gateway",
        "gateway-api",
        "gateway-exit",
        "gateway-ha",
        "ingress",
        "ingress-class",
        "ingress-ha",
        "kube-api",
        "loadbalancer",
        "service",
        "site",
        "tailnet",
      ],
    );
  });
  for (const dir of dirs) {
    it(relative(root, dir), async () => {
      const { code, output } = await renderExample(dir);
      const expected = readFileSync(join(dir, "expected.yaml"), "utf8");
      assert.equal(output, expected, "run npm run examples:update and review the diff");
      assert.ok(code === 0 || code === 1);
      const parsed = parse(output.replace(/^# .*\n/, "")) as { objects: { children: K8sObject[] }[]; errors: string[] };
      assert.deepEqual(parsed.errors, []);
      for (const o of parsed.objects) validateChildren(o.children);
    });
  }
});
