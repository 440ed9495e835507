// The tailscale container's runtime (src/kinds/shared/tailscale-runtime.ts) with a per-replica state Secret (issue 32):
// the kube store env and the projected token, which only the tailscale container mounts.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import {
  SERVICE_ACCOUNT_DIR,
  TAILSCALE_RUNTIME_MOUNTS,
  TAILSCALE_RUNTIME_VOLUMES,
  tailscaleRuntimeEnv,
  tailscaleRuntimeVolumes,
} from "../../../src/kinds/shared/tailscale-runtime.js";

describe("tailscaleRuntimeEnv", () => {
  it("with a state Secret: TS_KUBE_SECRET names it and the API address comes from the environment", () => {
    assert.deepEqual(tailscaleRuntimeEnv({ noLogsNoSupport: false, stateSecret: "db-agent-0-state" }), [
      { name: "TS_AUTH_ONCE", value: "true" },
      { name: "TS_KUBE_SECRET", value: "db-agent-0-state" },
      { name: "TS_KUBERNETES_READ_API_SERVER_ADDRESS_FROM_ENV", value: "true" },
      { name: "TS_STATE_DIR", value: "/var/lib/tailscale/state" },
    ]);
  });

  it("without one (the gateway for now): state stays out of the API, as before", () => {
    assert.deepEqual(tailscaleRuntimeEnv({ noLogsNoSupport: true }), [
      { name: "TS_AUTH_ONCE", value: "true" },
      { name: "TS_KUBE_SECRET" },
      { name: "TS_STATE_DIR", value: "/var/lib/tailscale/state" },
      { name: "TS_NO_LOGS_NO_SUPPORT", value: "true" },
    ]);
  });
});

describe("tailscaleRuntimeVolumes", () => {
  it("with a token: an hour's projected token joins the serviceaccount volume, nothing else changes", () => {
    const vols = tailscaleRuntimeVolumes({ token: true });
    const sa = vols.find((v) => v.name === "serviceaccount") as { projected: { sources: Record<string, unknown>[] } };
    assert.deepEqual(sa.projected.sources[0], { serviceAccountToken: { path: "token", expirationSeconds: 3600 } });
    assert.equal(sa.projected.sources.length, 3);
    assert.deepEqual(
      vols.filter((v) => v.name !== "serviceaccount"),
      TAILSCALE_RUNTIME_VOLUMES.filter((v) => v.name !== "serviceaccount"),
    );
    // the constant the gateway uses is untouched
    const plain = TAILSCALE_RUNTIME_VOLUMES.find((v) => v.name === "serviceaccount") as typeof sa;
    assert.equal(plain.projected.sources.length, 2);
  });

  it("without: the token-less volumes", () => {
    assert.deepEqual(tailscaleRuntimeVolumes({ token: false }), [...TAILSCALE_RUNTIME_VOLUMES]);
  });

  it("the serviceaccount volume is mounted where the kube client reads its token, read-only", () => {
    assert.deepEqual(
      TAILSCALE_RUNTIME_MOUNTS.find((m) => m.name === "serviceaccount"),
      { name: "serviceaccount", mountPath: SERVICE_ACCOUNT_DIR, readOnly: true },
    );
  });
});
