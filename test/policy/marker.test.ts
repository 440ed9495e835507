import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { canonicalJson, hashOfLivePolicy, policyHash } from "../../src/policy/canonical.js";
import { parseHuJson } from "../../src/policy/hujson.js";
import { markedPolicyText, operatorWrittenHash } from "../../src/policy/marker.js";
import { prettyPolicyText } from "../../src/policy/merge.js";

const policy = { acls: [{ action: "accept", src: ["group:eng"], dst: ["tag:db:5432"] }], groups: { "group:eng": [] } };
const hash = policyHash(canonicalJson(policy));
const text = markedPolicyText(hash, prettyPolicyText(policy));

describe("the operator's policy marker (policy/marker.ts)", () => {
  it("is a HuJSON comment: the text parses to the policy and hashes to the rendered hash", () => {
    const parsed = parseHuJson(text);
    assert.ok(parsed.ok);
    assert.deepEqual(parsed.value, policy);
    const live = hashOfLivePolicy(text);
    assert.ok(live.ok);
    assert.equal(live.hash, hash);
    assert.equal(operatorWrittenHash(text), hash);
  });

  it("a text without it, with another hash, or edited under it is not the operator's", () => {
    assert.equal(operatorWrittenHash(prettyPolicyText(policy)), undefined);
    assert.equal(
      operatorWrittenHash(markedPolicyText(`sha256:${"0".repeat(64)}`, prettyPolicyText(policy))),
      undefined,
    );
    assert.equal(operatorWrittenHash(text.replace("5432", "22")), undefined);
    assert.equal(operatorWrittenHash(`\n${text}`), undefined, "only on the first line");
  });

  it("whitespace or key order changed by hand keeps the same policy, so it stays the operator's", () => {
    const reformatted = text.replace(/\n {2}/g, "\n    ");
    assert.equal(operatorWrittenHash(reformatted), hash);
  });
});
