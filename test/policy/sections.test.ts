import assert from "node:assert/strict";
import { describe, it } from "node:test";
import fc from "fast-check";
import { hashOfLivePolicy } from "../../src/policy/canonical.js";
import type { GeneratedPolicy, Grant } from "../../src/policy/generated-types.js";
import { markedPolicyText, operatorWrittenHash } from "../../src/policy/marker.js";
import { prettyPolicyText } from "../../src/policy/merge.js";
import {
  composeShared,
  metaOf,
  parseShared,
  type SelfId,
  type SharedInput,
  type SharedRender,
  sharedPolicyText,
} from "../../src/policy/sections.js";

const T0 = new Date("2026-12-01T10:00:00Z");
const T1 = new Date("2026-12-01T11:00:00Z");
const BASE =
  '// the base\n{"acls":[{"action":"accept","src":["group:eng"],"dst":["*:*"]}],"groups":{"group:eng":["alice@"]}}';

const self = (cluster: string, uid = `uid-${cluster}`): SelfId => ({ cluster, tailnet: "home", uid });

function gen(tags: string[], routes: Record<string, string[]> = {}, exit: string[] = []): GeneratedPolicy {
  const grants: Grant[] = tags.map((t) => ({ src: ["group:eng"], dst: [t], ip: ["tcp:443"] }));
  return {
    tagOwners: new Map(tags.map((t) => [t, ["group:platform"]])),
    grants,
    autoApproverRoutes: new Map(Object.entries(routes)),
    autoApproverExitNode: exit,
  };
}

/** What the operator of `input` would PUT, as Headscale stores it. */
function written(r: SharedRender): string {
  if (!r.merged.ok) throw new Error(r.merged.message);
  return sharedPolicyText(r.merged.hash, r.meta, prettyPolicyText(r.merged.policy));
}

function writeAs(input: Omit<SharedInput, "live">, liveText: string | undefined): string {
  return written(composeShared({ ...input, live: liveText === undefined ? undefined : parseShared(liveText) }));
}

/** `baseText` null: no base configured. */
const clusterA = (tags: string[], now = T0, baseText: string | null = BASE) => ({
  self: self("a"),
  baseText: baseText ?? undefined,
  gen: gen(tags),
  names: [],
  now,
});
const clusterB = (tags: string[], now = T0, names: string[] = []) => ({
  self: self("b"),
  baseText: undefined,
  gen: gen(tags),
  names,
  now,
});

const lines = (text: string) => text.split("\n");

describe("policy sections: one per cluster, others kept byte for byte", () => {
  it("a second cluster adds its section; the first one's line and the base stay byte for byte", () => {
    const a = writeAs(clusterA(["tag:k8s-a-db"]), undefined);
    const ab = writeAs(clusterB(["tag:k8s-b-web"]), a);
    const la = lines(a);
    const lab = lines(ab);
    // marker, base, a's section: a's lines are kept as they were; b's section follows (sorted by id)
    assert.equal(lab[1], la[1], "the base line");
    assert.equal(lab[2], la[2], "cluster a's section line");
    assert.match(lab[3], /^\/\/ tailnet-operator section \{"id":"b\/home","uid":"uid-b"/);
    assert.ok(operatorWrittenHash(ab), "the marker names the body's hash");
    const body = JSON.parse(ab.slice(ab.indexOf("\n{") + 1));
    assert.deepEqual(Object.keys(body.tagOwners), ["tag:k8s-a-db", "tag:k8s-b-web"]);
    assert.deepEqual(
      body.grants.map((g: Grant) => g.dst[0]),
      ["tag:k8s-a-db", "tag:k8s-b-web"],
    );
    assert.deepEqual(body.acls, [{ action: "accept", src: ["group:eng"], dst: ["*:*"] }]);
  });

  it("the same policy whichever cluster writes it last: nothing to write for the other (no flapping)", () => {
    const a = writeAs(clusterA(["tag:k8s-a-db"]), undefined);
    const ab = writeAs(clusterB(["tag:k8s-b-web"]), a);
    // a syncs again with unchanged inputs: it composes exactly the text b wrote
    assert.equal(writeAs(clusterA(["tag:k8s-a-db"], T1), ab), ab);
    assert.equal(writeAs(clusterB(["tag:k8s-b-web"], T1), ab), ab);
  });

  it("an operator's change replaces only its own line", () => {
    const ab = writeAs(clusterB(["tag:k8s-b-web"]), writeAs(clusterA(["tag:k8s-a-db"]), undefined));
    const changed = writeAs(clusterA(["tag:k8s-a-db", "tag:k8s-a-cache"], T1), ab);
    const [before, after] = [lines(ab), lines(changed)];
    assert.equal(after[1], before[1]);
    assert.notEqual(after[2], before[2]);
    assert.equal(after[3], before[3], "cluster b's line, byte for byte");
    // the tag a had keeps its first appearance; the new one is stamped now
    const own = parseShared(changed).sections.find((s) => s.data.id === "a/home");
    assert.deepEqual(own?.data.tags, {
      "tag:k8s-a-cache": "2026-12-01T11:00:00Z",
      "tag:k8s-a-db": "2026-12-01T10:00:00Z",
    });
  });

  it("a cluster that generates nothing leaves no line; the last one gone leaves the base", () => {
    const ab = writeAs(clusterB(["tag:k8s-b-web"]), writeAs(clusterA(["tag:k8s-a-db"]), undefined));
    const bGone = writeAs(clusterB([]), ab);
    assert.equal(
      parseShared(bGone)
        .sections.map((s) => s.data.id)
        .join(),
      "a/home",
    );
    assert.equal(lines(bGone)[2], lines(ab)[2]);
  });

  it("a base line of another cluster is kept; a different base here is reported, not written", () => {
    const a = writeAs(clusterA(["tag:k8s-a-db"]), undefined);
    const other = '{"acls":[{"action":"accept","src":["*"],"dst":["*:*"]}]}';
    const r = composeShared({ ...clusterB(["tag:k8s-b-web"]), baseText: other, live: parseShared(a) });
    assert.equal(r.baseHeldBy, "a/home");
    assert.equal(lines(written(r))[1], lines(a)[1]);
    // the same base, written differently (comments, spacing): not a conflict, and a's line stays
    const same = composeShared({ ...clusterB(["tag:k8s-b-web"]), baseText: `${BASE}\n// same`, live: parseShared(a) });
    assert.equal(same.baseHeldBy, undefined);
    assert.equal(lines(written(same))[1], lines(a)[1]);
  });

  it("a cluster that holds the base keeps its (empty) section line, so no other cluster takes its base over", () => {
    const a = writeAs(clusterA([]), undefined);
    assert.deepEqual(
      parseShared(a).sections.map((s) => s.data.id),
      ["a/home"],
    );
    const other = '{"acls":[{"action":"accept","src":["*"],"dst":["*:*"]}]}';
    const r = composeShared({ ...clusterB(["tag:k8s-b-web"]), baseText: other, live: parseShared(a) });
    assert.equal(r.baseHeldBy, "a/home");
  });

  it("the base goes with its cluster's configuration: removed there, it is removed", () => {
    const a = writeAs(clusterA(["tag:k8s-a-db"]), undefined);
    const r = composeShared({ ...clusterA(["tag:k8s-a-db"], T1, null), live: parseShared(a) });
    assert.equal(r.merged.ok, true);
    assert.ok(!written(r).includes("tailnet-operator base"));
  });

  it("never an empty policy: no base and nothing with a grant is PolicyEmpty", () => {
    const r = composeShared({ ...clusterA([], T0, null), live: undefined });
    assert.equal(r.merged.ok, false);
    assert.equal(!r.merged.ok && r.merged.reason, "PolicyEmpty");
  });
});

describe("policy sections: claims of two clusters", () => {
  it("a tag both claim belongs to the older claim; the newer's tag, grant and approvers are left out, reported on both sides", () => {
    const a = writeAs(clusterA(["tag:k8s-shop-db"], T0), undefined);
    const rb = composeShared({
      ...clusterB(["tag:k8s-shop-db", "tag:k8s-b-web"], T1),
      gen: gen(["tag:k8s-shop-db", "tag:k8s-b-web"], { "192.168.10.0/24": ["tag:k8s-shop-db"] }, ["tag:k8s-shop-db"]),
      live: parseShared(a),
    });
    assert.deepEqual(rb.refused, [{ kind: "tag", value: "tag:k8s-shop-db", other: "a/home" }]);
    assert.ok(rb.merged.ok);
    const body = rb.merged.ok ? (rb.merged.policy as Record<string, Record<string, unknown>>) : {};
    assert.deepEqual(body.tagOwners["tag:k8s-shop-db"], ["group:platform"], "a's owners only");
    const grants = body.grants as unknown as Grant[];
    assert.equal(grants.filter((g) => g.dst[0] === "tag:k8s-shop-db").length, 1, "a's grant only");
    assert.equal(body.autoApprovers, undefined, "b's route and exit approvers for the tag are left out");
    // a reads b's line and reports the contest; its own render is unchanged
    const ab = written(rb);
    const ra = composeShared({ ...clusterA(["tag:k8s-shop-db"], T1), live: parseShared(ab) });
    assert.deepEqual(ra.contested, [{ kind: "tag", value: "tag:k8s-shop-db", other: "b/home" }]);
    assert.equal(written(ra), ab, "nothing for a to write");
  });

  it("two first appearances at the same second: the section id decides, for every writer alike", () => {
    const a = writeAs(clusterA(["tag:x"], T0), undefined);
    const ab = writeAs(clusterB(["tag:x"], T0), a);
    const ra = composeShared({ ...clusterA(["tag:x"], T0), live: parseShared(ab) });
    const rb = composeShared({ ...clusterB(["tag:x"], T0), live: parseShared(ab) });
    assert.equal(ra.contested.length, 1);
    assert.equal(rb.refused.length, 1);
  });

  it("a cluster alone records no names: a name published later costs no PUT with an unchanged body", () => {
    const alone = writeAs(clusterB(["tag:k8s-b-web"], T0, []), undefined);
    const later = writeAs(clusterB(["tag:k8s-b-web"], T1, ["grafana.ts.example.com"]), alone);
    assert.equal(later, alone);
  });

  it("DNS names both publish: the cluster that was there first holds them, the newer is refused, both say so", () => {
    const T2 = new Date("2026-12-01T12:00:00Z");
    const grafana = "grafana.ts.example.com";
    // b was alone since T0, publishing grafana (not recorded while alone); a comes at T1 with grafana and loki
    const b = writeAs(clusterB(["tag:k8s-b-web"], T0, [grafana]), undefined);
    const ra = composeShared({
      ...clusterA(["tag:k8s-a-db"], T1),
      names: [grafana, "loki.ts.example.com"],
      live: parseShared(b),
    });
    assert.deepEqual(ra.refused, [], "b has recorded no name yet");
    assert.deepEqual(ra.own.names, {
      [grafana]: "2026-12-01T11:00:00Z",
      "loki.ts.example.com": "2026-12-01T11:00:00Z",
    });
    // b's next sync sees a: it records its names as old as its section (T0), so it holds grafana
    const rb = composeShared({ ...clusterB(["tag:k8s-b-web"], T2, [grafana]), live: parseShared(written(ra)) });
    assert.deepEqual(rb.own.names, { [grafana]: "2026-12-01T10:00:00Z" });
    assert.deepEqual(rb.contested, [{ kind: "name", value: grafana, other: "a/home" }]);
    const ra2 = composeShared({
      ...clusterA(["tag:k8s-a-db"], T2),
      names: [grafana, "loki.ts.example.com"],
      live: parseShared(written(rb)),
    });
    assert.deepEqual(ra2.refused, [{ kind: "name", value: grafana, other: "b/home" }]);
    // a name b publishes from now on is stamped now: a's loki stays a's
    const rb2 = composeShared({
      ...clusterB(["tag:k8s-b-web"], T2, [grafana, "loki.ts.example.com"]),
      live: parseShared(written(ra2)),
    });
    assert.deepEqual(rb2.refused, [{ kind: "name", value: "loki.ts.example.com", other: "a/home" }]);
  });

  it("another installation under the same section id: its line is kept and nothing of ours is written", () => {
    const first = writeAs({ ...clusterA(["tag:k8s-a-db"]), self: self("default", "uid-1") }, undefined);
    const r = composeShared({ ...clusterA(["tag:k8s-z"]), self: self("default", "uid-2"), live: parseShared(first) });
    assert.deepEqual(r.nameTaken, { uid: "uid-1" });
    assert.equal(written(r), first);
    const taken = composeShared({
      ...clusterA(["tag:k8s-z"]),
      self: self("default", "uid-2"),
      takeOver: true,
      live: parseShared(first),
    });
    assert.equal(taken.nameTaken, undefined);
    assert.match(written(taken), /"uid":"uid-2"/);
  });
});

describe("policy sections: reading what is stored", () => {
  it("a marker without lines is a policy of the version before sections (legacy)", () => {
    const body = '{"acls":[]}';
    const h = hashOfLivePolicy(body);
    assert.ok(h.ok);
    const legacy = parseShared(markedPolicyText(h.ok ? h.hash : "", body));
    assert.deepEqual(legacy, { marked: true, sections: [], legacy: true });
    assert.deepEqual(parseShared(body), { marked: false, sections: [], legacy: false });
  });

  it("a damaged line is skipped, the others read", () => {
    const ab = writeAs(clusterB(["tag:k8s-b-web"]), writeAs(clusterA(["tag:k8s-a-db"]), undefined));
    const l = lines(ab);
    l[2] = `${l[2].slice(0, 40)}`; // a's section cut short
    const p = parseShared(l.join("\n"));
    assert.deepEqual(
      p.sections.map((s) => s.data.id),
      ["b/home"],
    );
    assert.ok(p.base);
  });

  it("a base with line separators and newlines stays one comment line, and Headscale's reader sees the same body", () => {
    const text = `{"acls":[{"action":"accept","src":["*"],"dst":["*:*"]}], // a\u2028b\r\n "hosts": {"x\u2029": "10.0.0.1"}}`;
    const w = writeAs({ ...clusterA(["tag:k8s-a-db"]), baseText: text }, undefined);
    const p = parseShared(w);
    assert.equal(p.base?.data.text, text);
    assert.equal(lines(w).length, 3 + lines(prettyPolicyText(JSON.parse(w.slice(w.indexOf("\n{") + 1)))).length);
    assert.ok(operatorWrittenHash(w));
    assert.equal(metaOf(p), lines(w).slice(1, 3).join("\n"));
  });
});

/** Arbitrary clusters: names, and tags from a small pool so that claims collide. */
const tagPool = ["tag:k8s-a", "tag:k8s-b", "tag:k8s-c", "tag:k8s-d", "tag:k8s-e"];
const clusterArb = fc.record({
  cluster: fc.constantFrom("a", "b", "c", "d"),
  tags: fc.uniqueArray(fc.constantFrom(...tagPool), { maxLength: 4 }),
  minute: fc.integer({ min: 0, max: 3 }),
});

describe("policy sections: properties", () => {
  it("merge(own, others) keeps every other line byte for byte, and composing again writes nothing new (idempotent)", () => {
    fc.assert(
      fc.property(fc.array(clusterArb, { minLength: 1, maxLength: 6 }), (steps) => {
        // cluster z wrote the base and a grant; the steps are the other clusters' syncs
        let live: string | undefined = writeAs({ ...clusterA(["tag:base-owner"]), self: self("z") }, undefined);
        for (const step of steps) {
          const input = {
            self: self(step.cluster),
            baseText: undefined,
            gen: gen(step.tags),
            names: [],
            now: new Date(T0.getTime() + step.minute * 60_000),
          };
          const before = parseShared(live);
          const next = writeAs(input, live);
          const after = parseShared(next);
          const id = `${step.cluster}/home`;
          // every other section's line and the base line: byte for byte
          for (const s of before.sections.filter((x) => x.data.id !== id)) {
            assert.ok(
              after.sections.some((x) => x.line === s.line),
              `${s.data.id} kept`,
            );
          }
          assert.equal(after.base?.line, before.base?.line);
          // idempotent: the same inputs again compose the stored text exactly
          assert.equal(writeAs({ ...input, now: T1 }, next), next);
          live = next;
        }
      }),
      { numRuns: 200 },
    );
  });

  it("the body depends on the sections, not on who wrote last", () => {
    fc.assert(
      fc.property(clusterArb, clusterArb, (x, y) => {
        fc.pre(x.cluster !== y.cluster);
        const inX = { self: self(x.cluster), baseText: BASE, gen: gen(x.tags), names: [], now: T0 };
        const inY = { self: self(y.cluster), baseText: undefined, gen: gen(y.tags), names: [], now: T0 };
        // x first then y, or y first then x: once both wrote and both re-synced, one text
        const xy = writeAs(inX, writeAs(inY, writeAs(inX, undefined)));
        const settledXY = writeAs(inY, xy);
        const yx = writeAs(inY, writeAs(inX, undefined));
        const settledYX = writeAs(inX, yx);
        assert.equal(settledXY, settledYX);
        // every tag is owned by exactly one section, whatever the order
        const body = JSON.parse(settledXY.slice(settledXY.indexOf("\n{") + 1));
        for (const t of new Set([...x.tags, ...y.tags])) assert.ok(body.tagOwners[t], t);
      }),
      { numRuns: 200 },
    );
  });
});
