// Hook-side handling of state Secrets (issue 32 §2.7): only device_id and the presence of a machine key are ever
// read, and no answer built by the shared helpers carries an observed state Secret's data.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { K8sObject } from "../../../src/k8s/objects.js";
import { decideEgress } from "../../../src/kinds/composite/egress/decide.js";
import { decideIngress } from "../../../src/kinds/composite/ingress/decide.js";
import { keptStateSecret, replicaName, stateSecret, withoutStateData } from "../../../src/kinds/shared/replica.js";
import { stateFacts } from "../../../src/kinds/shared/replica-nodes.js";
import { input as egressInput, keySecret, NO_TAILNET } from "../composite/egress/fixtures.js";
import { healthyInput, NO_TAILNET as INGRESS_NO_TAILNET } from "../composite/ingress/inputs.js";

const MARKER = "PLANTED-MACHINE-KEY-7f3a";
const b64 = (s: string) => Buffer.from(s).toString("base64");
const parent = {
  apiVersion: "x/v1",
  kind: "TailnetEgress",
  metadata: { name: "db", namespace: "shop", uid: "u" },
} as K8sObject;

/** An observed state Secret as tailscaled's kube store leaves it, with last-applied as Metacontroller writes it. */
function observedState(index: number, data: Record<string, string>): K8sObject {
  const desired = stateSecret({ parent, index, name: replicaName("db", "agent", index), labels: {} });
  return {
    ...desired,
    metadata: {
      ...desired.metadata,
      creationTimestamp: "2026-11-29T09:00:00Z",
      resourceVersion: "12",
      annotations: { "metacontroller.k8s.io/last-applied-configuration": JSON.stringify(desired) },
    },
    data: Object.fromEntries(Object.entries(data).map(([k, v]) => [k, b64(v)])),
  } as K8sObject;
}

describe("stateFacts", () => {
  it("reads device_id and whether _machinekey is present, nothing else", () => {
    const facts = stateFacts([
      observedState(1, { _machinekey: MARKER, device_id: "17", "profile-ab12": MARKER }),
      observedState(0, {}),
    ]);
    assert.deepEqual(facts, [
      { index: 0, name: "db-agent-0-state", created: new Date("2026-11-29T09:00:00Z"), hasState: false },
      {
        index: 1,
        name: "db-agent-1-state",
        created: new Date("2026-11-29T09:00:00Z"),
        deviceId: "17",
        hasState: true,
      },
    ]);
    assert.equal(JSON.stringify(facts).includes(MARKER), false);
  });

  it("a device_id that is not a decimal node id is 'invalid' (never echoed)", () => {
    const [f] = stateFacts([observedState(0, { device_id: `17; ${MARKER}` })]);
    assert.equal(f?.deviceId, "invalid");
  });

  it("Secrets without the state label, or being deleted, are not state", () => {
    const other = { ...observedState(0, { device_id: "3" }), metadata: { name: "x", labels: {} } } as K8sObject;
    const going = observedState(1, { device_id: "4" });
    going.metadata.deletionTimestamp = "2026-11-29T09:00:00Z";
    assert.deepEqual(stateFacts([other, going]), []);
  });
});

describe("no answer carries observed state data", () => {
  it("keptStateSecret rebuilds from metadata: no data, no annotations, no resourceVersion", () => {
    const kept = keptStateSecret(observedState(0, { _machinekey: MARKER, device_id: "1" }));
    assert.deepEqual(kept, stateSecret({ parent, index: 0, name: "db-agent-0", labels: {} }));
    assert.equal(JSON.stringify(kept).includes(MARKER), false);
  });

  it("withoutStateData scrubs every state Secret in an answer and leaves the others alone", () => {
    const keySecret = { apiVersion: "v1", kind: "Secret", metadata: { name: "db-authkey" }, data: { authkey: "x" } };
    const out = withoutStateData([observedState(0, { _machinekey: MARKER }), keySecret as K8sObject]);
    assert.equal(JSON.stringify(out).includes(b64(MARKER)), false);
    assert.equal(JSON.stringify(out).includes(MARKER), false);
    assert.deepEqual(out[1], keySecret);
  });
});

describe("the kinds' answers (sync and failed observation) never carry observed state data", () => {
  /** A state Secret observed without Metacontroller's last-applied (adopted, or written by hand): the worst case. */
  const bare = (): K8sObject => {
    const s = observedState(0, { _machinekey: MARKER, device_id: "17" });
    const { annotations: _a, ...metadata } = s.metadata;
    return { ...s, metadata };
  };

  it("egress: a synced answer and a NoTailnet answer carry the state Secret as metadata only", () => {
    for (const tailnet of [undefined, NO_TAILNET]) {
      const d = decideEgress(egressInput({ children: [keySecret(), bare()], ...(tailnet ? { tailnet } : {}) }));
      const state = d.children.find((c) => c.metadata.name === "db-agent-0-state");
      assert.ok(state, "the state Secret is kept");
      assert.equal("data" in state, false);
      assert.equal(JSON.stringify(d).includes(MARKER), false);
      assert.equal(JSON.stringify(d).includes(b64(MARKER)), false);
    }
  });

  it("ingress: a NoTailnet answer (observed children kept) carries the state Secret as metadata only", () => {
    // no Tailnet: the answer keeps the observed children before any TLS Secret is read, so no certificate is
    // needed (and this pure test spawns no openssl)
    const noCert = { certPem: "", keyPem: "", certFile: "", keyFile: "" };
    const state = { ...bare(), metadata: { ...bare().metadata, name: "grafana-agent-0-state" } };
    const d = decideIngress(healthyInput(noCert, { ...INGRESS_NO_TAILNET, children: [state] }));
    const ready = d.conditions.find((c) => c.type === "Ready");
    assert.equal(ready?.reason, "NoTailnet");
    const kept = d.children.find((c) => c.metadata.name === "grafana-agent-0-state");
    assert.ok(kept, "the state Secret is kept");
    assert.equal("data" in kept, false);
    assert.equal(JSON.stringify(d).includes(b64(MARKER)), false);
  });
});
