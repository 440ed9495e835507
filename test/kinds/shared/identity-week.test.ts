// A simulated week (issue 32, design32 §4 "A simulated week"): one egress (replicas 2) and one ingress (replicas 1)
// on a test clock moving in 5-minute steps for 7 days with authKeyTTL 24h, through pod deletions, a container
// restart, two operator restarts (the second with a new tailscale image: a template change), the emulator's
// parentCacheLag, a wiped state Secret on day 3 (the ingress's on day 2, at a key rotation) and a scale 2→3→2
// on day 5. After every settled step: nodes per object == replicas (after the design's 60 s grace,
// SUPERSEDED_GRACE_SECONDS), no Headscale `-N` name, every replica keeps its node id unless its state was lost,
// status.nodes[] names the running nodes, StatefulSet templates change only at the template change, the key
// Secret keeps its name, status.preAuthKeyIds stays bounded; the Headscale writes per day are counted (mints,
// expiries, deletes, renames) and bounded. A gateway is one more `ProxyObject` row.
import assert from "node:assert/strict";
import { describe, it, type TestContext } from "node:test";
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
  // exactly when the key rotates (every 12 h from the first mint at step 0): the new pod logs in with the key
  // the same sync just rotated in place
  wipeIngressAtRotation: 2 * DAY + DAY / 2,
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
const keyIdOf = (w: WeekWorld, p: ProxyObject) =>
  keySecrets(w, p)[0]?.metadata.annotations?.["tailnet.internal/key-id"];

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

/** What the week keeps between steps: the expectations, what it saw, and the failures (the first 20). */
interface Week {
  /** Replica (`<object>/<i>`) → the node id it must keep: set at its first binding, moved only when its state is lost. */
  expected: Map<string, string>;
  /** `expected` after the first step. */
  initial: Map<string, string>;
  /** Node id → the object whose tag it carried. */
  nodeOwner: Map<string, string>;
  /** Object → the last step of a grace after a disturbance that adds or removes a node. */
  graceUntil: Map<string, number>;
  templateChangeSteps: number[];
  lastTemplates: Record<string, string>;
  keyIds: Map<string, Set<string>>;
  podUids: Map<string, Set<string>>;
  maxRecorded: number;
  /** The index in the fake's request log where each day starts. */
  dayStarts: number[];
  /** `<object>@<disturbance step>+<steps>`: how long after a graced disturbance the nodes were right again. */
  recovered: string[];
  failures: string[];
}

function check(week: Week, ok: boolean, message: string): void {
  if (!ok && week.failures.length < 20) week.failures.push(message);
}

/** The disturbance due at `step`, if any. */
async function disturb(w: WeekWorld, week: Week, step: number): Promise<void> {
  switch (step) {
    case AT.deleteEgressPod:
      return w.deletePod(EGRESS, 0);
    case AT.restartIngressContainer:
      return w.restartContainer(INGRESS, 0);
    case AT.operatorRestart:
      return w.restartOperator();
    case AT.wipeEgressReplica1:
      // the state is lost and the pod restarts without it: replica 1 logs in again as a new node
      wipeStateSecret(w.store, `${EGRESS.sts(1)}-state`, EGRESS.namespace);
      w.deletePod(EGRESS, 1);
      week.expected.delete(`${EGRESS.name}/1`);
      week.graceUntil.set(EGRESS.name, step + GRACE_STEPS);
      return;
    case AT.wipeIngressAtRotation:
      wipeStateSecret(w.store, `${INGRESS.sts(0)}-state`, INGRESS.namespace);
      w.deletePod(INGRESS, 0);
      week.expected.delete(`${INGRESS.name}/0`);
      week.graceUntil.set(INGRESS.name, step + GRACE_STEPS);
      return;
    case AT.templateChange:
      return w.restartOperator(NEW_IMAGE);
    case AT.scaleUp:
      return w.setSpec(EGRESS, { replicas: 3 });
    case AT.scaleDown:
      w.setSpec(EGRESS, { replicas: 2 });
      week.expected.delete(`${EGRESS.name}/2`);
      week.graceUntil.set(EGRESS.name, step + GRACE_STEPS);
      return;
    case AT.deleteIngressPod:
      return w.deletePod(INGRESS, 0);
  }
}

/** StatefulSet templates change only at the template change (the new image), and roll within its grace. */
function checkTemplates(w: WeekWorld, week: Week, step: number): void {
  const now = templates(w);
  const last = week.lastTemplates;
  const changed = Object.keys(now).filter((k) => last[k] !== undefined && now[k] !== last[k]);
  if (changed.length) week.templateChangeSteps.push(step);
  check(
    week,
    changed.length === 0 || (step >= AT.templateChange && step <= AT.templateChange + GRACE_STEPS),
    `step ${step}: StatefulSet templates changed outside the template change: ${changed.join(", ")}`,
  );
  week.lastTemplates = now;
}

/** Past the grace: nodes == replicas, no bumped name, status.nodes[] names the running nodes, NodeIdentity Stable. */
function checkNodes(w: WeekWorld, week: Week, p: ProxyObject, step: number): void {
  const replicas = replicasOf(w, p);
  const nodes = owned(w, p);
  for (const n of nodes) week.nodeOwner.set(n.id, p.name);
  const graceEnd = week.graceUntil.get(p.name) ?? -1;
  const bumped = nodes.filter((n) => /-\d+$/.test(n.givenName)).map((n) => n.givenName);
  if (step <= graceEnd) {
    const right = nodes.length === replicas && bumped.length === 0;
    const since = graceEnd - GRACE_STEPS;
    if (right && !week.recovered.some((r) => r.startsWith(`${p.name}@${since}+`)))
      week.recovered.push(`${p.name}@${since}+${step - since}`);
    return;
  }
  const shown = nodes.map((n) => `${n.id}/${n.givenName}/${n.online ? "on" : "off"}`).join(" ");
  check(
    week,
    nodes.length === replicas,
    `step ${step}: ${p.name} has ${nodes.length} nodes for ${replicas} replicas: ${shown}`,
  );
  check(week, bumped.length === 0, `step ${step}: ${p.name} has Headscale-bumped names ${bumped.join(", ")}`);
  const running = [...Array(replicas).keys()].map((i) => {
    const n = w.nodeOf(p, i);
    return `${i}:${n?.id}:${n?.givenName}`;
  });
  const status = statusNodes(w, p);
  check(
    week,
    JSON.stringify(status) === JSON.stringify(running),
    `step ${step}: ${p.name} status.nodes ${status.join(" ")}, running ${running.join(" ")}`,
  );
  const identity = w.mc.condition(p.kind, p.name, "NodeIdentity", p.namespace);
  check(
    week,
    identity?.reason === "Stable",
    `step ${step}: ${p.name} NodeIdentity ${identity?.reason}: ${identity?.message}`,
  );
}

/** Every replica runs its node (the same id all week), one key Secret of a stable name, bounded key records. */
function checkReplicas(w: WeekWorld, week: Week, p: ProxyObject, step: number): void {
  const replicas = replicasOf(w, p);
  for (let i = 0; i < replicas; i++) {
    const node = w.nodeOf(p, i);
    check(week, node !== undefined, `step ${step}: ${p.name} replica ${i} runs no node`);
    const uid = w.podUid(p, i);
    if (uid) week.podUids.set(p.sts(i), (week.podUids.get(p.sts(i)) ?? new Set()).add(uid));
    if (!node) continue;
    const want = week.expected.get(`${p.name}/${i}`);
    if (want === undefined) week.expected.set(`${p.name}/${i}`, node.id);
    else check(week, node.id === want, `step ${step}: ${p.name} replica ${i} is node ${node.id}, was ${want}`);
  }
  const keys = keySecrets(w, p);
  check(
    week,
    keys.length === 1 && keys[0].metadata.name === `${p.name}-authkey`,
    `step ${step}: ${p.name} key Secrets ${keys.map((s) => s.metadata.name).join(", ")}`,
  );
  const keyId = keyIdOf(w, p);
  if (keyId) week.keyIds.set(p.name, (week.keyIds.get(p.name) ?? new Set()).add(keyId));
  const recorded = (w.get(p)?.status as { preAuthKeyIds?: string[] } | undefined)?.preAuthKeyIds ?? [];
  week.maxRecorded = Math.max(week.maxRecorded, recorded.length);
  check(week, recorded.length <= 32 + replicas, `step ${step}: ${p.name} records ${recorded.length} key ids`);
}

const sizes = (m: Map<string, Set<string>>) => JSON.stringify(Object.fromEntries([...m].map(([k, v]) => [k, v.size])));

/** The numbers of the week, for the report. */
function report(t: TestContext, w: WeekWorld, week: Week, writes: Tally, wall: number, cpu: number): void {
  t.diagnostic(
    `week: ${wall.toFixed(1)} s wall, ${cpu.toFixed(1)} s CPU, ${w.mc.calls.length} hook calls, ${w.servers} servers`,
  );
  t.diagnostic(`Headscale writes per day: ${JSON.stringify(writes.days)}`);
  t.diagnostic(`key ids per object: ${sizes(week.keyIds)}; most in one status.preAuthKeyIds: ${week.maxRecorded}`);
  t.diagnostic(
    `template changes at steps ${week.templateChangeSteps.join(", ")}; Pods per replica: ${sizes(week.podUids)}`,
  );
  t.diagnostic(`tailscale starts: ${JSON.stringify(Object.fromEntries(w.starts))}`);
  t.diagnostic(`nodes right again (object@step+steps): ${week.recovered.join(", ")}`);
}

/** What the whole week must show: ids kept, logins only where state was new, keys and writes per day bounded. */
function assertWeek(w: WeekWorld, week: Week, writes: Tally): void {
  assert.deepEqual(week.failures, [], "invariants after every settled step");
  assert.deepEqual(w.bootErrors, [], "every agent pod booted");
  assert.deepEqual(w.mc.errors, [], "every hook answer and child write was accepted");
  assert.ok(week.templateChangeSteps.includes(AT.templateChange), "the new image rolled out");
  // every replica kept its first node, except the two whose state was wiped (and the one scaled away)
  const wiped = [`${EGRESS.name}/1`, `${INGRESS.name}/0`];
  for (const [replica, id] of week.initial) {
    if (wiped.includes(replica)) assert.notEqual(week.expected.get(replica), id, `${replica} is a new node`);
    else assert.equal(week.expected.get(replica), id, `${replica} kept node ${id}`);
  }
  assert.deepEqual([...week.expected.keys()].sort(), [...week.initial.keys()].sort(), "scaled back");
  // a login with the key only at first start, after the wipe and for the scaled-up replica; every other start
  // (pod deletion, container restart, the new image) reconnected with its state
  assert.deepEqual(Object.fromEntries(w.starts), {
    [EGRESS.sts(0)]: ["login", "state", "state"],
    [EGRESS.sts(1)]: ["login", "login", "state"],
    [EGRESS.sts(2)]: ["login"],
    [INGRESS.sts(0)]: ["login", "state", "login", "state", "state"],
  });
  for (const p of w.proxies) {
    // a key lives 24h and rotates at half-life: ~2 keys a day, one Secret name all week
    const ids = week.keyIds.get(p.name)?.size ?? 0;
    assert.ok(ids >= 13 && ids <= 16, `${p.name}: ${ids} keys in 7 days`);
    for (const [day, perObject] of Object.entries(writes.days)) {
      const c = perObject[p.name] ?? { mint: 0, expire: 0, delete: 0, rename: 0 };
      assert.ok(c.mint <= 3, `${p.name} day ${day}: ${c.mint} mints`);
      assert.ok(c.expire <= 3, `${p.name} day ${day}: ${c.expire} expiries`);
      // deletions: a wiped replica's predecessor (the ingress's on day 2, the egress's on day 3) and the egress
      // replica scaled away (day 5), nothing else; renames: the re-registered node back to its name
      const wipeDay = p === EGRESS ? "3" : "2";
      const deletes = (day === wipeDay ? 1 : 0) + (p === EGRESS && day === "5" ? 1 : 0);
      assert.equal(c.delete, deletes, `${p.name} day ${day}: node deletions`);
      assert.equal(c.rename, day === wipeDay ? 1 : 0, `${p.name} day ${day}: renames`);
    }
  }
  for (const [day, perObject] of Object.entries(writes.days))
    assert.equal(perObject["?"], undefined, `day ${day}: every write is attributed to an object`);
}

describe("a simulated week: one node per replica (issue 32)", () => {
  it("7 days in 5-minute steps: nodes == replicas, no -N names, ids kept, templates and key names stable", async (t) => {
    const w = await weekWorld(t, [EGRESS, INGRESS], { authKeyTTL: "24h", parentCacheLag: true });
    const started = performance.now();
    const cpu = process.cpuUsage();
    const week: Week = {
      expected: new Map(),
      initial: new Map(),
      nodeOwner: new Map(),
      graceUntil: new Map(),
      templateChangeSteps: [],
      lastTemplates: templates(w),
      keyIds: new Map(),
      podUids: new Map(),
      maxRecorded: 0,
      dayStarts: [],
      recovered: [],
      failures: [],
    };
    for (let step = 0; step <= WEEK && week.failures.length < 20; step++) {
      w.clock.now = new Date(T0.getTime() + step * STEP_S * 1000);
      if (step % DAY === 0) week.dayStarts.push(w.fake.requests.length);
      const keyBefore = step === AT.wipeIngressAtRotation ? keyIdOf(w, INGRESS) : undefined;
      await disturb(w, week, step);
      await w.settle();
      if (keyBefore) {
        // the wiped replica logged in with the key this very step rotated in place
        const rotated = keyIdOf(w, INGRESS);
        const used = w.nodeOf(INGRESS, 0)?.preAuthKeyId;
        check(
          week,
          rotated !== keyBefore && used === rotated,
          `step ${step}: key ${keyBefore}→${rotated}, used ${used}`,
        );
      }
      checkTemplates(w, week, step);
      for (const p of w.proxies) {
        checkNodes(w, week, p, step);
        checkReplicas(w, week, p, step);
      }
      if (step === 0) week.initial = new Map(week.expected);
    }
    const used = process.cpuUsage(cpu);
    const writes = tally(w, week.nodeOwner, week.dayStarts);
    report(t, w, week, writes, (performance.now() - started) / 1000, (used.user + used.system) / 1e6);
    assertWeek(w, week, writes);
  });
});
