// The real policies Headscale replays against Tailscale (juanfont/headscale
// hscontrol/policy/v2/testdata/{acl,grant,ssh}_results at the pin, via test/helpers/upstream.ts):
// our parser reads each one back to the same object, and merging generated parts into
// each one keeps every base entry unchanged. Rejected policies are still valid JSON,
// so they are exercised too.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { canonicalJson, hashOfLivePolicy } from "../../src/policy/canonical.js";
import type { GeneratedPolicy } from "../../src/policy/generated-types.js";
import { parseHuJson } from "../../src/policy/hujson.js";
import { mergePolicy, prettyPolicyText } from "../../src/policy/merge.js";
import { POLICY_CATEGORIES, type PolicyRecord, policyCorpus } from "../helpers/upstream.js";

/** Generated parts that collide with the corpus on purpose: tags, prefixes and grants it already uses. */
function generated(): GeneratedPolicy {
  return {
    tagOwners: new Map([
      ["tag:k8s-shop-db", ["group:platform"]],
      ["tag:router", ["group:platform", "odin@example.com"]], // exists in most bases
      ["tag:server", ["thor@example.org"]],
    ]),
    grants: [
      { src: ["autogroup:member"], dst: ["tag:k8s-shop-db"], ip: ["tcp:443"] },
      { src: ["tag:k8s-shop-db"], dst: ["100.64.0.7"], ip: ["tcp:5432"] },
      { src: ["*"], dst: ["*"], ip: ["*"] }, // a common base grant: must not be duplicated
    ],
    autoApproverRoutes: new Map([
      ["10.33.0.0/16", ["tag:k8s-net-gw"]], // exists in most bases
      ["192.168.10.0/24", ["tag:router"]],
    ]),
    autoApproverExitNode: ["tag:exit"], // exists in most bases
  };
}

/** The same object with every object's keys in reverse order (arrays untouched). */
function reverseKeys(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(reverseKeys);
  if (v === null || typeof v !== "object") return v;
  return Object.fromEntries(
    Object.entries(v)
      .reverse()
      .map(([k, x]) => [k, reverseKeys(x)]),
  );
}

function sectionOf(obj: Record<string, unknown>, key: string): Record<string, unknown> {
  const v = obj[key];
  assert.ok(v !== null && typeof v === "object" && !Array.isArray(v), `${key} is an object`);
  return v as Record<string, unknown>;
}

/** Every key of a base map is still there; its value is the base value, possibly extended at the end. */
function assertMapKept(base: unknown, merged: Record<string, unknown>, label: string): void {
  if (base === null || base === undefined) return;
  for (const [k, v] of Object.entries(base as Record<string, unknown>)) {
    assert.ok(Object.hasOwn(merged, k), `${label}: ${k} kept`);
    const out = merged[k];
    if (Array.isArray(v)) {
      assert.ok(Array.isArray(out), `${label}: ${k} still a list`);
      assert.deepStrictEqual(out.slice(0, v.length), v, `${label}: ${k} base owners first, unchanged`);
      assert.equal(new Set(out).size, out.length, `${label}: ${k} no duplicate owners added`);
    } else {
      assert.deepStrictEqual(out, v, `${label}: ${k} unchanged`);
    }
  }
}

function checkRecord(rec: PolicyRecord): void {
  const base = rec.policy;
  const text = JSON.stringify(base);

  // 1. parser: same object back
  const parsed = parseHuJson(text);
  assert.ok(parsed.ok, parsed.ok ? "" : parsed.message);
  assert.deepStrictEqual(parsed.value, base);

  // 2. merge keeps every base entry
  const gen = generated();
  const r = mergePolicy(text, gen);
  if (!r.ok) {
    assert.fail(`${rec.id}: ${r.reason}: ${r.message}`);
  }
  const out = r.policy;
  for (const [key, value] of Object.entries(base)) {
    assert.ok(Object.hasOwn(out, key), `section ${key} kept`);
    if (key === "tagOwners") {
      assertMapKept(value, sectionOf(out, key), key);
    } else if (key === "autoApprovers") {
      const merged = sectionOf(out, key);
      for (const [k, v] of Object.entries(value as Record<string, unknown>)) {
        if (k === "routes") assertMapKept(v, sectionOf(merged, "routes"), "autoApprovers.routes");
        else if (k === "exitNode" && Array.isArray(v)) {
          const list = merged[k] as unknown[];
          assert.deepStrictEqual(list.slice(0, v.length), v, "autoApprovers.exitNode: base entries first, unchanged");
          assert.equal(new Set(list).size, list.length, "autoApprovers.exitNode: no duplicate added");
        } else assert.deepStrictEqual(merged[k], v, `autoApprovers.${k} unchanged`);
      }
    } else if (key === "grants") {
      const grants = out.grants as unknown[];
      assert.deepStrictEqual(grants.slice(0, (value as unknown[]).length), value, "base grants first, unchanged");
      const seen = new Set(grants.map((g) => canonicalJson(g)));
      for (const g of gen.grants) assert.ok(seen.has(canonicalJson(g)), "generated grant present");
      const baseSet = new Set((value as unknown[]).map((g) => canonicalJson(g)));
      const appended = grants.slice((value as unknown[]).length).map((g) => canonicalJson(g));
      for (const g of appended) assert.ok(!baseSet.has(g), "no duplicate of a base grant appended");
    } else {
      // acls, ssh, groups, hosts and anything else: untouched
      assert.deepStrictEqual(out[key], value, `section ${key} unchanged`);
    }
  }
  // generated parts are present
  const owners = sectionOf(out, "tagOwners");
  for (const [tag, list] of gen.tagOwners) {
    for (const o of list) assert.ok((owners[tag] as unknown[]).includes(o), `${tag} owned by ${o}`);
  }
  const routes = sectionOf(sectionOf(out, "autoApprovers"), "routes");
  for (const [prefix, tags] of gen.autoApproverRoutes) {
    for (const t of tags) assert.ok((routes[prefix] as unknown[]).includes(t), `${prefix} approved for ${t}`);
  }
  const exitNode = sectionOf(out, "autoApprovers").exitNode as unknown[];
  for (const t of gen.autoApproverExitNode) assert.ok(exitNode.includes(t), `exit node approved for ${t}`);

  // 3. canonical form and hash: stable across runs and across key reordering of the base
  const again = mergePolicy(text, generated());
  const reordered = mergePolicy(JSON.stringify(reverseKeys(base), null, 2), generated());
  assert.ok(again.ok && reordered.ok);
  assert.equal(again.canonical, r.canonical);
  assert.equal(again.hash, r.hash);
  assert.equal(reordered.canonical, r.canonical);
  assert.equal(reordered.hash, r.hash);
  const live = hashOfLivePolicy(prettyPolicyText(r.policy));
  assert.ok(live.ok);
  assert.equal(live.hash, r.hash);
}

for (const category of POLICY_CATEGORIES) {
  describe(`corpus ${category}`, () => {
    const records = policyCorpus(category);
    it("is the corpus we expect", () => {
      const want = { acl: [215, 16], grant: [266, 34], ssh: [108, 28] }[category];
      assert.deepEqual([records.length, records.filter((r) => !r.accepted).length], want);
      assert.ok(records.every((r) => r.category === category));
      assert.equal(new Set(records.map((r) => r.id)).size, records.length, "ids are unique");
      assert.ok(records.every((r) => r.accepted === (r.message === null)));
    });
    it("collides with the generated parts, so extension and de-duplication are exercised", () => {
      const genGrants = new Set(generated().grants.map((g) => canonicalJson(g)));
      const extended = records.filter((r) => Object.hasOwn(sectionOf(r.policy, "tagOwners"), "tag:router"));
      const deduped = records.filter((r) =>
        ((r.policy.grants as unknown[] | undefined) ?? []).some((g) => genGrants.has(canonicalJson(g))),
      );
      const want = { acl: [215, 0], grant: [265, 9], ssh: [0, 43] }[category];
      assert.deepEqual([extended.length, deduped.length], want);
    });
    for (const rec of records) {
      it(`${rec.id} (${rec.accepted ? "accepted" : "rejected"})`, () => checkRecord(rec));
    }
  });
}
