/**
 * The fake's policy validation against real verdicts: the policies in ../shared/headscale/policies were sent
 * to Tailscale's control server (Headscale 0.29 words its rejections the same way). The fake must accept every
 * accepted policy, and for the rejection classes it implements it must reject with the same message.
 */

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { describe, test } from "node:test";
import { autoApprove, normaliseRoutes, parsePolicy, prefixContains } from "./policy.js";

interface Verdict {
  id: string;
  policy: unknown;
  accepted: boolean;
  message: string | null;
}

const corpus: Verdict[] = ["acl", "grant", "ssh"].flatMap((name) =>
  readFileSync(new URL(`../../../../shared/headscale/policies/${name}.jsonl`, import.meta.url), "utf8")
    .split("\n")
    .filter((line) => line.trim() !== "")
    .map((line) => JSON.parse(line) as Verdict),
);

/** Rejection classes the fake implements; everything else it accepts on purpose (see policy.ts). */
const IMPLEMENTED = [
  /tag not found/,
  /^tag ".*" not found$/,
  /^ip and app can not both be empty$/,
  /^via can only be a tag$/,
  /^action=".*" is not supported$/,
  /^".*" is not a valid action$/,
  /^action must be specified$/,
  /^dst ".*": to allow all IP addresses, use "\*" or "autogroup:internet"$/,
];

describe("captured Tailscale verdicts", () => {
  test("the corpus is there and has both verdicts", () => {
    assert.ok(corpus.length > 500);
    assert.ok(corpus.some((v) => !v.accepted));
  });

  test("every accepted policy is accepted", () => {
    const falseRejections = corpus
      .filter((v) => v.accepted)
      .map((v) => ({ id: v.id, result: parsePolicy(JSON.stringify(v.policy)) }))
      .filter((r) => !r.result.ok);
    assert.deepEqual(falseRejections, []);
  });

  test("implemented rejections are rejected with the same message", () => {
    const relevant = corpus.filter((v) => !v.accepted && IMPLEMENTED.some((re) => re.test(v.message ?? "")));
    assert.ok(relevant.length >= 15, `${relevant.length} relevant rejections`);
    for (const verdict of relevant) {
      const result = parsePolicy(JSON.stringify(verdict.policy));
      assert.deepEqual(result, { ok: false, message: `parsing policy: ${verdict.message}` }, verdict.id);
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
