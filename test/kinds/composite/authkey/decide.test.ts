// TailnetAuthKey and TailnetUser decide and plan (pure): every (condition, reason) pair of both tables is reached,
// the renewal plan expires only older keys of this object once the Secret is proven to hold the newer one, and
// no key is in the status.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { validateSpec } from "../../../../src/api/validate.js";
import type { ConditionInput } from "../../../../src/conditions/condition.js";
import { conditionsOf } from "../../../../src/conditions/table.js";
import { AUTHKEY_REASONS } from "../../../../src/conditions/tables/authkey.js";
import { USER_REASONS } from "../../../../src/conditions/tables/user.js";
import { DEFAULT_CONFIG } from "../../../../src/config.js";
import type { Obs } from "../../../../src/headscale/errors.js";
import { HeadscaleError } from "../../../../src/headscale/errors.js";
import type { HsUser } from "../../../../src/headscale/types.js";
import type { HeadscaleView } from "../../../../src/headscale/view.js";
import type { AuthKeyOutcome } from "../../../../src/kinds/composite/authkey/act.js";
import type { decideAuthKey } from "../../../../src/kinds/composite/authkey/decide.js";
import { type AuthKeyObservation, userForKey } from "../../../../src/kinds/composite/authkey/observe.js";
import { provenBy } from "../../../../src/kinds/composite/authkey/plan.js";
import { authKeySpecProblem, readAuthKeySpec } from "../../../../src/kinds/composite/authkey/spec.js";
import type { UserOutcome } from "../../../../src/kinds/composite/user/act.js";
import { decideUser } from "../../../../src/kinds/composite/user/decide.js";
import type { UserObservation } from "../../../../src/kinds/composite/user/observe.js";
import { planUser } from "../../../../src/kinds/composite/user/plan.js";
import { readUserSpec } from "../../../../src/kinds/composite/user/spec.js";
import { invalidSpecConditions } from "../../../../src/pipeline/status.js";
import type { HookRequest } from "../../../../src/pipeline/types.js";
import { parentObject } from "../../../fixtures/hooks.js";
import { assertCoversTable } from "../../../helpers/reason-coverage.js";
import {
  at,
  delivered,
  failed,
  fullKey,
  listed,
  ok,
  parent,
  reads,
  req,
  run,
  SECRET_PART,
  SPEC,
  secretOf,
  T0,
} from "./fixtures.js";

describe("TailnetAuthKey plan", () => {
  it("proves the Secret's key by the listed prefix, never by its annotations", () => {
    assert.ok(provenBy(listed("7", 0, 60), fullKey("7")));
    assert.ok(!provenBy(listed("7", 0, 60), fullKey("8")));
    assert.ok(!provenBy({ ...listed("7", 0, 60), key: "" }, fullKey("7")));
    assert.ok(!provenBy(listed("7", 0, 60), "hskey-auth-prefix0000007-"));
  });

  it("renewal: mints at renewAt; expires the older key only once the observed Secret is proven to hold the newer", () => {
    const p = parent({ preAuthKeyIds: ["1"] });
    // due: mint, nothing retired (the Secret still holds key 1)
    const due = run(
      req(p, [secretOf(p, delivered("1", 0))]),
      reads(req(p, [secretOf(p, delivered("1", 0))]), at(41), ok([listed("1", 0, 60)], 41)),
    );
    assert.equal(due.plan.mint, "due");
    assert.deepEqual(due.plan.retire, []);
    // the Secret holds key 2 now but status (a lagging cache) names only key 1: key 1 is still ours, and older
    const r2 = req(p, [secretOf(p, delivered("2", 41))]);
    const keys = ok([listed("1", 0, 60), listed("2", 41, 101)], 42);
    const next = run(r2, reads(r2, at(42), keys));
    assert.equal(next.plan.mint, undefined);
    assert.deepEqual(next.plan.retire, ["1"]);
    // a newer key of ours that the Secret does not hold yet is never retired
    const r3 = req(
      parentObject("TailnetAuthKey", "runners", SPEC, {
        namespace: "ci",
        creationTimestamp: T0.toISOString(),
        status: { preAuthKeyIds: ["1", "2"] },
      }),
      [secretOf(p, delivered("1", 0))],
    );
    const waiting = run(r3, reads(r3, at(42), keys));
    assert.deepEqual(waiting.plan.retire, []);
  });

  it("a key the object did not mint is never retired, whatever the Secret's annotations say", () => {
    const p = parent({ preAuthKeyIds: ["2"] });
    // key 1: an admin's key with the same tag; the Secret holds key 2
    const r = req(p, [secretOf(p, delivered("2", 1))]);
    const out = run(r, reads(r, at(2), ok([listed("1", -100, 6000), listed("2", 1, 61)], 2)));
    assert.deepEqual(out.plan.retire, []);
  });

  it("when to renew comes from Headscale's listed expiry and spec.renewBefore, not the Secret's editable annotations", () => {
    const p = parent({ preAuthKeyIds: ["1"] });
    const forged = secretOf(p, { ...delivered("1", 0), renewAt: at(10_000), expiresAt: at(10_000) });
    const r = req(p, [forged]);
    const due = run(r, reads(r, at(41), ok([listed("1", 0, 60)], 41)));
    assert.equal(due.plan.mint, "due", "a renew-at annotation moved into the future stopped the renewal");
    assert.deepEqual(due.plan.times, { expiresAt: at(60), renewAt: at(40) });
    const early = secretOf(p, { ...delivered("1", 0), renewAt: at(-100) });
    const r2 = req(p, [early]);
    assert.equal(
      run(r2, reads(r2, at(1), ok([listed("1", 0, 60)], 1))).plan.mint,
      undefined,
      "an annotation in the past forced a mint",
    );
  });

  it("a cached list read before the key existed is no proof that it was revoked", () => {
    const p = parent({ preAuthKeyIds: ["1"] });
    const r = req(p, [secretOf(p, delivered("1", 0))]);
    assert.equal(run(r, reads(r, at(1), ok([], 0))).plan.mint, undefined);
    assert.equal(run(r, reads(r, at(1), ok([], 1))).plan.mint, "revoked");
  });

  it("spec problems: tags and user both or neither, expiry too short, renewBefore not shorter than expiry", () => {
    const problem = (spec: Record<string, unknown>) =>
      authKeySpecProblem(parentObject("TailnetAuthKey", "k", spec, { namespace: "ci" }));
    assert.equal(problem(SPEC), undefined);
    assert.match(problem({ ...SPEC, user: { name: "alice" } }) ?? "", /^spec.user/);
    assert.match(problem({ ...SPEC, tags: [] }) ?? "", /^spec.tags/);
    assert.match(problem({ ...SPEC, expiry: "30s" }) ?? "", /^spec.expiry/);
    assert.match(problem({ ...SPEC, renewBefore: "1h" }) ?? "", /^spec.renewBefore/);
    assert.equal(
      readAuthKeySpec(parentObject("TailnetAuthKey", "k", { ...SPEC, renewBefore: undefined }, { namespace: "ci" }))
        .renewBeforeSeconds,
      1200,
    );
  });

  it("userForKey: missing, another Tailnet's, not listing the namespace, no id yet, admitted", () => {
    const user = (spec: Record<string, unknown>, status?: Record<string, unknown>) =>
      parentObject(
        "TailnetUser",
        "alice",
        { tailnetRef: { name: "home" }, name: "alice", ...spec },
        status ? { status } : {},
      );
    assert.equal((userForKey(undefined, "alice", "home", "ci") as { reason: string }).reason, "UserNotFound");
    assert.equal(
      (userForKey(user({ tailnetRef: { name: "lab" } }), "alice", "home", "ci") as { reason: string }).reason,
      "UserNotFound",
    );
    assert.equal((userForKey(user({}), "alice", "home", "ci") as { reason: string }).reason, "UserNotAllowed");
    assert.equal(
      (userForKey(user({ authKeyNamespaces: ["ci"] }), "alice", "home", "ci") as { reason: string }).reason,
      "UserNotFound",
    );
    assert.deepEqual(userForKey(user({ authKeyNamespaces: ["ci"] }, { id: "4" }), "alice", "home", "ci"), { id: "4" });
  });
});

describe("TailnetAuthKey decide", () => {
  it("covers every (condition, reason) pair; no key in any status", () => {
    const produced: (readonly ConditionInput[])[] = [];
    const statuses: string[] = [];
    const take = (d: ReturnType<typeof decideAuthKey>) => {
      produced.push(d.conditions);
      statuses.push(JSON.stringify(d.fields), JSON.stringify(d.conditions));
    };
    const p = parent({ preAuthKeyIds: ["1"] });
    const withSecret = req(p, [secretOf(p, delivered("1", 0))]);
    const empty = req(p);
    const unobserved = (
      reason: Extract<AuthKeyObservation, { ok: false }>["reason"],
      admitted = false,
    ): AuthKeyObservation => ({
      ok: false,
      now: T0,
      reason,
      message: `${reason} happened`,
      admitted,
    });
    for (const [reason, admitted] of [
      ["NoTailnet", false],
      ["NoAPIKey", true],
      ["NamespaceNotAllowed", false],
      ["TagNotGranted", false],
      ["UserNotAllowed", false],
      ["UserNotFound", false],
      ["ExpiryTooLong", false],
      ["SecretNotOwned", false],
    ] as const) {
      take(run(empty, unobserved(reason, admitted)).decision);
    }
    // the key list cannot be read
    take(run(withSecret, reads(withSecret, at(1), failed())).decision);
    // first key minted
    const mintedKey = (id: string, createdMin: number): AuthKeyOutcome => ({
      retired: [],
      mint: { step: "minted", key: delivered(id, createdMin) },
    });
    const first = run(empty, reads(empty, T0, ok([], 0)), () => mintedKey("1", 0)).decision;
    take(first);
    assert.equal((first.fields as { keyId: string }).keyId, "1");
    // mint refused with no key yet; waiting for another replica's key
    take(
      run(empty, reads(empty, T0, ok([], 0)), () => ({ retired: [], mint: { step: "failed", error: "500" } })).decision,
    );
    take(
      run(empty, reads(empty, T0, ok([], 0)), () => ({ retired: [], mint: { step: "pending", keyId: "2" } })).decision,
    );
    // due: renewed; renewal refused; retiring the old key failed
    const list = ok([listed("1", 0, 60)], 41);
    take(run(withSecret, reads(withSecret, at(41), list), () => mintedKey("2", 41)).decision);
    const refused = run(withSecret, reads(withSecret, at(41), list), () => ({
      retired: [],
      mint: { step: "failed", error: "500" },
    })).decision;
    take(refused);
    assert.equal(refused.conditions.find((c) => c.type === "Ready")?.reason, "Ready");
    take(
      run(withSecret, reads(withSecret, at(10), ok([listed("1", 0, 60)], 10)), () => ({
        retired: [{ id: "0", error: "500" }],
      })).decision,
    );
    // past expiry with no new key
    take(
      run(withSecret, reads(withSecret, at(61), ok([listed("1", 0, 60)], 61)), () => ({
        retired: [],
        mint: { step: "failed", error: "500" },
      })).decision,
    );
    const invalid = invalidSpecConditions(
      p,
      "Ready",
      conditionsOf(AUTHKEY_REASONS).types,
      "spec.tags: set either tags or user",
    );
    assertCoversTable(AUTHKEY_REASONS, [...produced, invalid]);
    for (const s of statuses) assert.ok(!s.includes(SECRET_PART), "a key is in a status");
  });
});

describe("TailnetUser spec", () => {
  it("the CRD refuses a name Headscale would refuse (hscontrol/util/dns.go ValidateUsername), naming the field", () => {
    const problem = (name: string) => validateSpec("user", { tailnetRef: { name: "home" }, name });
    for (const ok of ["alice", "ci-bot", "alice@example.com", "a.b_c"]) assert.equal(problem(ok), undefined, ok);
    for (const bad of ["a", "1alice", "-x", "al ice", "a@b@c", "al+ice"]) assert.match(problem(bad) ?? "", /name/, bad);
  });
});

describe("TailnetUser decide", () => {
  const user = (id: string, name: string, extra: Partial<HsUser> = {}): HsUser => ({
    id,
    name,
    createdAt: T0.toISOString(),
    displayName: "",
    email: "",
    providerId: "",
    provider: "",
    profilePicUrl: "",
    ...extra,
  });
  const reqU = (status?: Record<string, unknown>, spec: Record<string, unknown> = {}): HookRequest => ({
    controller: {},
    parent: parentObject(
      "TailnetUser",
      "alice",
      { tailnetRef: { name: "home" }, name: "alice", ...spec },
      status ? { status } : {},
    ),
    children: {},
    related: {},
    finalizing: false,
  });
  const obs = (users: Obs<HsUser[]>): UserObservation => ({
    ok: true,
    view: {} as HeadscaleView,
    users,
    nodes: ok([]),
  });
  const decide = (r: HookRequest, o: UserObservation, outcome: UserOutcome = {}) =>
    decideUser({
      req: r,
      spec: readUserSpec(r.parent),
      observed: o,
      plan: planUser(r.parent, readUserSpec(r.parent), o),
      outcome,
      config: DEFAULT_CONFIG,
      now: new Date(0),
    });

  it("covers every (condition, reason) pair", () => {
    const produced = [
      decide(reqU(), { ok: false, reason: "NoTailnet", message: "x" }),
      decide(reqU(), { ok: false, reason: "NoAPIKey", message: "x" }),
      decide(reqU(), obs(failed())),
      decide(reqU(), obs(ok([user("1", "alice"), user("2", "alice", { provider: "oidc" })]))),
      decide(reqU(), obs(ok([])), {
        created: {
          ok: false,
          error: new HeadscaleError({
            kind: "http",
            operation: "POST /api/v1/user",
            status: 500,
            detail: "boom",
            classification: "other",
          }),
        },
      }),
      decide(reqU(), obs(ok([])), { created: { ok: true, value: user("3", "alice") } }),
      decide(reqU(undefined, { displayName: "Alice" }), obs(ok([user("1", "alice")]))),
      decide(reqU(), obs(ok([user("1", "alice", { provider: "oidc" })]))),
    ].map((d) => d.conditions);
    const invalid = invalidSpecConditions(reqU().parent, "Ready", conditionsOf(USER_REASONS).types, "bad");
    assertCoversTable(USER_REASONS, [...produced, invalid]);
  });

  it("createdUserId is kept only while the same local user holds the name", () => {
    const mine = decide(reqU({ createdUserId: "1" }), obs(ok([user("1", "alice")])));
    assert.equal(mine.fields.createdUserId, "1");
    const replaced = decide(reqU({ createdUserId: "1" }), obs(ok([user("5", "alice")])));
    assert.equal(replaced.fields.createdUserId, undefined);
    const oidc = decide(reqU({ createdUserId: "1" }), obs(ok([user("1", "alice", { provider: "oidc" })])));
    assert.equal(oidc.fields.createdUserId, undefined);
  });
});
