/** When the gateway's single-use bootstrap key is replaced (planBootstrapKey). */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { type KeyPlanInput, planBootstrapKey } from "../../../../src/kinds/composite/gateway/bootstrap.js";
import { gateway, hsKey, hsNode, keySecret } from "./fixtures.js";

const T0 = new Date("2026-11-29T09:40:00Z"); // key 7: created 09:30, half-life 10:00, expires 10:30

function input(over: Partial<KeyPlanInput> = {}): KeyPlanInput {
  return {
    children: [keySecret(gateway())],
    now: T0,
    keys: { ok: true, value: [hsKey()] },
    nodes: { ok: true, value: [hsNode()] },
    suspended: false,
    identityChanged: false,
    rolloutPending: false,
    pods: [
      {
        name: "gw-0",
        deleting: false,
        startTime: new Date("2026-11-29T09:31:00Z"),
        ready: { tailscale: true, coredns: true },
      },
    ],
    ...over,
  };
}

const unready = (start: string) => [
  { name: "gw-0", deleting: false, startTime: new Date(start), ready: { tailscale: false, coredns: true } },
];
const offline = { ok: true as const, value: [hsNode({ online: false })] };

describe("planBootstrapKey", () => {
  it("no key: create; expired: create; past half-life: rotate", () => {
    assert.deepEqual(planBootstrapKey(input({ children: [] })).plan, { action: "create", why: "missing" });
    assert.equal(planBootstrapKey(input({ now: new Date("2026-11-29T10:31:00Z") })).plan.action, "create");
    const half = planBootstrapKey(input({ now: new Date("2026-11-29T10:00:00Z") }));
    assert.equal(half.plan.action === "create" && half.plan.why, "halfLife");
    assert.equal(half.early, undefined);
  });

  it("a used key in steady state is kept, looked at again at half-life", () => {
    const plan = planBootstrapKey(input());
    assert.equal(plan.plan.action, "reuse");
    assert.equal(plan.recheckSeconds, 20 * 60);
  });

  const early: [string, Partial<KeyPlanInput>, string][] = [
    ["identity changed", { identityChanged: true }, "identityChanged"],
    ["suspended", { suspended: true }, "suspended"],
    ["a new pod template rolls out", { rolloutPending: true }, "rollout"],
    ["the pod lost its state and cannot log in", { pods: unready("2026-11-29T09:38:00Z"), nodes: offline }, "recovery"],
  ];
  for (const [name, over, why] of early) {
    it(`rotates early when ${name} and the key is used`, () => {
      const plan = planBootstrapKey(input(over));
      assert.equal(plan.early, why);
      assert.equal(plan.plan.action === "create" && plan.plan.current?.keyId, "7");
    });
    it(`does not rotate when ${name} but the key is still unused`, () => {
      const plan = planBootstrapKey(input({ ...over, keys: { ok: true, value: [hsKey({ used: false })] } }));
      assert.equal(plan.plan.action, "reuse");
    });
  }

  it("recovery waits for the grace period and for the node to be offline", () => {
    const young = planBootstrapKey(input({ pods: unready("2026-11-29T09:39:30Z"), nodes: offline }));
    assert.equal(young.plan.action, "reuse");
    assert.equal(young.recheckSeconds, 30);
    const online = planBootstrapKey(input({ pods: unready("2026-11-29T09:38:00Z") }));
    assert.equal(online.plan.action, "reuse");
    const unknownReadiness = planBootstrapKey(
      input({
        pods: [{ name: "gw-0", deleting: false, startTime: new Date("2026-11-29T09:00:00Z"), ready: {} }],
        nodes: offline,
      }),
    );
    assert.equal(unknownReadiness.plan.action, "reuse");
    const headscaleDown = planBootstrapKey(
      input({ pods: unready("2026-11-29T09:38:00Z"), nodes: { ok: false, error: "down" } }),
    );
    assert.equal(headscaleDown.plan.action, "reuse");
  });

  it("never rotates early on a failed key observation", () => {
    const plan = planBootstrapKey(input({ identityChanged: true, keys: { ok: false, error: "down" } }));
    assert.equal(plan.plan.action, "reuse");
  });
});
