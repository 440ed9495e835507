// Issue 31: the keys a refused agent object expires when its grant is withdrawn — only those it minted, proven.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { planWithdrawal, recordedAgentKeyIds } from "../../../src/kinds/shared/withdraw.js";
import { parentObject } from "../../fixtures/hooks.js";
import { AT, preAuthKey } from "./fixtures.js";

const TAG = "tag:shop-db";
const future = "2026-11-30T10:00:00Z";
const full = (id: string) => `hskey-auth-prefix${id}-${"s".repeat(48)}`;

describe("planWithdrawal", () => {
  const listed = [
    preAuthKey({ id: "1", aclTags: [TAG], expiration: "2027-01-01T00:00:00Z" }), // an administrator's
    preAuthKey({ id: "2", aclTags: [TAG], expiration: future }), // recorded
    preAuthKey({ id: "3", aclTags: [TAG], expiration: future }), // in a key Secret, proven
    preAuthKey({ id: "4", aclTags: [TAG], expiration: "2026-11-29T09:00:00Z" }), // recorded, expired already
    preAuthKey({ id: "5", aclTags: [TAG], expiration: null }), // recorded, never expires
  ];

  it("expires the recorded keys and the keys its Secrets prove, still valid, by id", () => {
    const secrets = [{ keyId: "3", key: full("3") }];
    assert.deepEqual(planWithdrawal(["2", "4", "5", "404"], secrets, listed, AT), ["2", "3", "5"]);
  });

  it("a key Secret whose annotation names someone else's key proves nothing", () => {
    // the tenant edited the annotation to the admin's key id; its value is the object's own key 3
    assert.deepEqual(planWithdrawal([], [{ keyId: "1", key: full("3") }], listed, AT), []);
    assert.deepEqual(planWithdrawal([], [{ keyId: "1", key: undefined }], listed, AT), []);
  });

  it("recorded ids: status.preAuthKeyIds and a gateway's status.node(s) preAuthKeyId, digits only", () => {
    const p = parentObject(
      "TailnetGateway",
      "gw",
      {},
      {
        namespace: "shop",
        status: {
          preAuthKeyIds: ["7", "x"],
          node: { id: "1", preAuthKeyId: "8" },
          nodes: [{ id: "2", preAuthKeyId: "9" }, { id: "3" }],
        },
      },
    );
    assert.deepEqual(recordedAgentKeyIds(p), ["7", "8", "9"]);
  });
});
