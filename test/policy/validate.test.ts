/**
 * The operator's own check of one contribution (src/policy/validate.ts) against the fake Headscale's validator
 * (test/fakes/headscale/policy.ts, itself held to the real server's verdicts in policy.test.ts): for random
 * grants over a pool of aliases — defined and undefined groups, hosts and tags, users, prefixes, default
 * routes, autogroups on either side — the contribution is refused exactly when Headscale refuses the base with
 * it, so what the render leaves out before the merge is what Headscale would refuse, and nothing more.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import fc from "fast-check";
import type { Contribution } from "../../src/policy/contribution.js";
import { baseNames, contributionProblem, screenContributions } from "../../src/policy/validate.js";
import { parsePolicy } from "../fakes/headscale/policy.js";

const BASE = {
  groups: { "group:eng": ["alice@"] },
  hosts: { db: "100.64.0.7" },
  tagOwners: { "tag:db": ["group:eng"] },
  acls: [{ action: "accept", src: ["group:eng"], dst: ["*:*"] }],
};
const OWN_TAG = "tag:k8s-shop-web";

const SRC = [
  "*",
  "group:eng",
  "group:nope",
  "db",
  "nohost",
  "tag:db",
  "tag:nobody",
  OWN_TAG,
  "alice@",
  "100.64.0.50",
  "10.0.0.0/8",
  "autogroup:member",
  "autogroup:tagged",
  "autogroup:internet",
  "autogroup:self",
  "autogroup:nonsense",
];
const DST = [
  ...SRC.filter((a) => a !== "autogroup:self"),
  "0.0.0.0/0",
  "::/0",
  "192.168.10.0/24",
  "autogroup:danger-all",
];

function contribution(src: string[], dst: string[]): Contribution {
  return {
    owner: { kind: "ingress", namespace: "shop", name: "web" },
    tags: [OWN_TAG],
    grants: [{ src, dst, ip: ["tcp:443"] }],
    routes: [],
    exitNode: [],
    invalid: [],
    egressTargets: [],
  };
}

function headscaleAccepts(c: Contribution): boolean {
  const policy = {
    ...BASE,
    tagOwners: { ...BASE.tagOwners, [OWN_TAG]: ["group:eng"] },
    grants: c.grants,
  };
  return parsePolicy(JSON.stringify(policy)).ok;
}

describe("contributionProblem agrees with Headscale's validator (issue 31 item 4)", () => {
  it("refuses a grant exactly when Headscale refuses the base with it", () => {
    const names = baseNames(BASE);
    fc.assert(
      fc.property(
        fc.uniqueArray(fc.constantFrom(...SRC), { minLength: 1, maxLength: 3 }),
        fc.uniqueArray(fc.constantFrom(...DST), { minLength: 1, maxLength: 3 }),
        (src, dst) => {
          const c = contribution(src, dst);
          const problem = contributionProblem(c, names, new Set([OWN_TAG]));
          assert.equal(problem === undefined, headscaleAccepts(c), `${JSON.stringify({ src, dst })}: ${problem}`);
        },
      ),
      { numRuns: 600 },
    );
  });

  it("names the alias and Headscale's words", () => {
    const names = baseNames(BASE);
    const tags = new Set([OWN_TAG]);
    assert.equal(
      contributionProblem(contribution(["group:nope"], [OWN_TAG]), names, tags),
      'grant source "group:nope": group not defined in policy',
    );
    assert.equal(
      contributionProblem(contribution(["group:eng"], ["0.0.0.0/0"]), names, tags),
      'grant destination "0.0.0.0/0": a grant may not name a default route (Headscale: to allow all IP addresses, use "*" or "autogroup:internet")',
    );
    assert.equal(
      contributionProblem(contribution(["autogroup:internet"], [OWN_TAG]), names, tags),
      'grant source "autogroup:internet": autogroup:internet can only be used in ACL destinations',
    );
  });

  it("screening keeps a refused contribution's tags (another object's grant may name them)", () => {
    const bad = contribution(["group:nope"], [OWN_TAG]);
    const { merged, refused } = screenContributions(BASE, [bad]);
    assert.deepEqual(merged[0].tags, [OWN_TAG]);
    assert.deepEqual(merged[0].grants, []);
    assert.deepEqual(
      refused.map((r) => r.message),
      ['grant source "group:nope": group not defined in policy'],
    );
  });
});
