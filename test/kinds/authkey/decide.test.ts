// TailnetAuthKey and TailnetUser decide and plan (pure): every (condition, reason) pair of both tables is reached,
// the renewal plan expires only older keys of this object once the Secret is proven to hold the newer one, and
// no key is in the status.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { validateSpec } from "../../../src/api/validate.js";
import type { ConditionInput } from "../../../src/conditions/condition.js";
import { conditionsOf } from "../../../src/conditions/table.js";
import { AUTHKEY_REASONS } from "../../../src/conditions/tables/authkey.js";
import { USER_REASONS } from "../../../src/conditions/tables/user.js";
import { HeadscaleError } from "../../../src/headscale/errors.js";
import type { HsPreAuthKey, HsUser } from "../../../src/headscale/types.js";
import type { HeadscaleView, Obs } from "../../../src/headscale/view.js";
import type { K8sObject } from "../../../src/k8s/objects.js";
import type { AuthKeyOutcome } from "../../../src/kinds/authkey/act.js";
import { authKeySecretChild, type DeliveredKey } from "../../../src/kinds/authkey/children.js";
import { decideAuthKey } from "../../../src/kinds/authkey/decide.js";
import { type AuthKeyObservation, userForKey } from "../../../src/kinds/authkey/observe.js";
import { planAuthKey, provenBy } from "../../../src/kinds/authkey/plan.js";
import { authKeySpecProblem, readAuthKeySpec } from "../../../src/kinds/authkey/spec.js";
import { invalidSpecConditions } from "../../../src/kinds/common.js";
import type { HookRequest } from "../../../src/kinds/types.js";
import type { UserOutcome } from "../../../src/kinds/user/act.js";
import { decideUser } from "../../../src/kinds/user/decide.js";
import type { UserObservation } from "../../../src/kinds/user/observe.js";
import { planUser } from "../../../src/kinds/user/plan.js";
import { readUserSpec } from "../../../src/kinds/user/spec.js";
import { parentObject } from "../../fixtures/hooks.js";
import { assertCoversTable } from "../../helpers/reason-coverage.js";

const T0 = new Date("2026-11-29T10:00:00Z");
const at = (min: number) => new Date(T0.getTime() + min * 60_000);
const SPEC = {
  tailnetRef: { name: "home" },
  tags: ["tag:ci-runner"],
  expiry: "1h",
  renewBefore: "20m",
  secretName: "join",
};

const parent = (status?: Record<string, unknown>) =>
  parentObject("TailnetAuthKey", "runners", SPEC, {
    namespace: "ci",
    creationTimestamp: T0.toISOString(),
    ...(status ? { status } : {}),
  });
const req = (p: K8sObject, children: K8sObject[] = []): HookRequest => ({
  controller: {},
  parent: p,
  children: { "Secret.v1": Object.fromEntries(children.map((c) => [`ci/${c.metadata.name}`, c])) },
  related: {},
  finalizing: false,
});

const SECRET_PART = "s3cr3tS3cr3tS3cr3tS3cr3tS3cr3tS3cr3tS3cr3tS3cr3tS3cr3tS3cr3tS3cr3t";
const fullKey = (id: string) => `hskey-auth-prefix${id.padStart(7, "0")}-${SECRET_PART}`;
const listed = (
  id: string,
  createdMin: number,
  expiresMin: number,
  extra: Partial<HsPreAuthKey> = {},
): HsPreAuthKey => ({
  user: null,
  id,
  key: `hskey-auth-prefix${id.padStart(7, "0")}-***`,
  reusable: false,
  ephemeral: false,
  used: false,
  expiration: at(expiresMin).toISOString(),
  createdAt: at(createdMin).toISOString(),
  aclTags: ["tag:ci-runner"],
  ...extra,
});
const delivered = (id: string, createdMin: number): DeliveredKey => ({
  id,
  key: fullKey(id),
  createdAt: at(createdMin),
  expiresAt: at(createdMin + 60),
  renewAt: at(createdMin + 40),
});
const secretOf = (p: K8sObject, key: DeliveredKey) =>
  authKeySecretChild(p, "join", key, { url: "https://hs.example.com" });

const ok = <T>(value: T, when = 0): Obs<T> => ({ ok: true, value, at: at(when) });
const failed = <T>(): Obs<T> => ({
  ok: false,
  error: new HeadscaleError({
    kind: "transport",
    operation: "GET /api/v1/preauthkey",
    detail: "connect ECONNREFUSED",
    classification: "refused",
  }),
  at: T0,
});

function reads(r: HookRequest, now: Date, keys: Obs<HsPreAuthKey[]>): AuthKeyObservation {
  const s = r.children["Secret.v1"]?.["ci/join"];
  const secretKey = s ? Buffer.from(String((s.data as Record<string, string>).authkey), "base64").toString() : "";
  const a = s?.metadata.annotations ?? {};
  return {
    ok: true,
    now,
    ...(s
      ? {
          secret: {
            secret: s,
            id: a["tailnet.internal/key-id"],
            key: secretKey,
            createdAt: new Date(a["tailnet.internal/created-at"]),
            expiresAt: new Date(a["tailnet.internal/expires-at"]),
            renewAt: new Date(a["tailnet.internal/renew-at"]),
          },
        }
      : {}),
    settings: {} as never,
    server: { url: "https://hs.example.com" },
    view: {} as HeadscaleView,
    keys,
  };
}

/** plan + decide for one synthetic sync. */
function run(
  r: HookRequest,
  observed: AuthKeyObservation,
  outcome?: (plan: ReturnType<typeof planAuthKey>) => AuthKeyOutcome,
) {
  const spec = readAuthKeySpec(r.parent);
  const plan = planAuthKey(r.parent, spec, observed);
  const out = outcome ? outcome(plan) : { retired: [] };
  return { plan, decision: decideAuthKey(r, spec, observed, plan, out) };
}

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

  it("at most one undelivered key: before a mint, an owned key newer than the Secret's and past the grace is expired", () => {
    // key 1 was minted two minutes ago and its Secret never landed (an answer lost, a Secret it cannot write)
    const p = parent({ preAuthKeyIds: ["1"] });
    const none = req(p);
    const lost = run(none, reads(none, at(2), ok([listed("1", 0, 60)], 2)));
    assert.equal(lost.plan.mint, "missing");
    assert.deepEqual(lost.plan.retire, ["1"]);
    // within the grace it is another replica's key on its way: not expired (act waits for it, pendingKey)
    const young = run(none, reads(none, at(0.5), ok([listed("1", 0, 60)], 0.5)));
    assert.deepEqual(young.plan.retire, []);
    // renewal: the Secret proves key 1; key 2 (newer, never delivered) is expired before key 3 is minted
    const p2 = parent({ preAuthKeyIds: ["1", "2"] });
    const held = req(p2, [secretOf(p2, delivered("1", 0))]);
    const keys = ok([listed("1", 0, 60), listed("2", 41, 101)], 45);
    const renew = run(held, reads(held, at(45), keys));
    assert.equal(renew.plan.mint, "due");
    assert.deepEqual(renew.plan.retire, ["2"]);
    // an admin's key with the same tag is never among them
    const admin = run(none, reads(none, at(2), ok([listed("1", 0, 60), listed("9", 0, 6000)], 2)));
    assert.deepEqual(admin.plan.retire, ["1"]);
  });

  it("a refused object expires exactly the keys it minted, and mints nothing", () => {
    const p = parent({ preAuthKeyIds: ["2"] });
    const r = req(p, [secretOf(p, delivered("3", 1))]);
    const keys = ok([listed("1", -100, 6000), listed("2", 0, 60), listed("3", 1, 61), listed("4", 1, 3)], 5);
    const refused: AuthKeyObservation = {
      ok: false,
      now: at(5),
      reason: "TagNotGranted",
      message: "tag:ci-runner is not granted",
      admitted: false,
      secret: (reads(r, at(5), keys) as { secret: NonNullable<AuthKeyObservation["secret"]> }).secret,
      withdraw: { view: {} as HeadscaleView, keys },
    };
    const out = run(r, refused, () => ({ retired: [{ id: "2" }, { id: "3" }] }));
    // 2: recorded; 3: the Secret proves it and it has the spec's shape; 1: an admin's; 4: expired already
    assert.deepEqual(out.plan.retire, ["2", "3"]);
    assert.equal(out.plan.mint, undefined);
    assert.equal(
      out.decision.conditions.find((c) => c.type === "Ready")?.message,
      "tag:ci-runner is not granted; the keys it minted are expired",
    );
    const failing = run(r, refused, () => ({ retired: [{ id: "2", error: "500" }, { id: "3" }] }));
    assert.equal(
      failing.decision.conditions.find((c) => c.type === "Admitted")?.message,
      "tag:ci-runner is not granted; key(s) 2 it minted could not be expired yet (500); retried",
    );
    assert.equal(failing.decision.resyncAfterSeconds, 10);
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
    decideUser(r, readUserSpec(r.parent), o, planUser(r.parent, readUserSpec(r.parent), o), outcome);

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
