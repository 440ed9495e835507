/**
 * The Tailnet among other clusters' sections (src/kinds/composite/tailnet/shared.ts): a DNS name an older
 * cluster section holds is left out of this cluster's records file, and the write carries this cluster's line.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { HsPolicy } from "../../../../src/headscale/types.js";
import { dnsRecordsConfigMapName } from "../../../../src/k8s/labels.js";
import { mergePolicy, prettyPolicyText } from "../../../../src/policy/merge.js";
import { type SectionData, sectionLine, sharedPolicyText, unionOf } from "../../../../src/policy/sections.js";
import { agentNode, apiKeySecret, baseConfigMap, healthyHs, ingress, NOW, ok } from "./fixtures.js";
import { decided, input } from "./world.js";

const NAME = "attack.ts.example.com";
const agent = agentNode({
  id: "20",
  givenName: "attack",
  tags: ["tag:k8s-tenant-attack"],
  ipAddresses: ["100.64.0.20"],
});

/** Cluster b's section claiming `names` since `since`, with one grant of its own so the body is not empty. */
function liveWithB(names: Record<string, string>): HsPolicy {
  const b: SectionData = {
    id: "b/home",
    uid: "uid-b",
    tags: { "tag:k8s-b-web": "2026-01-01T00:00:00Z" },
    names,
    gen: {
      tagOwners: { "tag:k8s-b-web": ["group:platform"] },
      grants: [{ src: ["group:eng"], dst: ["tag:k8s-b-web"], ip: ["tcp:443"] }],
      routes: {},
      exitNode: [],
    },
  };
  const merged = mergePolicy(undefined, unionOf([b]));
  if (!merged.ok) throw new Error(merged.message);
  return {
    policy: sharedPolicyText(merged.hash, sectionLine(b), prettyPolicyText(merged.policy)),
    updatedAt: NOW.toISOString(),
  };
}

const world = (names: Record<string, string>) => ({
  related: [apiKeySecret(), baseConfigMap(), ingress("attack", "tenant")],
  hs: healthyHs({ nodes: ok([agent]), policy: ok(liveWithB(names)) }),
  shared: { names: [NAME] },
});

const recordNames = (d: ReturnType<typeof decided>) => {
  const cm = d.children.find((c) => c.metadata.name === dnsRecordsConfigMapName("home"));
  if (!cm) throw new Error("no records ConfigMap");
  return (JSON.parse((cm.data as Record<string, string>)["records.json"]) as { name: string }[]).map((r) => r.name);
};

describe("the Tailnet among other clusters' sections", () => {
  it("a name an older cluster section publishes: left out of this cluster's records, SharedPolicy says so", () => {
    const d = decided(world({ [NAME]: "2026-01-01T00:00:00Z" }));
    assert.deepEqual(recordNames(d), []);
    const c = d.conditions.find((x) => x.type === "SharedPolicy");
    assert.equal(c?.reason, "ClaimsRefused");
    assert.equal(
      c?.message,
      `refused here, held by an older cluster section: name ${NAME} (b/home); left out of this cluster's policy part and DNS records; rename them, or remove them from the other cluster`,
    );
  });

  it("the same name claimed later by the other cluster: kept here, contested", () => {
    const d = decided(world({ [NAME]: "2026-12-31T00:00:00Z" }));
    assert.deepEqual(recordNames(d), [NAME]);
    assert.equal(d.conditions.find((x) => x.type === "SharedPolicy")?.reason, "ClaimsContested");
  });

  it("the write carries every section line: cluster b's as stored, this cluster's own", () => {
    const i = input(world({}));
    const write = i.outcome.written?.write;
    assert.ok(write?.meta && write.ownLine);
    const lines = write.meta.split("\n");
    assert.equal(lines.length, 3, "base, a's section, b's section");
    assert.ok(lines[0].startsWith('// tailnet-operator base {"by":"a/home"'));
    assert.equal(lines[1], write.ownLine);
    assert.equal(lines[2], liveWithB({}).policy.split("\n")[1], "b's line, byte for byte");
  });
});
