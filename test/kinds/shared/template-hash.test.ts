/**
 * The pod template hash is stamped on every gateway and agent StatefulSet: its text may never change, or an
 * upgrade would roll every proxy out. A fixed template keeps the hash it had when this test was written.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { normalizeTemplate, TEMPLATE_HASH_ANNOTATION, templateHash } from "../../../src/kinds/shared/template-hash.js";
import { canonicalJson } from "../../../src/policy/canonical.js";

describe("templateHash: the stamp on every StatefulSet", () => {
  it("keeps the stamps already on StatefulSets: a fixed template hashes as it always did", () => {
    const t = {
      metadata: { labels: { app: "x" }, annotations: { [TEMPLATE_HASH_ANNOTATION]: "old", "1": "one" } },
      spec: {
        serviceAccountName: "sa",
        serviceAccount: "sa",
        containers: [{ name: "c", image: "i", imagePullPolicy: "IfNotPresent", env: [{ name: "E", value: "" }] }],
        volumes: [{ name: "v", secret: { secretName: "s", defaultMode: 420 } }],
        securityContext: {},
      },
    };
    assert.equal(
      canonicalJson(normalizeTemplate(t)),
      '{"metadata":{"annotations":{"1":"one"},"labels":{"app":"x"}},"spec":{"containers":[{"env":[{"name":"E"}],"image":"i","name":"c"}],"serviceAccountName":"sa","volumes":[{"name":"v","secret":{"secretName":"s"}}]}}',
    );
    assert.equal(templateHash(t), "1d077c5ff7b92c26");
  });
});
