/**
 * A state Secret the operator answers without `data` (issue 32): dynamic apply's 3-way merge removes a key
 * only when last-applied had it and desired does not (Metacontroller v4.17.2 pkg/dynamic/apply/apply.go), so
 * what a pod wrote into the live Secret survives every InPlace update, and a desired Secret without data and
 * unchanged metadata is no update at all (no PUT to race containerboot's patches).
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { applyCreate, applyUpdate, LAST_APPLIED } from "../../../src/emulator/metacontroller/apply.js";

type Secret = Record<string, unknown> & { metadata: Record<string, unknown>; data?: Record<string, string> };

const desired = (labels: Record<string, string> = { "tailnet.internal/replica": "0" }): Secret => ({
  apiVersion: "v1",
  kind: "Secret",
  metadata: { name: "db-agent-0-state", namespace: "shop", labels },
  type: "Opaque",
});

/** The keys containerboot v1.102.5 and the kube store write (cmd/containerboot/kube.go, ipn/store/kubestore). */
const POD_DATA = {
  _machinekey: "cHJpdmtleQ==",
  "_current-profile": "cHJvZmlsZS1hYmNk",
  _profiles: "e30=",
  "profile-abcd": "e30=",
  device_id: "MTc=",
  device_fqdn: "c2hvcC1kYi50cy5uZXQu",
  device_ips: "WyIxMDAuNjQuMC45Il0=",
};

/** The live Secret after creation and after the pod patched its state in (a direct write, not through apply). */
function liveWithPodData(): Secret {
  const live = applyCreate(desired() as never) as unknown as Secret;
  live.data = { ...POD_DATA };
  return live;
}

describe("a state Secret answered without data", () => {
  it("the same answer again is no update: the pod's keys stay and nothing is written", () => {
    const live = liveWithPodData();
    const out = applyUpdate(live as never, desired() as never);
    assert.equal(out.changed, false);
    assert.deepEqual((out.object as unknown as Secret).data, POD_DATA);
  });

  it("an InPlace update of its labels keeps every key the pod wrote", () => {
    const live = liveWithPodData();
    const out = applyUpdate(live as never, desired({ "tailnet.internal/replica": "0", extra: "x" }) as never);
    assert.equal(out.changed, true);
    const merged = out.object as unknown as Secret;
    assert.deepEqual(merged.data, POD_DATA);
    assert.deepEqual(merged.metadata.labels, { "tailnet.internal/replica": "0", extra: "x" });
    const lastApplied = JSON.parse((merged.metadata.annotations as Record<string, string>)[LAST_APPLIED]);
    assert.equal("data" in lastApplied, false, "last-applied never records data, so no later answer can remove it");
  });

  it("contrast: once answered with data, an answer without it removes the whole map, the pod's keys too", () => {
    // apply.go's merge deletes a field that last-applied had and desired lacks; `data` is one field, so a
    // Secret name that was ever answered with data must never become a state Secret.
    const withData = { ...desired(), data: { authkey: "c2VjcmV0" } };
    const live = applyCreate(withData as never) as unknown as Secret;
    live.data = { ...live.data, ...POD_DATA };
    const out = applyUpdate(live as never, desired() as never);
    assert.equal(out.changed, true);
    assert.equal((out.object as unknown as Secret).data, undefined);
  });
});
