/**
 * An HA TailnetIngress takes a new pod template one replica at a time, end to end with every real kind
 * (test/hardening/world.ts) and the emulator's StatefulSets held unready until the test lets each new pod get
 * ready (loop.holdRollout): a TailnetProxyClass image change rolls replica 0, then 1, then 2, never two at once,
 * Ready stays True and says how far the rollout got, and every replica's new pod is the same node (its state
 * Secret keeps the identity).
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { API_VERSION } from "../../../../src/api/schemas.js";
import { DEFAULT_CONFIG } from "../../../../src/config.js";
import { type K8sObject, objectsOf, recordOf } from "../../../../src/k8s/objects.js";
import { settled } from "../../../../src/kinds/shared/staged-rollout.js";
import { stampOf } from "../../../../src/kinds/shared/template-hash.js";
import { TAGS, toReady, type World, world, ZONE } from "../../../hardening/world.js";
import { bootReplica } from "../../shared/replica-boot.js";

const NS = "monitoring";
const OLD = DEFAULT_CONFIG.images.tailscale;
const NEW = `registry.example.com/${OLD}`;
const REPLICAS = [0, 1, 2];

const proxyClass = (tailscale: string) => ({
  apiVersion: API_VERSION,
  kind: "TailnetProxyClass",
  metadata: { name: "edge" },
  spec: { images: { tailscale } },
});

type Template = { spec: { containers: { name: string; image: string }[] } };
const templateOf = (o: K8sObject | undefined) => recordOf(o?.spec).template as Template | undefined;
const imageOf = (o: K8sObject | undefined) => templateOf(o)?.spec.containers.find((c) => c.name === "tailscale")?.image;
const sts = (w: World, i: number) => {
  const o = w.mc.get("apps/v1", "StatefulSet", `grafana-agent-${i}`, NS);
  if (!o) throw new Error(`no StatefulSet grafana-agent-${i}`);
  return o;
};
const ready = (w: World) => w.condition("TailnetIngress", "grafana", "Ready", NS);
const nodeIds = (w: World) => {
  const status = w.mc.get(API_VERSION, "TailnetIngress", "grafana", NS)?.status as
    | { nodes?: { replica: number; id: string }[] }
    | undefined;
  return (status?.nodes ?? []).map((n) => `${n.replica}:${n.id}`);
};

/**
 * Every sync answer of the ingress, against the StatefulSets it observed: how many replicas it gave a template
 * other than their observed one, and whether another replica was unsettled when it did.
 */
function answersDuringRollout(w: World, from: number) {
  return w.mc.calls
    .slice(from)
    .filter((c) => c.hook === "sync" && c.kind === "TailnetIngress" && c.code === 200)
    .map((c) => {
      const observed = objectsOf((c.body as { children: never }).children, "apps/v1", "StatefulSet");
      const answered = (c.response as { children: K8sObject[] }).children.filter((o) => o.kind === "StatefulSet");
      const changed = answered.filter((a) => {
        const live = observed.find((o) => o.metadata.name === a.metadata.name);
        return live && stampOf(templateOf(live)) !== stampOf(templateOf(a));
      });
      const othersUnsettled = changed.some((a) =>
        observed.some((o) => o.metadata.name !== a.metadata.name && !settled(o)),
      );
      return { changed: changed.map((a) => a.metadata.name), othersUnsettled };
    });
}

describe("HA TailnetIngress rollout (staged one replica at a time)", () => {
  it("an image change rolls replica 0, then 1, then 2, never two at once; each replica stays its node", async (t) => {
    const w = await world(t, { specs: { ingress: { replicas: 3, proxyClassName: "edge" } } });
    w.mc.apply(proxyClass(OLD) as never);
    await toReady(w);
    bootReplica(w.mc, w.fake, NS, "grafana-agent", 1);
    bootReplica(w.mc, w.fake, NS, "grafana-agent", 2);
    await w.settle();
    const serving = `serving web on grafana.${ZONE} (3 nodes online)`;
    assert.equal(ready(w)?.message, serving);
    const before = nodeIds(w);
    assert.equal(before.length, 3);
    assert.deepEqual(
      REPLICAS.map((i) => imageOf(sts(w, i))),
      [OLD, OLD, OLD],
    );

    // each new pod stays unready until the test boots it and lets it get ready
    for (const i of REPLICAS) w.mc.holdRollout(`grafana-agent-${i}`, NS);
    const from = w.mc.calls.length;
    w.mc.apply(proxyClass(NEW) as never);
    for (const i of REPLICAS) {
      await w.settle();
      assert.deepEqual(
        REPLICAS.map((j) => imageOf(sts(w, j))),
        REPLICAS.map((j) => (j <= i ? NEW : OLD)),
        `replica ${i} rolls; the replicas after it wait`,
      );
      assert.equal(settled(sts(w, i)), false, `replica ${i}'s new pod is not ready yet`);
      const r = ready(w);
      assert.equal(r?.status, "True", "the other replicas serve");
      assert.ok(
        r?.message.startsWith(`${serving}; rolling ${i} of 3 current: `),
        `Ready says how far the rollout got: ${r?.message}`,
      );
      assert.match(
        r?.message ?? "",
        new RegExp(`StatefulSet ${NS}/grafana-agent-${i} rollout in progress: 0 of 1 pod ready`),
      );
      // the new pod boots from the new template; its state Secret holds the node's keys: the same node
      const pod = bootReplica(w.mc, w.fake, NS, "grafana-agent", i);
      assert.equal(pod.boot.image, NEW);
      assert.equal(`${i}:${pod.node.id}`, before[i], `replica ${i} is still its node`);
      assert.equal(pod.usedAuthKey, false, "it reconnected, it did not register again");
      w.mc.releaseRollout(`grafana-agent-${i}`, NS);
    }
    await w.settle();
    assert.deepEqual(
      REPLICAS.map((i) => imageOf(sts(w, i))),
      [NEW, NEW, NEW],
    );
    assert.ok(REPLICAS.every((i) => settled(sts(w, i))));
    assert.equal(ready(w)?.message, serving, "the rollout is over");
    assert.deepEqual(nodeIds(w), before);
    assert.equal([...w.fake.state.nodes.values()].filter((n) => n.tags.includes(TAGS.ingress)).length, 3);

    const answers = answersDuringRollout(w, from);
    assert.ok(answers.length >= 4, `${answers.length} syncs`);
    assert.deepEqual(
      answers.filter((a) => a.changed.length > 1 || a.othersUnsettled),
      [],
      "no answer gave a new template to two replicas, or to one while another was unsettled",
    );
    assert.deepEqual(
      answers.flatMap((a) => a.changed),
      REPLICAS.map((i) => `grafana-agent-${i}`),
      "each replica got the new template once, in order",
    );
    assert.deepEqual(w.failedCalls(), []);
  });
});
