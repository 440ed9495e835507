/** The "Your image" overlay of docs/OPERATIONS.md builds and sets the image of the operator and of its agents. */
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, it } from "node:test";
import { parse, parseAllDocuments } from "yaml";
import { configFrom } from "../../src/config.js";
import { layerBinary } from "../chart/helm.js";

const root = new URL("../../", import.meta.url).pathname;

describe("OPERATIONS.md: your image with kustomize", () => {
  it("the overlay sets the operator's image and the agents' image", () => {
    const ops = readFileSync(join(root, "docs/OPERATIONS.md"), "utf8");
    const section = ops.split("**Your image.**")[1] ?? "";
    const overlay = /```yaml\n([\s\S]*?)```/.exec(section)?.[1] ?? "";
    assert.match(overlay, /kind: Kustomization/);
    // The overlay sits next to a checkout named tailnet-operator.
    const dir = mkdtempSync(join(tmpdir(), "overlay-image-"));
    symlinkSync(root, join(dir, "tailnet-operator"));
    mkdirSync(join(dir, "mine"));
    writeFileSync(join(dir, "mine", "kustomization.yaml"), overlay);
    const out = execFileSync(layerBinary("kubectl"), ["kustomize", join(dir, "mine")], {
      encoding: "utf8",
    });
    type Obj = {
      kind: string;
      metadata: { name: string };
      spec: { template: { spec: { containers: { image: string }[] } } };
      data: Record<string, string>;
    };
    const objects = parseAllDocuments(out).map((d) => d.toJSON() as Obj);
    const deployment = objects.find((o) => o.kind === "Deployment" && o.metadata.name === "tailnet-operator");
    assert.equal(
      deployment?.spec.template.spec.containers[0].image,
      "registry.example.com/platform/tailnet-operator:0.1.0",
    );
    const cm = objects.find((o) => o.kind === "ConfigMap" && o.metadata.name === "tailnet-operator-config");
    const config = configFrom(parse(cm?.data["config.yaml"] ?? ""), {});
    assert.equal(config.images.agent, "registry.example.com/platform/tailnet-operator:0.1.0");
  });
});
