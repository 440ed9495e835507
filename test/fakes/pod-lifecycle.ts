/**
 * A tailscale container's life against the fake Headscale, with its state where the pod spec puts it: a state
 * Secret (`TS_KUBE_SECRET`, written straight into the store as the pod's own client would) or TS_STATE_DIR on
 * an emptyDir (lost with the pod). Modelled on tailscale v1.102.5 cmd/containerboot/main.go `authLoop`: with
 * TS_AUTH_ONCE a start with state reconnects as the same node and never uses the key; without state (or when
 * Headscale asks for a login) it logs in with TS_AUTHKEY and its machine key; without TS_AUTH_ONCE it runs
 * `tailscale up --authkey` on every start (same machine and node key: Headscale's re-registration fast path).
 */
import type { MetacontrollerLoop } from "../../src/emulator/metacontroller/loop.js";
import type { Obj } from "../../src/emulator/metacontroller/types.js";
import type { K8sObject } from "../../src/k8s/objects.js";
import { type BootOptions, bootTailscale, type TailscaleBoot } from "./containerboot.js";
import {
  newPrivateKey,
  type PodStore,
  publicKey,
  readIdentity,
  type StoredIdentity,
  writeState,
} from "./containerboot-kube.js";
import type { FakeHeadscale, FakeNode } from "./headscale/index.js";

/** The emulator's store as a pod's API client sees it: direct writes, no Metacontroller in between. */
export function loopStore(loop: MetacontrollerLoop): PodStore {
  return {
    objects: () => [...loop.objects.values()],
    // apply keeps the live object's uid and creation time, as an update through the API server does
    write: (o) => {
      loop.apply(o as Obj);
    },
  };
}

export interface RunningPod {
  workload: K8sObject;
  boot: TailscaleBoot;
  node: FakeNode;
  /** tailscaled's private keys (never sent anywhere; the fake Headscale sees the public halves). */
  identity: StoredIdentity;
  /** This start logged in with TS_AUTHKEY (false: it reconnected with its state). */
  usedAuthKey: boolean;
}

export interface StartOptions extends BootOptions {
  /** The Headscale base domain for `device_fqdn` (test/real/headscale.ts BASE_DOMAIN by default). */
  baseDomain?: string;
  /** State kept in the pod itself (TS_STATE_DIR on an emptyDir): a container restart keeps it, a new pod not. */
  podLocalIdentity?: StoredIdentity;
}

/** Starts the tailscale container of `workload`; throws what containerboot or Headscale would refuse. */
export function startPod(
  fake: FakeHeadscale,
  store: PodStore,
  workload: K8sObject,
  opts: StartOptions = {},
): RunningPod {
  const result = bootTailscale(workload, store.objects(), opts);
  if (!result.ok) throw new Error(result.error);
  const { boot } = result;
  const namespace = workload.metadata.namespace ?? "";
  const kube = boot.kubeState;
  const stateSecret = kube
    ? store
        .objects()
        .find((o) => o.kind === "Secret" && o.metadata.name === kube.secret && o.metadata.namespace === namespace)
    : undefined;
  const stored = kube ? readIdentity(stateSecret) : boot.persistentState ? opts.podLocalIdentity : undefined;
  const identity = stored ?? { machineKey: newPrivateKey(), nodeKey: newPrivateKey(), profile: newProfileId() };
  const keys = { machineKey: publicKey("mkey", identity.machineKey), nodeKey: publicKey("nodekey", identity.nodeKey) };
  const login = () =>
    fake.register(boot.authKey, {
      name: boot.hostname,
      machineKey: keys.machineKey,
      nodeKey: keys.nodeKey,
      availableRoutes: boot.routes,
      requestTags: boot.requestTags,
    }).node;
  let node: FakeNode;
  let usedAuthKey = true;
  if (stored && boot.authOnce) {
    try {
      node = fake.reconnect(keys);
      usedAuthKey = false;
    } catch {
      // NeedsLogin (the node was deleted or expired): authTailscale with the key, same machine key
      node = login();
    }
  } else node = login();
  if (kube) {
    writeState(store, namespace, kube.secret, {
      identity,
      loginServer: boot.loginServer,
      node,
      baseDomain: opts.baseDomain ?? "ts.test",
      containerbootKeys: kube.canPatch,
      deleteAuthKey: kube.canPatch && boot.authOnce,
    });
  }
  return { workload, boot, node, identity, usedAuthKey };
}

/** The container restarts inside the same pod: its emptyDir survives, its state Secret too. */
export function restartContainer(fake: FakeHeadscale, store: PodStore, pod: RunningPod, opts: StartOptions = {}) {
  fake.disconnect(pod.node.id);
  return startPod(fake, store, pod.workload, { ...opts, podLocalIdentity: pod.identity });
}

/**
 * The pod is deleted (an eviction, a drain, a rollout of `workload` when given) and its replacement starts:
 * an emptyDir is new, a state Secret is what it was. The emulator's Pod object is the loop's (loop.deletePod).
 */
export function replacePod(
  fake: FakeHeadscale,
  store: PodStore,
  pod: RunningPod,
  workload: K8sObject = pod.workload,
  opts: StartOptions = {},
) {
  fake.disconnect(pod.node.id);
  return startPod(fake, store, workload, opts);
}

/** ipn.ProfileID: four random hex digits (ipn/ipnlocal/profiles.go newUnusedID). */
function newProfileId(): string {
  return Math.floor(Math.random() * 0x10000)
    .toString(16)
    .padStart(4, "0");
}
