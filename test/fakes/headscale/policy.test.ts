/**
 * The fake's policy validation against real verdicts. real-verdicts.json holds what a real Headscale 0.29.2
 * answered to `POST /api/v1/policy/check` for every policy of Headscale's policy corpus (`juanfont/headscale
 * hscontrol/policy/v2/testdata/{acl,grant,ssh}_results` at the pin, read by test/helpers/upstream.ts; captured
 * against Tailscale's control server; Headscale words its rejections the same way) and for policies written for
 * the fake. The fake must accept everything the real server accepts, and whenever it rejects, say exactly what the
 * real server says; for the cases written for it, it must reject everything the real server rejects.
 */

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { describe, test } from "node:test";
import { POLICY_CATEGORIES, policyCorpus } from "../../helpers/upstream.js";
import { autoApprove, normaliseRoutes, type PolicyWorld, parsePolicy, prefixContains } from "./policy.js";

interface Verdict {
  id: string;
  accepted: boolean;
  message: string | null;
}

const captured = new Map(
  POLICY_CATEGORIES.flatMap((category) => policyCorpus(category).map((r) => [r.id, r.policy] as const)),
);

const real = JSON.parse(readFileSync(new URL("./real-verdicts.json", import.meta.url), "utf8")) as {
  world: PolicyWorld;
  cases: Array<Verdict & { policy: unknown }>;
  corpus: Verdict[];
};

const fakeVerdict = (policy: unknown) => {
  const result = parsePolicy(JSON.stringify(policy), "0.29", real.world);
  return result.ok ? { accepted: true, message: null } : { accepted: false, message: result.message };
};

/** Rejection classes the fake implements; other real rejections it may accept (see policy.ts). */
const IMPLEMENTED = [
  /tag not found/,
  /^parsing policy: tag ".*" not found$/,
  /ip and app can not both be empty/,
  /^parsing policy: via can only be a tag$/,
  /action="\w*" is not supported/,
  /is not a valid action$/,
  /^parsing policy: action must be specified$/,
  /to allow all IP addresses, use "\*" or "autogroup:internet"/,
  /group not defined in policy/,
  /host not defined in policy/,
  /unknown field/,
  /users must be specified|user ".*" is not valid|acceptEnv values cannot be empty/,
  /autogroup:self can only be used|"autogroup:self" not valid on the src side/,
  /autogroup:danger-all as a dst|app grants with autogroup:internet|capability name must/,
  /^parsing policy: invalid dst ".*"$/,
  /test\(s\) failed/,
  /checkPeriod .* (must be a positive duration|is above the max)|time: invalid duration/,
];

describe("verdicts of the real Headscale 0.29.2 (real-verdicts.json)", () => {
  test("the recording covers the whole captured corpus and both verdicts", () => {
    assert.equal(real.corpus.length, captured.size);
    assert.deepEqual(
      real.corpus.map((v) => v.id).filter((id) => !captured.has(id)),
      [],
      "every recorded id is a capture",
    );
    assert.ok(real.corpus.some((v) => !v.accepted) && real.cases.some((v) => !v.accepted));
  });

  test("every policy the real server accepts, the fake accepts", () => {
    const falseRejections = [...real.corpus.map((v) => ({ ...v, policy: captured.get(v.id) })), ...real.cases]
      .filter((v) => v.accepted)
      .map((v) => ({ id: v.id, fake: fakeVerdict(v.policy) }))
      .filter((r) => !r.fake.accepted);
    assert.deepEqual(falseRejections, []);
  });

  test("whenever the fake rejects a captured policy, it says what the real server says", () => {
    const rejected = real.corpus.filter((v) => !v.accepted);
    const implemented = rejected.filter((v) => IMPLEMENTED.some((re) => re.test(v.message ?? "")));
    assert.ok(implemented.length >= 50, `${implemented.length} implemented rejections`);
    for (const v of rejected) {
      const fake = fakeVerdict(captured.get(v.id));
      if (implemented.includes(v)) assert.deepEqual(fake, { accepted: false, message: v.message }, v.id);
      else if (!fake.accepted) assert.equal(fake.message, v.message, v.id);
    }
  });

  test("every case written for the fake gets the real verdict and message", () => {
    for (const v of real.cases) {
      assert.deepEqual(fakeVerdict(v.policy), { accepted: v.accepted, message: v.message }, v.id);
    }
  });
});

describe("auto-approval helpers", () => {
  test("prefixContains: same family, shorter or equal outer prefix", () => {
    assert.equal(prefixContains("10.0.0.0/8", "10.1.0.0/16"), true);
    assert.equal(prefixContains("10.1.0.0/16", "10.1.0.0/16"), true);
    assert.equal(prefixContains("10.1.0.0/16", "10.0.0.0/8"), false);
    assert.equal(prefixContains("10.0.0.0/8", "11.0.0.0/16"), false);
    assert.equal(prefixContains("fd00::/8", "fd00:1::/32"), true);
    assert.equal(prefixContains("0.0.0.0/0", "::/0"), false);
    assert.equal(prefixContains("garbage", "10.0.0.0/8"), false);
  });

  test("normaliseRoutes adds the exit pair, dedupes and sorts IPv4 first", () => {
    assert.deepEqual(normaliseRoutes(["::/0", "10.2.0.0/16", "10.1.0.0/16", "10.1.0.0/16"]), [
      "0.0.0.0/0",
      "10.1.0.0/16",
      "10.2.0.0/16",
      "::/0",
    ]);
  });

  test("user-owned nodes are approved through user@ and their groups", () => {
    const parsed = parsePolicy(
      JSON.stringify({
        groups: { "group:ops": ["alice@"] },
        autoApprovers: { routes: { "192.168.0.0/16": ["group:ops"], "172.16.0.0/12": ["bob@"] } },
      }),
    );
    assert.ok(parsed.ok);
    const approved = autoApprove(parsed.policy, {
      tags: [],
      userName: "alice",
      availableRoutes: ["192.168.1.0/24", "172.16.0.0/16"],
      approvedRoutes: [],
    });
    assert.deepEqual(approved, ["192.168.1.0/24"]);
  });
});
