// TailnetAuthKey plan bounds (issue 31 item 6, pure): at most one undelivered key per object, and a refused
// object expires exactly the keys it minted.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { HeadscaleView } from "../../../../src/headscale/view.js";
import type { AuthKeyObservation } from "../../../../src/kinds/composite/authkey/observe.js";
import { at, delivered, listed, ok, parent, reads, req, run, secretOf } from "./fixtures.js";

describe("TailnetAuthKey plan bounds (issue 31)", () => {
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
});
