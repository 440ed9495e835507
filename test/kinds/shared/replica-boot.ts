/**
 * An agent replica's tailscale container booting in the Pod the emulator runs for its StatefulSet, on the shared
 * fakes (test/fakes/pod-lifecycle.ts): the fake containerboot checks the replica's RBAC against the store's Roles
 * and RoleBindings, logs in with its machine key, and writes tailscaled's and containerboot's keys into the state
 * Secret straight into the store, as the pod's own client does (tailscale cmd/containerboot/kube.go).
 */
import { secretValue } from "../../../src/kinds/shared/secrets.js";
import type { FakeHeadscale, FakeNode } from "../../fakes/headscale/index.js";
import type { FakeMetacontroller } from "../../fakes/metacontroller.js";
import { loopStore, type RunningPod, startPod } from "../../fakes/pod-lifecycle.js";

/** The base domain the fake containerboot writes `device_fqdn` under in these worlds. */
export const BASE_DOMAIN = "ts.example.com";

/** Replica `replica` of agent `<agent>` boots from StatefulSet `<agent>-<replica>`; throws what the pod would log. */
export function bootReplica(
  mc: FakeMetacontroller,
  hs: FakeHeadscale,
  namespace: string,
  agent: string,
  replica = 0,
): RunningPod {
  const sts = mc.get("apps/v1", "StatefulSet", `${agent}-${replica}`, namespace);
  if (!sts) throw new Error(`no agent StatefulSet ${namespace}/${agent}-${replica}`);
  return startPod(hs, loopStore(mc), sts, { baseDomain: BASE_DOMAIN });
}

/** bootReplica's node. */
export const bootNode = (...args: Parameters<typeof bootReplica>): FakeNode => bootReplica(...args).node;

/** tailscaled's private machine key in a state Secret (kubestore `_machinekey`): it must never leave the hook. */
export function machineKeyIn(mc: FakeMetacontroller, namespace: string, secret: string): string {
  const key = secretValue(mc.get("v1", "Secret", secret, namespace), "_machinekey");
  if (!key) throw new Error(`no _machinekey in ${namespace}/${secret}`);
  return key;
}
