import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { canonicalJson, hashOfLivePolicy, policyHash } from "../../src/policy/canonical.js";
import type { GeneratedPolicy } from "../../src/policy/generated-types.js";
import { mergePolicy, prettyPolicyText } from "../../src/policy/merge.js";

function gen(over: Partial<GeneratedPolicy> = {}): GeneratedPolicy {
  return {
    tagOwners: new Map([
      ["tag:k8s-shop-db", ["group:platform"]],
      ["tag:router-home", ["group:platform", "alice@"]],
    ]),
    grants: [{ src: ["tag:k8s-shop-db"], dst: ["100.64.0.7"], ip: ["tcp:5432"] }],
    autoApproverRoutes: new Map([["192.168.10.0/24", ["tag:router-home"]]]),
    autoApproverExitNode: [],
    ...over,
  };
}

const emptyGen = (): GeneratedPolicy => ({
  tagOwners: new Map(),
  grants: [],
  autoApproverRoutes: new Map(),
  autoApproverExitNode: [],
});

const BASE = `// the home tailnet
{
  "groups": { "group:platform": ["bob@"], },
  "tagOwners": {
    "tag:router-home": ["bob@", "group:platform"], // written by hand
    "tag:ci": ["group:platform"],
  },
  "acls": [ { "action": "accept", "src": ["group:platform"], "dst": ["*:*"] }, ],
  "grants": [
    { "src": ["group:eng"], "dst": ["tag:ci"], "ip": ["*"] },
    { "src": ["tag:k8s-shop-db"], "dst": ["100.64.0.7"], "ip": ["tcp:5432"] },
  ],
  "autoApprovers": {
    "routes": { "192.168.10.0/24": ["tag:legacy"], "10.0.0.0/8": ["tag:ci"] },
    "exitNode": ["tag:exit"],
  },
  "ssh": [ { "action": "check", "src": ["group:platform"], "dst": ["tag:ci"], "users": ["root"] } ],
  "hosts": { "nas": "192.168.10.2" },
  "nodeAttrs": [ { "target": ["*"], "attr": ["magicdns-aaaa"] } ],
  "tests": [ { "src": "bob@", "accept": ["tag:ci:22"] } ],
  "randomizeClientPort": true,
}`;

describe("mergePolicy: merge", () => {
  it("keeps every base entry and adds the generated parts", () => {
    const r = mergePolicy(BASE, gen());
    assert.ok(r.ok, r.ok ? "" : r.message);
    assert.deepEqual(r.policy, {
      groups: { "group:platform": ["bob@"] },
      tagOwners: {
        "tag:router-home": ["bob@", "group:platform", "alice@"],
        "tag:ci": ["group:platform"],
        "tag:k8s-shop-db": ["group:platform"],
      },
      acls: [{ action: "accept", src: ["group:platform"], dst: ["*:*"] }],
      grants: [
        { src: ["group:eng"], dst: ["tag:ci"], ip: ["*"] },
        // the generated grant is an exact duplicate of this base grant: not appended twice
        { src: ["tag:k8s-shop-db"], dst: ["100.64.0.7"], ip: ["tcp:5432"] },
      ],
      autoApprovers: {
        routes: { "192.168.10.0/24": ["tag:legacy", "tag:router-home"], "10.0.0.0/8": ["tag:ci"] },
        exitNode: ["tag:exit"],
      },
      ssh: [{ action: "check", src: ["group:platform"], dst: ["tag:ci"], users: ["root"] }],
      hosts: { nas: "192.168.10.2" },
      nodeAttrs: [{ target: ["*"], attr: ["magicdns-aaaa"] }],
      tests: [{ src: "bob@", accept: ["tag:ci:22"] }],
      randomizeClientPort: true,
    });
    assert.deepEqual(r.generated, { tags: 2, grants: 1, routes: 1 });
    assert.equal(r.canonical, canonicalJson(r.policy));
    assert.equal(r.hash, policyHash(r.canonical));
    assert.deepEqual(JSON.parse(prettyPolicyText(r.policy)), JSON.parse(r.canonical));
    assert.ok(prettyPolicyText(r.policy).includes('\n  "acls": [\n'));
  });

  it("appends generated grants after the base grants", () => {
    const extra = { src: ["group:eng"], dst: ["192.168.10.0/24"], ip: ["*"] };
    const r = mergePolicy(BASE, gen({ grants: [extra, ...gen().grants] }));
    assert.ok(r.ok);
    const grants = r.policy.grants as unknown[];
    assert.equal(grants.length, 3);
    assert.deepEqual(grants[2], extra);
    assert.deepEqual(r.generated, { tags: 2, grants: 2, routes: 1 });
  });

  it("renders the generated parts alone without a base", () => {
    for (const base of [undefined, "", "  // nothing yet\n"]) {
      const r = mergePolicy(base, gen());
      assert.ok(r.ok);
      assert.deepEqual(r.policy, {
        tagOwners: { "tag:k8s-shop-db": ["group:platform"], "tag:router-home": ["alice@", "group:platform"] },
        grants: [{ src: ["tag:k8s-shop-db"], dst: ["100.64.0.7"], ip: ["tcp:5432"] }],
        autoApprovers: { routes: { "192.168.10.0/24": ["tag:router-home"] } },
      });
    }
  });

  it("matches managed sections case-insensitively, like Headscale", () => {
    const r = mergePolicy('{"TagOwners": {"tag:ci": []}, "ACLs": [{"action": "accept"}]}', gen());
    assert.ok(r.ok);
    assert.deepEqual(Object.keys(r.policy), ["TagOwners", "ACLs", "grants", "autoApprovers"]);
    assert.deepEqual(Object.keys(r.policy.TagOwners as object), ["tag:ci", "tag:k8s-shop-db", "tag:router-home"]);
  });

  it("treats null managed sections and null tag owners as empty", () => {
    const r = mergePolicy(
      '{"acls": [{}], "tagOwners": {"tag:k8s-shop-db": null}, "grants": null, "autoApprovers": null}',
      gen(),
    );
    assert.ok(r.ok);
    assert.deepEqual((r.policy.tagOwners as Record<string, unknown>)["tag:k8s-shop-db"], ["group:platform"]);
    assert.equal((r.policy.grants as unknown[]).length, 1);
  });

  it("merges autoApprovers.exitNode: the base list first, then the generated tags not in it", () => {
    const r = mergePolicy(BASE, gen({ autoApproverExitNode: ["tag:exit", "tag:k8s-exit"] }));
    assert.ok(r.ok);
    assert.deepEqual((r.policy.autoApprovers as Record<string, unknown>).exitNode, ["tag:exit", "tag:k8s-exit"]);
    const alone = mergePolicy(undefined, gen({ autoApproverExitNode: ["tag:k8s-exit"] }));
    assert.ok(alone.ok);
    assert.deepEqual(alone.policy.autoApprovers, {
      routes: { "192.168.10.0/24": ["tag:router-home"] },
      exitNode: ["tag:k8s-exit"],
    });
    const cased = mergePolicy(
      '{"acls": [{}], "autoApprovers": {"ExitNode": ["tag:a"]}}',
      gen({ autoApproverExitNode: ["tag:b"] }),
    );
    assert.ok(cased.ok);
    assert.deepEqual((cased.policy.autoApprovers as Record<string, unknown>).ExitNode, ["tag:a", "tag:b"]);
    const bad = mergePolicy(
      '{"acls": [{}], "autoApprovers": {"exitNode": "tag:a"}}',
      gen({ autoApproverExitNode: ["tag:b"] }),
    );
    assert.deepEqual(bad, {
      ok: false,
      reason: "BaseInvalid",
      message: "base policy: autoApprovers.exitNode must be a list",
    });
  });

  it("leaves the base untouched when nothing is generated", () => {
    const r = mergePolicy(BASE, emptyGen());
    const live = hashOfLivePolicy(BASE);
    assert.ok(r.ok && live.ok);
    assert.equal(r.hash, live.hash);
    assert.deepEqual(r.generated, { tags: 0, grants: 0, routes: 0 });
  });
});

describe("mergePolicy: refusals", () => {
  const rows: { name: string; base: string | undefined; gen?: GeneratedPolicy; reason: string; message: string }[] = [
    {
      name: "HuJSON syntax error",
      base: '{\n  "acls": [\n    {"action": "accept"}\n    {"action": "accept"}\n  ]\n}',
      reason: "BaseInvalid",
      message: "base policy is not valid HuJSON: line 4:5: comma expected",
    },
    {
      name: "top level not an object",
      base: "[]",
      reason: "BaseInvalid",
      message: "base policy is not valid HuJSON: the top level must be an object, got an array",
    },
    {
      name: "tagOwners of the wrong shape",
      base: '{"acls": [{}], "tagOwners": ["tag:a"]}',
      reason: "BaseInvalid",
      message: "base policy: tagOwners must be an object",
    },
    {
      name: "tag owners not a list",
      base: '{"acls": [{}], "tagOwners": {"tag:router-home": "bob@"}}',
      reason: "BaseInvalid",
      message: 'base policy: tagOwners["tag:router-home"] must be a list',
    },
    {
      name: "grants not a list",
      base: '{"grants": {}}',
      reason: "BaseInvalid",
      message: "base policy: grants must be a list",
    },
    {
      name: "autoApprovers.routes not an object",
      base: '{"acls": [{}], "autoApprovers": {"routes": []}}',
      reason: "BaseInvalid",
      message: "base policy: autoApprovers.routes must be an object",
    },
    {
      name: "a section named twice in different case",
      base: '{"acls": [{}], "tagOwners": {}, "tagowners": {}}',
      reason: "BaseInvalid",
      message: 'base policy: "tagOwners" and "tagowners" name the same section',
    },
    {
      name: "no base and nothing generated",
      base: undefined,
      gen: emptyGen(),
      reason: "PolicyEmpty",
      message: "refused: would lock everyone out: the rendered policy has no acls and no grants",
    },
    {
      name: "base with empty acls and grants, only tags generated",
      base: '{"acls": [], "grants": [], "groups": {"group:a": ["a@"]}}',
      gen: { ...emptyGen(), tagOwners: new Map([["tag:a", []]]) },
      reason: "PolicyEmpty",
      message: "refused: would lock everyone out: the rendered policy has no acls and no grants",
    },
  ];
  for (const row of rows) {
    it(row.name, () => {
      assert.deepEqual(mergePolicy(row.base, row.gen ?? gen()), {
        ok: false,
        reason: row.reason,
        message: row.message,
      });
    });
  }

  it("accepts acls alone or grants alone", () => {
    assert.equal(mergePolicy('{"acls": [{"action": "accept"}]}', emptyGen()).ok, true);
    assert.equal(mergePolicy(undefined, { ...emptyGen(), grants: gen().grants }).ok, true);
  });
});

describe("mergePolicy: determinism", () => {
  it("hashes the same for a base that differs only in comments, whitespace, trailing commas and key order", () => {
    const a = mergePolicy(BASE, gen());
    // BASE as plain JSON: no comments, no trailing commas, every object's keys reversed
    const plainBase = `{"randomizeClientPort":true,"tests":[{"accept":["tag:ci:22"],"src":"bob@"}],
      "nodeAttrs":[{"attr":["magicdns-aaaa"],"target":["*"]}],"hosts":{"nas":"192.168.10.2"},
      "ssh":[{"users":["root"],"dst":["tag:ci"],"src":["group:platform"],"action":"check"}],
      "autoApprovers":{"exitNode":["tag:exit"],"routes":{"10.0.0.0/8":["tag:ci"],"192.168.10.0/24":["tag:legacy"]}},
      "grants":[{"ip":["*"],"dst":["tag:ci"],"src":["group:eng"]},{"ip":["tcp:5432"],"dst":["100.64.0.7"],"src":["tag:k8s-shop-db"]}],
      "acls":[{"dst":["*:*"],"src":["group:platform"],"action":"accept"}],
      "tagOwners":{"tag:ci":["group:platform"],"tag:router-home":["bob@","group:platform"]},
      "groups":{"group:platform":["bob@"]}}`;
    const b = mergePolicy(plainBase, gen());
    assert.ok(a.ok && b.ok);
    assert.equal(b.canonical, a.canonical);
    assert.equal(b.hash, a.hash);
  });

  it("hashes the same for generated maps built in another order", () => {
    const g = gen();
    const flipped: GeneratedPolicy = {
      ...g,
      tagOwners: new Map([...g.tagOwners].reverse()),
    };
    const a = mergePolicy(BASE, g);
    const b = mergePolicy(BASE, flipped);
    assert.ok(a.ok && b.ok);
    assert.equal(a.hash, b.hash);
  });

  it("the rendered text, read back as the live policy, hashes to the rendered hash", () => {
    const r = mergePolicy(BASE, gen());
    assert.ok(r.ok);
    const live = hashOfLivePolicy(prettyPolicyText(r.policy));
    assert.ok(live.ok);
    assert.equal(live.hash, r.hash);
    // and a second render is byte-identical
    const again = mergePolicy(BASE, gen());
    assert.ok(again.ok);
    assert.equal(again.canonical, r.canonical);
  });

  it("does not modify the generated input", () => {
    const g = gen();
    const before = JSON.stringify([[...g.tagOwners], g.grants, [...g.autoApproverRoutes]]);
    mergePolicy(BASE, g);
    assert.equal(JSON.stringify([[...g.tagOwners], g.grants, [...g.autoApproverRoutes]]), before);
  });
});
