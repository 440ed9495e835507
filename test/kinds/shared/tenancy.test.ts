// Tenancy rules every kind calls (src/kinds/shared/tenancy.ts): derived tags injective over (namespace, name),
// tag grants and namespace selection, and "what is the object's own" in Headscale.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import fc from "fast-check";
import { TAG_PATTERN } from "../../../src/api/schemas.js";
import type { K8sObject } from "../../../src/k8s/objects.js";
import { keptTagTwins } from "../../../src/kinds/shared/kept-tags.js";
import {
  admission,
  derivedTag,
  exitNodeAdmission,
  foreignCarriers,
  nodesMintedBy,
  objectDerivedTag,
  ownKeyIds,
  readTenancy,
  recordedKeyIds,
  selects,
  tagTakenFromTailnet,
} from "../../../src/kinds/shared/tenancy.js";
import { effectiveTag } from "../../../src/kinds/shared/workload.js";
import { hsNode, preAuthKey } from "./fixtures.js";

const TAG_RE = new RegExp(TAG_PATTERN);
const label = (max: number) =>
  fc
    .array(fc.constantFrom("a", "b", "0", "-", "-", "-"), { minLength: 1, maxLength: max })
    .map((cs) => cs.join(""))
    .filter((s) => /^[a-z0-9]([a-z0-9-]*[a-z0-9])?$/.test(s));
const subdomain = fc
  .array(fc.oneof(label(63), fc.constant("a.b"), fc.constant("x".repeat(60))), { minLength: 1, maxLength: 5 })
  .map((parts) => parts.join(".").slice(0, 253))
  .filter((s) => /^[a-z0-9]([a-z0-9.-]*[a-z0-9])?$/.test(s) && !s.includes("..") && !/(\.-|-\.)/.test(s));
const prefix = fc
  .tuple(fc.constantFrom("k", "t"), fc.array(fc.constantFrom("8", "s", "-"), { maxLength: 40 }))
  .map(([first, rest]) => `tag:${first}${rest.join("")}`);

describe("derivedTag", () => {
  it("the tag earlier versions derived, for a namespace without dashes", () => {
    assert.equal(derivedTag("tag:k8s-", "shop", "db"), "tag:k8s-shop-db");
    assert.equal(derivedTag("tag:k8s-", "shop", "my-db"), "tag:k8s-shop-my-db");
  });

  it("issue 23's collision: team/a-db and team-a/db get different tags", () => {
    const a = derivedTag("tag:k8s-", "team", "a-db");
    const b = derivedTag("tag:k8s-", "team-a", "db");
    assert.equal(a, "tag:k8s-team-a-db");
    assert.equal(b, "tag:k8s-team--a-db");
    assert.notEqual(a, b);
  });

  it("the 63-character cut no longer collides: long names hash, each its own", () => {
    const long = "x".repeat(60);
    const a = derivedTag("tag:k8s-", "shop", `${long}-a`);
    const b = derivedTag("tag:k8s-", "shop", `${long}-b`);
    assert.notEqual(a, b);
    assert.match(a, TAG_RE);
    assert.match(b, TAG_RE);
  });

  it("a name with dots never equals the dashed name", () => {
    assert.notEqual(derivedTag("tag:k8s-", "shop", "a.b"), derivedTag("tag:k8s-", "shop", "a-b"));
  });

  it("upgrade: an object whose status names the tag an earlier version derived keeps it; no other status.tag counts", () => {
    const o = (status?: Record<string, unknown>) =>
      ({
        kind: "TailnetGateway",
        metadata: { name: "cluster-gw", namespace: "tailnet-system" },
        status,
      }) as unknown as K8sObject;
    assert.equal(objectDerivedTag(o(), "tag:k8s-"), "tag:k8s-tailnet--system-cluster-gw");
    assert.equal(
      objectDerivedTag(o({ tag: "tag:k8s-tailnet-system-cluster-gw" }), "tag:k8s-"),
      "tag:k8s-tailnet-system-cluster-gw",
    );
    assert.equal(objectDerivedTag(o({ tag: "tag:db" }), "tag:k8s-"), "tag:k8s-tailnet--system-cluster-gw");
  });

  it("effectiveTag: spec.tag as written, else the derived tag", () => {
    const o = (spec: Record<string, unknown>) =>
      ({ kind: "TailnetEgress", metadata: { name: "a-db", namespace: "team" }, spec }) as unknown as K8sObject;
    assert.equal(effectiveTag(o({}), "tag:k8s-"), "tag:k8s-team-a-db");
    assert.equal(effectiveTag(o({ tag: "tag:db" }), "tag:k8s-"), "tag:db");
  });

  it("property: within the tag grammar for every prefix, namespace and name at the limits", () => {
    fc.assert(
      fc.property(prefix, label(63), subdomain, (p, ns, name) => {
        const tag = derivedTag(p, ns, name);
        return TAG_RE.test(tag) && tag.length <= 4 + 63 && tag.startsWith(p);
      }),
      { numRuns: 2000 },
    );
  });

  it("property: injective over (namespace, name), names full of dashes and at the length limits", () => {
    fc.assert(
      fc.property(prefix, label(63), subdomain, label(63), subdomain, (p, ns1, n1, ns2, n2) => {
        fc.pre(ns1 !== ns2 || n1 !== n2);
        return derivedTag(p, ns1, n1) !== derivedTag(p, ns2, n2);
      }),
      { numRuns: 5000 },
    );
  });

  it("exhaustive: every namespace and name of up to 4 of [a-] is a different tag", () => {
    const words: string[] = [];
    const grow = (s: string) => {
      if (s.length && /^[a-z0-9]([a-z0-9-]*[a-z0-9])?$/.test(s)) words.push(s);
      if (s.length < 4) for (const c of ["a", "-"]) grow(s + c);
    };
    grow("");
    const seen = new Map<string, string>();
    for (const ns of words) {
      for (const name of words) {
        const tag = derivedTag("tag:k8s-", ns, name);
        const before = seen.get(tag);
        assert.equal(before, undefined, `${ns}/${name} and ${before} share ${tag}`);
        seen.set(tag, `${ns}/${name}`);
      }
    }
    assert.ok(seen.size > 30);
  });
});

const ns = (name: string, labels: Record<string, string> = {}) =>
  ({ apiVersion: "v1", kind: "Namespace", metadata: { name, labels } }) as K8sObject;

describe("admission", () => {
  const tenancy = readTenancy({
    tenancy: {
      namespaceSelector: { matchLabels: { "tailnet.internal/tenant": "true" } },
      tags: [{ namespaceSelector: { matchLabels: { team: "db" } }, tags: ["tag:db"] }],
    },
  });
  const rows: [
    string,
    ReturnType<typeof readTenancy>,
    K8sObject | undefined,
    string | undefined,
    string | undefined,
  ][] = [
    ["no spec.tenancy: every namespace, derived tag", readTenancy({}), ns("shop"), undefined, undefined],
    ["no spec.tenancy: an explicit tag is not granted", readTenancy({}), ns("shop"), "tag:db", "TagNotGranted"],
    ["namespace not selected", tenancy, ns("shop", { team: "db" }), undefined, "NamespaceNotAllowed"],
    ["namespace labels not observed", tenancy, undefined, undefined, "NamespaceNotAllowed"],
    ["selected, derived tag", tenancy, ns("shop", { "tailnet.internal/tenant": "true" }), undefined, undefined],
    [
      "selected, tag granted to its labels",
      tenancy,
      ns("shop", { "tailnet.internal/tenant": "true", team: "db" }),
      "tag:db",
      undefined,
    ],
    [
      "selected, tag granted to other namespaces",
      tenancy,
      ns("shop", { "tailnet.internal/tenant": "true" }),
      "tag:db",
      "TagNotGranted",
    ],
    [
      "selected, another tag",
      tenancy,
      ns("shop", { "tailnet.internal/tenant": "true", team: "db" }),
      "tag:admin",
      "TagNotGranted",
    ],
  ];
  for (const [name, t, n, tag, want] of rows) {
    it(name, () => assert.equal(admission(t, "shop", n, tag)?.reason, want));
  }

  it("a grant without a namespaceSelector grants nothing", () => {
    const t = readTenancy({ tenancy: { tags: [{ tags: ["tag:db"] }] } });
    assert.equal(admission(t, "shop", ns("shop"), "tag:db")?.reason, "TagNotGranted");
  });

  it("label selector operators", () => {
    const l = { a: "1", b: "2" };
    assert.equal(selects({}, l), true);
    assert.equal(selects({ matchExpressions: [{ key: "a", operator: "In", values: ["1"] }] }, l), true);
    assert.equal(selects({ matchExpressions: [{ key: "a", operator: "NotIn", values: ["1"] }] }, l), false);
    assert.equal(selects({ matchExpressions: [{ key: "c", operator: "Exists" }] }, l), false);
    assert.equal(selects({ matchExpressions: [{ key: "c", operator: "DoesNotExist" }] }, l), true);
    assert.equal(selects({ matchExpressions: [{ key: "a", operator: "Bogus" }] }, l), false);
  });
});

describe("exitNodeAdmission: who may turn a gateway into an exit node", () => {
  const selected = readTenancy({ tenancy: { exitNodes: { namespaceSelector: { matchLabels: { exit: "yes" } } } } });
  const rows: [string, ReturnType<typeof readTenancy>, K8sObject | undefined, boolean][] = [
    ["no spec.tenancy: nobody (an admin opts in)", readTenancy({}), ns("infra"), false],
    ["spec.tenancy without exitNodes: nobody", readTenancy({ tenancy: { tags: [] } }), ns("infra"), false],
    ["exitNodes without a namespaceSelector: nobody", readTenancy({ tenancy: { exitNodes: {} } }), ns("infra"), false],
    ["a namespace the selector does not select", selected, ns("infra", { exit: "no" }), false],
    ["the namespace's labels not observed", selected, undefined, false],
    ["a selected namespace", selected, ns("infra", { exit: "yes" }), true],
    [
      "{} selects every namespace",
      readTenancy({ tenancy: { exitNodes: { namespaceSelector: {} } } }),
      ns("infra"),
      true,
    ],
  ];
  for (const [name, t, n, allowed] of rows) {
    it(name, () => {
      const refusal = exitNodeAdmission(t, "infra", n);
      assert.equal(refusal === undefined, allowed, refusal?.message);
      if (refusal) assert.equal(refusal.reason, "ExitNodeNotAllowed");
    });
  }
  it("the workload namespaceSelector does not grant exit nodes", () => {
    const t = readTenancy({ tenancy: { namespaceSelector: {} } });
    assert.equal(admission(t, "infra", ns("infra"), undefined), undefined);
    assert.equal(exitNodeAdmission(t, "infra", ns("infra"))?.reason, "ExitNodeNotAllowed");
  });
});

describe("what is the object's own", () => {
  const TAG = "tag:k8s-shop-db";
  const agentKey = (id: string, over: Partial<ReturnType<typeof preAuthKey>> = {}) => ({
    ...preAuthKey({ id, aclTags: [TAG], expiration: null }),
    reusable: true,
    ephemeral: true,
    createdAt: "2026-11-29T00:00:00Z",
    ...over,
  });
  const parent = (status?: Record<string, unknown>, tag?: string) =>
    ({
      kind: "TailnetEgress",
      metadata: { name: "db", namespace: "shop", creationTimestamp: "2026-11-28T00:00:00Z" },
      spec: tag ? { tag } : {},
      ...(status ? { status } : {}),
    }) as unknown as K8sObject;

  it("status.preAuthKeyIds and the Secrets' ids; nothing adopted once status records keys", () => {
    const own = ownKeyIds(parent({ preAuthKeyIds: ["3"] }), TAG, ["5"], [agentKey("4")]);
    assert.deepEqual([...own].sort(), ["3", "5"]);
  });

  it("an object from before status.preAuthKeyIds adopts the agent keys of its derived tag made after it", () => {
    const keys = [
      agentKey("4"),
      agentKey("6", { createdAt: "2026-11-27T00:00:00Z" }),
      agentKey("7", { reusable: false, ephemeral: false }),
      agentKey("8", { aclTags: [TAG, "tag:other"] }),
    ];
    assert.deepEqual([...ownKeyIds(parent(), TAG, ["5"], keys)].sort(), ["4", "5"]);
  });

  it("an explicit tag adopts only while granted, and only keys with the operator's agent-key lifetime", () => {
    const minted = agentKey("4", { expiration: "2026-11-30T00:00:00Z" }); // created + 24h, as the operator mints
    const admins = agentKey("5", { expiration: "2026-12-29T00:00:00Z" }); // the admins' own 30-day key
    const p = parent(undefined, TAG);
    assert.deepEqual([...ownKeyIds(p, TAG, [], [minted, admins])], [], "not granted: nothing adopted");
    assert.deepEqual([...ownKeyIds(p, TAG, [], [minted, admins], { ttlSeconds: 86400 })], ["4"]);
  });

  it("nodesMintedBy and foreignCarriers", () => {
    const nodes = [
      { ...hsNode({ id: "1", name: "agent", tags: [TAG] }), preAuthKey: agentKey("3") },
      hsNode({ id: "2", name: "db-1", tags: [TAG] }),
      { ...hsNode({ id: "3", name: "db-2", tags: [TAG] }), preAuthKey: agentKey("9") },
    ];
    const own = new Set(["3"]);
    assert.deepEqual(
      nodesMintedBy(nodes, own).map((n) => n.name),
      ["agent"],
    );
    assert.deepEqual(
      foreignCarriers(nodes, TAG, own).map((n) => n.name),
      ["db-1", "db-2"],
    );
  });

  it("tagTakenFromTailnet: the Tailnet's view of TagInUse (node list + status), derived tags never taken", () => {
    const minted = agentKey("4", { expiration: "2026-11-30T00:00:00Z" });
    const mine = { ...hsNode({ id: "1", name: "agent", tags: [TAG] }), preAuthKey: minted };
    const admins = hsNode({ id: "2", name: "db-srv", tags: [TAG] });
    const taken = (p: K8sObject, nodes: ReturnType<typeof hsNode>[]) =>
      tagTakenFromTailnet(p, TAG, nodes, 86400).map((n) => n.name);
    assert.deepEqual(taken(parent({ preAuthKeyIds: ["4"] }, TAG), [mine]), [], "its own recorded key");
    assert.deepEqual(taken(parent({ preAuthKeyIds: ["3"] }, TAG), [mine]), ["agent"], "a key it did not record");
    assert.deepEqual(taken(parent(undefined, TAG), [mine]), [], "before preAuthKeyIds: its agent-shaped key adopted");
    assert.deepEqual(taken(parent({ preAuthKeyIds: ["4"] }, TAG), [mine, admins]), ["db-srv"]);
    assert.deepEqual(taken(parent({ preAuthKeyIds: [] }), [admins]), [], "a derived tag is the object's own");
  });

  it("recordedKeyIds: adds the key in use, prunes ids neither listed nor used, keeps the newest 32", () => {
    const nodes = [{ ...hsNode({ id: "1", name: "agent", tags: [TAG] }), preAuthKey: agentKey("2") }];
    assert.deepEqual(recordedKeyIds(new Set(["1", "2", "10"]), "11", nodes, [agentKey("10")]), ["2", "10", "11"]);
    assert.deepEqual(recordedKeyIds(new Set(["1", "2"]), "3", undefined, undefined), ["1", "2", "3"]);
    const many = new Set(Array.from({ length: 40 }, (_, i) => String(i + 1)));
    const listed = [...many].map((id) => agentKey(id));
    const kept = recordedKeyIds(many, undefined, [], listed);
    assert.equal(kept.length, 32);
    assert.equal(kept[0], "9");
  });

  it("recordedKeyIds: a key a node still uses outlives 40 in-place rotations (issue 32: ownership outlives rotations)", () => {
    // node 7 registered with key 1 sixteen days ago; keys 2..41 were minted since, one per rotation
    const node = { ...hsNode({ id: "7", name: "shop-db", tags: [TAG] }), preAuthKey: agentKey("1") };
    const known = new Set(Array.from({ length: 41 }, (_, i) => String(i + 1)));
    const listed = [...known].map((id) => agentKey(id));
    const kept = recordedKeyIds(known, "41", [node], listed);
    assert.equal(kept[0], "1", "the id the node registered with is kept");
    assert.equal(kept.length, 33, "the cap of 32 applies to the ids no node uses");
    assert.deepEqual(kept.slice(1, 3), ["10", "11"]);
    assert.deepEqual(
      nodesMintedBy([node], new Set(kept)).map((n) => n.id),
      ["7"],
      "so the node stays ours",
    );
  });

  it("recordedKeyIds: without the lists (a failed read) nothing is pruned or capped", () => {
    const known = new Set(Array.from({ length: 40 }, (_, i) => String(i + 1)));
    const kept = recordedKeyIds(known, "41", undefined, undefined);
    assert.equal(kept.length, 41);
    assert.equal(kept[0], "1");
  });
});

describe("keptTagTwins: a fresh derived tag another object kept from before the upgrade", () => {
  const obj = (kind: string, namespace: string, name: string, status?: Record<string, unknown>, tag?: string) =>
    ({
      kind,
      metadata: { name, namespace },
      spec: tag ? { tag } : {},
      ...(status ? { status } : {}),
    }) as unknown as K8sObject;
  it("the keeper keeps it, across kinds; the fresh twin is named with its keeper", () => {
    const keeper = obj("TailnetIngress", "team-a", "db", { tag: "tag:k8s-team-a-db" });
    const twin = obj("TailnetEgress", "team", "a-db");
    const synced = obj("TailnetEgress", "team", "a-db", { tag: "tag:k8s-team-a-db" });
    const fresh = obj("TailnetIngress", "team-a", "web");
    const explicit = obj("TailnetIngress", "x", "y", undefined, "tag:k8s-team-a-db");
    const want = new Map([["TailnetEgress/team/a-db", "TailnetIngress/team-a/db"]]);
    assert.deepEqual(keptTagTwins([twin, keeper, fresh, explicit], "tag:k8s-"), want);
    assert.deepEqual(keptTagTwins([synced, keeper], "tag:k8s-"), want, "its own status.tag keeps no twin");
    assert.deepEqual(keptTagTwins([twin, fresh], "tag:k8s-"), new Map(), "no keeper: no twin");
  });
});
