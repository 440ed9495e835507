/**
 * The staged rollout rule the gateway and the agents share (src/kinds/shared/staged-rollout.ts), pure: which
 * replica's StatefulSet takes a new template, which keep their observed one, and the words that report it.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import fc from "fast-check";
import type { K8sObject } from "../../../src/k8s/objects.js";
import { withRolloutNote } from "../../../src/kinds/shared/agent-replicas.js";
import { REPLICA_LABEL } from "../../../src/kinds/shared/replica.js";
import { rollingMessage, rolloutProgress, settled, stageRollout } from "../../../src/kinds/shared/staged-rollout.js";
import { stampOf, stampTemplate } from "../../../src/kinds/shared/template-hash.js";

/** Replica i's StatefulSet with a pod template of `image` (stamped), settled or not. */
function sts(i: number, image: string, state: "settled" | "unready" | "rolling" | "unobserved" = "settled"): K8sObject {
  const template = stampTemplate({
    metadata: { labels: { [REPLICA_LABEL]: String(i) }, annotations: {} },
    spec: { containers: [{ name: "tailscale", image }] },
  });
  const revision = (s: string) => `px-agent-${i}-${s}`;
  const status = {
    settled: {
      observedGeneration: 2,
      readyReplicas: 1,
      currentRevision: revision(image),
      updateRevision: revision(image),
    },
    unready: {
      observedGeneration: 2,
      readyReplicas: 0,
      currentRevision: revision(image),
      updateRevision: revision(image),
    },
    rolling: {
      observedGeneration: 2,
      readyReplicas: 1,
      currentRevision: revision("old"),
      updateRevision: revision(image),
    },
    unobserved: {
      observedGeneration: 1,
      readyReplicas: 1,
      currentRevision: revision(image),
      updateRevision: revision(image),
    },
  }[state];
  return {
    apiVersion: "apps/v1",
    kind: "StatefulSet",
    metadata: { name: `px-agent-${i}`, namespace: "ns", generation: 2, labels: { [REPLICA_LABEL]: String(i) } },
    spec: { replicas: 1, template },
    status,
  };
}

const { status: _s, ...noStatus } = sts(0, "x");
const rendered = (i: number, image: string): K8sObject => {
  const { status: _status, ...o } = sts(i, image);
  return o;
};
const image = (o: K8sObject) =>
  (o.spec as { template: { spec: { containers: { image: string }[] } } }).template.spec.containers[0].image;
const stamp = (o: K8sObject | undefined) => stampOf((o?.spec as { template?: unknown } | undefined)?.template);
const byIndex = (list: K8sObject[]) => new Map(list.map((o) => [Number(o.metadata.labels?.[REPLICA_LABEL]), o]));
const configMap: K8sObject = { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "px-agent", namespace: "ns" } };

describe("settled", () => {
  it("is a StatefulSet whose controller saw its generation, whose pod is ready at the update revision", () => {
    assert.equal(settled(sts(0, "a")), true);
    assert.equal(settled(sts(0, "a", "unready")), false, "its pod is not ready");
    assert.equal(settled(sts(0, "a", "rolling")), false, "its pod still runs the previous revision");
    assert.equal(settled(sts(0, "a", "unobserved")), false, "the controller has not seen the last write");
    assert.equal(settled(noStatus), false, "no status yet");
  });
});

describe("stageRollout", () => {
  it("the lowest stale replica takes the new template; the others keep their observed one", () => {
    const observed = byIndex([sts(0, "old"), sts(1, "old"), sts(2, "old")]);
    const out = stageRollout([configMap, rendered(0, "new"), rendered(1, "new"), rendered(2, "new")], observed, {
      replicas: 3,
    });
    assert.equal(out[0], configMap, "other children pass through, in place");
    assert.deepEqual(out.slice(1).map(image), ["new", "old", "old"]);
    assert.equal(stamp(out[2]), stamp(observed.get(1)), "a held replica keeps its observed stamp");
    assert.equal(out[2].metadata.name, "px-agent-1");
  });

  it("a replica whose new pod is not ready yet holds every other one back", () => {
    const observed = byIndex([sts(0, "new", "unready"), sts(1, "old"), sts(2, "old")]);
    const out = stageRollout([rendered(0, "new"), rendered(1, "new"), rendered(2, "new")], observed, { replicas: 3 });
    assert.deepEqual(out.map(image), ["new", "old", "old"]);
    // once it is settled the next one goes
    const next = byIndex([sts(0, "new"), sts(1, "old"), sts(2, "old")]);
    const after = stageRollout([rendered(0, "new"), rendered(1, "new"), rendered(2, "new")], next, { replicas: 3 });
    assert.deepEqual(after.map(image), ["new", "new", "old"]);
  });

  it("an unsettled replica may itself take the new template when every other one is settled (no deadlock)", () => {
    const observed = byIndex([sts(0, "old"), sts(1, "old"), sts(2, "broken", "unready")]);
    const out = stageRollout([rendered(0, "fix"), rendered(1, "fix"), rendered(2, "fix")], observed, { replicas: 3 });
    assert.deepEqual(out.map(image), ["old", "old", "fix"], "replica 0 waits for 2; 2 is fixed first");
  });

  it("never blocks a creation, replicas 1, a suspend, or waits on a removed replica", () => {
    const creating = stageRollout(
      [rendered(0, "new"), rendered(1, "new"), rendered(2, "new")],
      byIndex([sts(0, "old"), sts(1, "old", "unready")]),
      { replicas: 3 },
    );
    assert.deepEqual(
      creating.map(image),
      ["old", "new", "new"],
      "replica 2 is created; 0 waits for 1, which is unsettled and rolls itself",
    );
    const one = stageRollout([rendered(0, "new")], byIndex([sts(0, "old", "unready")]), { replicas: 1 });
    assert.deepEqual(one.map(image), ["new"]);
    const suspended = stageRollout(
      [rendered(0, "new"), rendered(1, "new")],
      byIndex([sts(0, "old", "unready"), sts(1, "old", "unready")]),
      { replicas: 2, suspended: true },
    );
    assert.deepEqual(suspended.map(image), ["new", "new"]);
    const removed = stageRollout([rendered(0, "new")], byIndex([sts(0, "old"), sts(1, "old", "unready")]), {
      replicas: 1,
    });
    assert.deepEqual(removed.map(image), ["new"], "replica 1 is going away: it holds nothing back");
  });

  const cluster = fc.record({
    replicas: fc.integer({ min: 1, max: 5 }),
    extra: fc.integer({ min: 0, max: 2 }),
    suspended: fc.boolean(),
    live: fc.array(
      fc.record({
        present: fc.integer({ min: 0, max: 3 }).map((n) => n > 0),
        image: fc.constantFrom("old", "new"),
        // mostly settled, so that several replicas are stale at once while nothing else rolls
        state: fc.constantFrom("settled", "settled", "settled", "unready", "rolling", "unobserved"),
      }),
      { minLength: 7, maxLength: 7 },
    ),
  });

  it("property: at most one replica ever gets a template other than its observed one while another is unsettled", () => {
    fc.assert(
      fc.property(cluster, ({ replicas, extra, suspended, live }) => {
        const observedList = live
          .slice(0, replicas + extra)
          .flatMap((l, i) => (l.present ? [sts(i, l.image, l.state as never)] : []));
        const observed = byIndex(observedList);
        const answer = Array.from({ length: replicas }, (_, i) => rendered(i, "new"));
        const out = stageRollout(answer, observed, { replicas, suspended });
        assert.equal(out.length, answer.length);
        const changed = out.filter((o, k) => {
          const l = observed.get(k);
          return l && stamp(l) !== stamp(o);
        });
        out.forEach((o, i) => {
          const l = observed.get(i);
          if (!l || suspended) assert.deepEqual(o, answer[i], "a creation or a suspend goes as rendered");
          else assert.ok(stamp(o) === stamp(answer[i]) || stamp(o) === stamp(l), "rendered or kept");
        });
        if (suspended) return;
        assert.ok(changed.length <= 1, `${changed.length} replicas changed at once`);
        for (const c of changed) {
          const i = Number(c.metadata.labels?.[REPLICA_LABEL]);
          for (const [j, l] of observed) if (j !== i && j < replicas) assert.ok(settled(l), `${j} unsettled`);
        }
        // progress: when every replica is settled and one is stale, the lowest stale one goes
        const allSettled = [...observed].every(([j, l]) => j >= replicas || settled(l));
        const stale = answer.findIndex((a, i) => observed.has(i) && stamp(observed.get(i)) !== stamp(a));
        if (allSettled && stale >= 0) assert.equal(changed[0]?.metadata.name, `px-agent-${stale}`);
      }),
      { numRuns: 500 },
    );
  });

  it("property: syncs while pods get ready in any order roll every replica, one at a time, to the end", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 5 }),
        fc.array(fc.integer({ min: 0, max: 4 }), { maxLength: 40 }),
        (replicas, readyOrder) => {
          const live = new Map(Array.from({ length: replicas }, (_, i) => [i, sts(i, "old")]));
          const answer = Array.from({ length: replicas }, (_, i) => rendered(i, "new"));
          const step = () => {
            for (const o of stageRollout(answer, live, { replicas })) {
              const i = Number(o.metadata.labels?.[REPLICA_LABEL]);
              if (stamp(o) !== stamp(live.get(i))) live.set(i, sts(i, image(o), "unready"));
            }
            const rolling = [...live.values()].filter((l) => !settled(l));
            assert.ok(rolling.length <= 1, "two replicas restart at once");
          };
          // the test's scheduler: a sync, then maybe one new pod gets ready
          for (const r of readyOrder) {
            step();
            const l = live.get(r % replicas) as K8sObject;
            if (!settled(l)) live.set(r % replicas, sts(r % replicas, image(l)));
          }
          // then every pod gets ready after each sync: the rollout ends within `replicas` syncs
          for (let k = 0; k <= replicas; k++) {
            step();
            for (const [i, l] of live) live.set(i, sts(i, image(l)));
          }
          assert.deepEqual(
            [...live.values()].map(image),
            answer.map(() => "new"),
          );
        },
      ),
    );
  });
});

describe("rolloutProgress", () => {
  it("counts current replicas and words each other one as the gateway's WorkloadCurrent does", () => {
    const observed = [sts(0, "new", "unready"), sts(1, "old"), sts(2, "new")];
    const want = [rendered(0, "new"), rendered(1, "new"), rendered(2, "new"), rendered(3, "new")];
    const p = rolloutProgress(observed, want);
    assert.deepEqual(
      { total: p.total, current: p.current, missing: p.missing },
      { total: 4, current: 1, missing: ["px-agent-3"] },
    );
    assert.equal(
      rollingMessage(p),
      `rolling 1 of 4 current: StatefulSet ns/px-agent-0 rollout in progress: 0 of 1 pod ready at revision px-agent-0-new; StatefulSet ns/px-agent-1 does not carry the rendered pod template yet (live ${stamp(observed[1])}, rendered ${stamp(want[1])})`,
    );
    assert.equal(rollingMessage(rolloutProgress([sts(0, "new")], [rendered(0, "new")])), undefined);
    const unstamped = sts(0, "old");
    delete (unstamped.spec as { template: { metadata: { annotations?: unknown } } }).template.metadata.annotations;
    assert.match(
      rollingMessage(rolloutProgress([unstamped], [rendered(0, "old")])) ?? "",
      /live unstamped, rendered [0-9a-f]{16}\)$/,
    );
  });
});

describe("withRolloutNote (an agent's Ready)", () => {
  const ready = { type: "Ready", status: "True", reason: "Ready", message: "serving web on grafana.ts.example.com" };
  it("a True Ready gets the rollout's words while a template change rolls, and stays True", () => {
    const p = rolloutProgress([sts(0, "new", "rolling"), sts(1, "old")], [rendered(0, "new"), rendered(1, "new")]);
    assert.equal(p.changing, true);
    const noted = withRolloutNote(ready, p);
    assert.equal(noted.status, "True");
    assert.equal(noted.message, `${ready.message}; ${rollingMessage(p)}`);
    assert.match(noted.message, /; rolling 0 of 2 current: StatefulSet ns\/px-agent-0 rollout in progress: 1 of 1 pod/);
    const blocked = { ...ready, status: "False", reason: "Unreachable", message: "postgres: unreachable" };
    assert.deepEqual(withRolloutNote(blocked, p), blocked, "a blocker's message is left as it is");
  });

  it("a pod unready at its current revision is no rollout (an ingress whose backend is down fails /readyz)", () => {
    const p = rolloutProgress([sts(0, "new", "unready"), sts(1, "new")], [rendered(0, "new"), rendered(1, "new")]);
    assert.equal(p.changing, false);
    assert.equal(p.problems.length, 1, "still a problem for the gateway's WorkloadCurrent");
    assert.deepEqual(withRolloutNote(ready, p), ready);
    const stale = rolloutProgress([sts(0, "new", "unready"), sts(1, "old")], [rendered(0, "new"), rendered(1, "new")]);
    assert.match(withRolloutNote(ready, stale).message, /rolling 0 of 2 current: .*px-agent-0 rollout in progress/);
  });
});
