// A simulated week (issue 32, design32 §4 "A simulated week"): one egress (replicas 2) and one ingress (replicas 1)
// on a test clock moving in 5-minute steps for 7 days with authKeyTTL 24h, through pod deletions, a container
// restart, two operator restarts (the second with a new tailscale image: a template change), the emulator's
// parentCacheLag, a wiped state Secret on day 3 and a scale 2→3→2 on day 5. After every settled step: nodes
// per object == replicas (after the design's 60 s grace, SUPERSEDED_GRACE_SECONDS), no Headscale `-N` name,
// every replica keeps its node id unless its state was lost, StatefulSet templates change only at the
// template change, the key Secret keeps its name, status.preAuthKeyIds stays bounded, and the Headscale writes
// per day are counted (mints, expiries, deletes, renames) and bounded. A gateway is one more `ProxyObject` row.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { wipeStateSecret } from "../../fakes/containerboot-kube.js";
import { EGRESS, INGRESS, type ProxyObject, T0, type WeekWorld, weekWorld } from "./identity-week-world.js";

const STEP_S = 300;
const DAY = 86_400 / STEP_S; // 288 steps
const WEEK = 7 * DAY; // 2016 steps
/** Steps after a disturbance that registers or removes a node: the predecessor's 60 s grace, then one sync. */
const GRACE_STEPS = 2;
const NEW_IMAGE = "tailscale/tailscale:v1.102.6-week";

/** The disturbances, by step. */
const AT = {
  deleteEgressPod: DAY + 12,
  restartIngressContainer: DAY + 100,
  operatorRestart: 2 * DAY + 7,
  wipeEgressReplica1: 3 * DAY + 30,
  templateChange: 3 * DAY + 200,
  scaleUp: 5 * DAY,
  scaleDown: 5 * DAY + 60,
  deleteIngressPod: 6 * DAY + 5,
} as const;

type Write = "mint" | "expire" | "delete" | "rename";

interface Tally {
  /** `<day>` → `<object>` → write → count. */
  days: Record<string, Record<string, Record<Write, number>>>;
}

const owned = (w: WeekWorld, p: ProxyObject) => [...w.fake.state.nodes.values()].filter((n) => n.tags.includes(p.tag));
const replicasOf = (w: WeekWorld, p: ProxyObject) =>
  (w.get(p)?.spec as { replicas?: number } | undefined)?.replicas ?? 1;
const templates = (w: WeekWorld) =>
  Object.fromEntries(
    w.mc.list("StatefulSet").map((s) => [s.metadata.name, JSON.stringify((s.spec as { template: unknown }).template)]),
  );
type NodeItem = { replica: number; id: string; name: string };
const statusNodes = (w: WeekWorld, p: ProxyObject) =>
  ((w.get(p)?.status as { nodes?: NodeItem[] } | undefined)?.nodes ?? []).map((n) => `${n.replica}:${n.id}:${n.name}`);
const keySecrets = (w: WeekWorld, p: ProxyObject) =>
  w.mc
    .list("Secret")
    .filter((s) => s.metadata.namespace === p.namespace && s.metadata.labels?.["tailnet.internal/authkey"] === "true");

/** The operator's Headscale writes, by day and by object (a key's tag, a node's recorded owner). */
function tally(w: WeekWorld, nodeOwner: Map<string, string>, dayStarts: number[]): Tally {
  const days: Tally["days"] = {};
  for (const [index, r] of w.fake.requests.entries()) {
    const day = dayStarts.filter((start) => start <= index).length - 1;
    let write: Write | undefined;
    let owner: string | undefined;
    if (r.method === "POST" && r.path === "/api/v1/preauthkey") {
      write = "mint";
      const tags = (r.body as { aclTags?: string[] }).aclTags ?? [];
      owner = w.proxies.find((p) => tags.includes(p.tag))?.name;
    } else if (r.method === "POST" && r.path === "/api/v1/preauthkey/expire") {
      write = "expire";
      const id = String((r.body as { id?: string | number }).id ?? "");
      owner = w.proxies.find((p) => w.fake.state.preAuthKeys.get(id)?.aclTags.includes(p.tag))?.name;
    } else if (r.method === "DELETE" && /^\/api\/v1\/node\/\d+$/.test(r.path)) {
      write = "delete";
      owner = nodeOwner.get(r.path.split("/")[4]);
    } else if (r.method === "POST" && /^\/api\/v1\/node\/\d+\/rename\//.test(r.path)) {
      write = "rename";
      owner = nodeOwner.get(r.path.split("/")[4]);
    }
    if (!write) continue;
    days[day] ??= {};
    days[day][owner ?? "?"] ??= { mint: 0, expire: 0, delete: 0, rename: 0 };
    days[day][owner ?? "?"][write]++;
  }
  return { days };
}

describe("a simulated week: one node per replica (issue 32)", () => {
  it("7 days in 5-minute steps: nodes == replicas, no -N names, ids kept, templates and key names stable", async (t) => {
    const proxies = [EGRESS, INGRESS];
    const w = await weekWorld(t, proxies, { authKeyTTL: "24h", parentCacheLag: true });
    const started = performance.now();
    const cpu = process.cpuUsage();
    /** Replica → the node id it must keep (set at its first binding, moved only when its state is lost). */
    const expected = new Map<string, string>();
    const nodeOwner = new Map<string, string>();
    const graceUntil = new Map<string, number>();
    const templateChangeSteps: number[] = [];
    const keyIds = new Map<string, Set<string>>();
    let lastTemplates = templates(w);
    const failures: string[] = [];
    let initial = new Map<string, string>();
    const podUids = new Map<string, Set<string>>();
    let maxRecorded = 0;
    /** The index in the fake's request log where each day starts. */
    const dayStarts: number[] = [];
    const check = (ok: boolean, message: string) => {
      if (!ok && failures.length < 20) failures.push(message);
    };

    for (let step = 0; step <= WEEK; step++) {
      w.clock.now = new Date(T0.getTime() + step * STEP_S * 1000);
      if (step % DAY === 0) dayStarts.push(w.fake.requests.length);
      switch (step) {
        case AT.deleteEgressPod:
          w.deletePod(EGRESS, 0);
          break;
        case AT.restartIngressContainer:
          w.restartContainer(INGRESS, 0);
          break;
        case AT.operatorRestart:
          await w.restartOperator();
          break;
        case AT.wipeEgressReplica1:
          // the state is lost and the pod restarts without it: replica 1 logs in again as a new node
          wipeStateSecret(w.store, `${EGRESS.sts(1)}-state`, EGRESS.namespace);
          w.deletePod(EGRESS, 1);
          expected.delete(`${EGRESS.name}/1`);
          graceUntil.set(EGRESS.name, step + GRACE_STEPS);
          break;
        case AT.templateChange:
          await w.restartOperator(NEW_IMAGE);
          break;
        case AT.scaleUp:
          w.setSpec(EGRESS, { replicas: 3 });
          break;
        case AT.scaleDown:
          w.setSpec(EGRESS, { replicas: 2 });
          expected.delete(`${EGRESS.name}/2`);
          graceUntil.set(EGRESS.name, step + GRACE_STEPS);
          break;
        case AT.deleteIngressPod:
          w.deletePod(INGRESS, 0);
          break;
      }
      await w.settle();

      const now = templates(w);
      const changed = Object.keys({ ...now, ...lastTemplates }).filter(
        (k) => now[k] !== undefined && lastTemplates[k] !== undefined && now[k] !== lastTemplates[k],
      );
      if (changed.length) templateChangeSteps.push(step);
      check(
        changed.length === 0 || (step >= AT.templateChange && step <= AT.templateChange + GRACE_STEPS),
        `step ${step}: StatefulSet templates changed outside the template change: ${changed.join(", ")}`,
      );
      lastTemplates = now;

      for (const p of proxies) {
        const replicas = replicasOf(w, p);
        const settled = step > (graceUntil.get(p.name) ?? -1);
        const nodes = owned(w, p);
        for (const n of nodes) nodeOwner.set(n.id, p.name);
        if (settled) {
          check(
            nodes.length === replicas,
            `step ${step}: ${p.name} has ${nodes.length} nodes for ${replicas} replicas: ${nodes.map((n) => `${n.id}/${n.givenName}/${n.online ? "on" : "off"}`).join(" ")}`,
          );
          const bumped = nodes.filter((n) => /-\d+$/.test(n.givenName)).map((n) => n.givenName);
          check(bumped.length === 0, `step ${step}: ${p.name} has Headscale-bumped names ${bumped.join(", ")}`);
          const bound = [...Array(replicas).keys()].map((i) => {
            const n = w.nodeOf(p, i);
            return `${i}:${n?.id}:${n?.givenName}`;
          });
          check(
            JSON.stringify(statusNodes(w, p)) === JSON.stringify(bound),
            `step ${step}: ${p.name} status.nodes ${statusNodes(w, p).join(" ")}, running ${bound.join(" ")}`,
          );
          const identity = w.mc.condition(p.kind, p.name, "NodeIdentity", p.namespace);
          check(
            identity?.reason === "Stable",
            `step ${step}: ${p.name} NodeIdentity ${identity?.reason}: ${identity?.message}`,
          );
        }
        for (let i = 0; i < replicas; i++) {
          const node = w.nodeOf(p, i);
          check(node !== undefined, `step ${step}: ${p.name} replica ${i} runs no node`);
          if (!node) continue;
          const key = `${p.name}/${i}`;
          const want = expected.get(key);
          if (want === undefined) expected.set(key, node.id);
          else check(node.id === want, `step ${step}: ${p.name} replica ${i} is node ${node.id}, was ${want}`);
        }
        const keys = keySecrets(w, p);
        check(
          keys.length === 1 && keys[0].metadata.name === `${p.name}-authkey`,
          `step ${step}: ${p.name} key Secrets ${keys.map((s) => s.metadata.name).join(", ")}`,
        );
        const keyId = keys[0]?.metadata.annotations?.["tailnet.internal/key-id"];
        if (keyId) (keyIds.get(p.name) ?? keyIds.set(p.name, new Set()).get(p.name))?.add(keyId);
        for (let i = 0; i < replicas; i++) {
          const uid = w.podUid(p, i);
          if (uid) podUids.set(p.sts(i), (podUids.get(p.sts(i)) ?? new Set()).add(uid));
        }
        const recorded = (w.get(p)?.status as { preAuthKeyIds?: string[] } | undefined)?.preAuthKeyIds ?? [];
        maxRecorded = Math.max(maxRecorded, recorded.length);
        check(recorded.length <= 32 + replicas, `step ${step}: ${p.name} records ${recorded.length} key ids`);
      }
      if (step === 0) initial = new Map(expected);
      if (failures.length >= 20) break;
    }
    const seconds = (performance.now() - started) / 1000;
    const used = process.cpuUsage(cpu);
    const cpuSeconds = (used.user + used.system) / 1e6;
    const writes = tally(w, nodeOwner, dayStarts);
    t.diagnostic(
      `week: ${seconds.toFixed(1)} s wall, ${cpuSeconds.toFixed(1)} s CPU, ${w.mc.calls.length} hook calls, ${w.servers} server instances`,
    );
    t.diagnostic(`writes per day: ${JSON.stringify(writes.days)}`);
    t.diagnostic(`key ids per object: ${JSON.stringify(Object.fromEntries([...keyIds].map(([k, v]) => [k, v.size])))}`);
    t.diagnostic(`template changes at steps ${templateChangeSteps.join(", ")}`);
    t.diagnostic(`most key ids in a status.preAuthKeyIds: ${maxRecorded}`);
    t.diagnostic(`Pods per replica: ${JSON.stringify(Object.fromEntries([...podUids].map(([k, v]) => [k, v.size])))}`);
    t.diagnostic(`tailscale starts: ${JSON.stringify(Object.fromEntries(w.starts))}`);

    assert.deepEqual(failures, [], "invariants after every settled step");
    assert.deepEqual(w.bootErrors, [], "every agent pod booted");
    assert.deepEqual(w.mc.errors, [], "every hook answer and child write was accepted");
    assert.ok(templateChangeSteps.includes(AT.templateChange), "the new image rolled out");
    // every replica kept its first node, except the one whose state was wiped (and the one scaled away)
    const lost = `${EGRESS.name}/1`;
    for (const [replica, id] of initial) {
      if (replica === lost) assert.notEqual(expected.get(replica), id, "the wiped replica is a new node");
      else assert.equal(expected.get(replica), id, `${replica} kept node ${id}`);
    }
    assert.deepEqual([...expected.keys()].sort(), [...initial.keys()].sort(), "scaled back to the same replicas");
    // a login with the key only at first start, after the wipe and for the scaled-up replica; every other start
    // (pod deletion, container restart, the new image) reconnected with its state
    assert.deepEqual(Object.fromEntries(w.starts), {
      [EGRESS.sts(0)]: ["login", "state", "state"],
      [EGRESS.sts(1)]: ["login", "login", "state"],
      [EGRESS.sts(2)]: ["login"],
      [INGRESS.sts(0)]: ["login", "state", "state", "state"],
    });
    for (const p of proxies) {
      // a key lives 24h and rotates at half-life: ~2 keys a day, one Secret name all week
      const ids = keyIds.get(p.name)?.size ?? 0;
      assert.ok(ids >= 13 && ids <= 16, `${p.name}: ${ids} keys in 7 days`);
      for (const [day, perObject] of Object.entries(writes.days)) {
        const c = perObject[p.name] ?? { mint: 0, expire: 0, delete: 0, rename: 0 };
        assert.ok(c.mint <= 3, `${p.name} day ${day}: ${c.mint} mints`);
        assert.ok(c.expire <= 3, `${p.name} day ${day}: ${c.expire} expiries`);
        const lost = p === EGRESS && (Number(day) === 3 || Number(day) === 5) ? 1 : 0;
        assert.equal(c.delete, lost, `${p.name} day ${day}: node deletions`);
        assert.equal(c.rename, p === EGRESS && Number(day) === 3 ? 1 : 0, `${p.name} day ${day}: renames`);
      }
    }
    for (const [day, perObject] of Object.entries(writes.days))
      assert.equal(perObject["?"], undefined, `day ${day}: every write is attributed to an object`);
  });
});
