/**
 * What a replica's tailscaled does that render has no process for: once its pod runs, containerboot writes the
 * node's id into the replica's state Secret (tailscale cmd/containerboot/kube.go storeDeviceID), and the operator
 * binds the replica to that node. Render takes the node from `--agents`: replica 0 of `<namespace>/<name>` is the
 * snapshot node whose addresses hold the `self.tailscaleIPs` its agent reports, when that node registered with a
 * key the object records (status.preAuthKeyIds): a replica's tailscaled logs in with its object's key only, so
 * any other node is not a pod of this object and render does not pretend it is. Nothing else of the state is
 * written, so no key material appears in a preview.
 */
import type { AgentStatus } from "../contract/agent-status.js";
import type { HeadscaleSnapshot } from "../emulator/headscale/in-memory.js";
import type { MetacontrollerLoop } from "../emulator/metacontroller/loop.js";
import type { Obj } from "../emulator/metacontroller/types.js";
import { isStateSecret, REPLICA_LABEL } from "../kinds/shared/replica.js";
import { DEVICE_ID_KEY } from "../kinds/shared/replica-nodes.js";

/** Writes device_id into each replica 0 state Secret whose agent names a snapshot node; true when one changed. */
export function writeReplicaStates(
  loop: MetacontrollerLoop,
  snapshot: HeadscaleSnapshot,
  agents: Record<string, AgentStatus> | undefined,
): boolean {
  let changed = false;
  for (const secret of [...loop.objects.values()]) {
    if (!isStateSecret(secret) || secret.metadata.labels?.[REPLICA_LABEL] !== "0") continue;
    const data = (secret.data ?? {}) as Record<string, string>;
    if (data[DEVICE_ID_KEY]) continue;
    const agent =
      agents?.[`${secret.metadata.namespace}/${secret.metadata.labels?.["app.kubernetes.io/instance"] ?? ""}`];
    const ips = agent?.self?.tailscaleIPs ?? [];
    const node = snapshot.nodes.find((n) => Array.isArray(n.ipAddresses) && n.ipAddresses.some((a) => ips.includes(a)));
    if (node?.id === undefined || !recordedKeys(loop, secret).has(keyIdOf(node))) continue;
    const deviceId = Buffer.from(String(node.id)).toString("base64");
    loop.apply({ ...secret, data: { ...data, [DEVICE_ID_KEY]: deviceId } } as Obj);
    changed = true;
  }
  return changed;
}

/** The key ids the state Secret's owner records in its status. */
function recordedKeys(loop: MetacontrollerLoop, secret: Obj): Set<string> {
  const owner = secret.metadata.ownerReferences?.find((r) => r.controller);
  const parent = [...loop.objects.values()].find((o) => owner && o.metadata.uid === owner.uid);
  const ids = (parent?.status as { preAuthKeyIds?: unknown } | undefined)?.preAuthKeyIds;
  return new Set(Array.isArray(ids) ? ids.map(String) : []);
}

const keyIdOf = (node: Record<string, unknown>): string =>
  String((node.preAuthKey as { id?: unknown } | null | undefined)?.id ?? "");
