/**
 * The containerboot model with `TS_KUBE_SECRET` (test/fakes/containerboot-kube.ts, pod-lifecycle.ts), against
 * tailscale v1.102.5: cmd/containerboot/settings.go setupKube, kube/kubeclient/client.go CheckSecretPermissions,
 * cmd/containerboot/kube.go storeDeviceID/storeDeviceEndpoints/deleteAuthKey, ipn/store/kubestore/store_kube.go,
 * main.go authLoop; and Headscale v0.29.3 registration (hscontrol/state/state.go, hscontrol/auth.go).
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { MetacontrollerLoop } from "../../src/emulator/metacontroller/loop.js";
import type { Obj } from "../../src/emulator/metacontroller/types.js";
import type { K8sObject } from "../../src/k8s/objects.js";
import { secretValue } from "../../src/kinds/shared/secrets.js";
import { bootTailscale, SA_DIR } from "./containerboot.js";
import { CAPVER, type PodStore, publicKey, wipeStateSecret } from "./containerboot-kube.js";
import { type FakeHeadscale, useFakeHeadscale } from "./headscale/index.js";
import { loopStore, replacePod, restartContainer, startPod } from "./pod-lifecycle.js";

type After = { after: (fn: () => Promise<void> | void) => void };
const NS = "shop";
const R = "db-agent-0";
const STATE = `${R}-state`;
const b64 = (s: string) => Buffer.from(s).toString("base64");

function arrayStore(objects: K8sObject[]): PodStore {
  const same = (a: K8sObject, b: K8sObject) =>
    a.kind === b.kind && a.metadata.name === b.metadata.name && a.metadata.namespace === b.metadata.namespace;
  return {
    objects: () => objects,
    write: (o) => {
      const i = objects.findIndex((x) => same(x, o));
      if (i >= 0) objects[i] = o;
      else objects.push(o);
    },
  };
}

/** The replica's StatefulSet as the design renders it (issue 32 §2.1), the token projected into `tailscale` only. */
function statefulSet(env: Record<string, string> = {}, opts: { emptyDirState?: boolean } = {}): K8sObject {
  const vars = {
    TS_KUBE_SECRET: STATE,
    TS_AUTH_ONCE: "true",
    TS_HOSTNAME: "shop-db",
    TS_STATE_DIR: "/var/lib/tailscale",
    TS_EXTRA_ARGS: "--login-server=http://hs.test",
    ...env,
  };
  return {
    apiVersion: "apps/v1",
    kind: "StatefulSet",
    metadata: { name: R, namespace: NS },
    spec: {
      replicas: 1,
      template: {
        spec: {
          serviceAccountName: R,
          automountServiceAccountToken: false,
          containers: [
            {
              name: "tailscale",
              image: "ghcr.io/tailscale/tailscale:v1.102.5",
              env: [
                ...Object.entries(vars).map(([name, value]) => ({ name, value })),
                { name: "TS_AUTHKEY", valueFrom: { secretKeyRef: { name: "db-authkey", key: "authkey" } } },
              ],
              volumeMounts: [
                { name: "serviceaccount", mountPath: SA_DIR },
                { name: "state", mountPath: "/var/lib/tailscale" },
              ],
            },
          ],
          volumes: [
            {
              name: "serviceaccount",
              projected: {
                sources: [
                  { serviceAccountToken: { path: "token" } },
                  { configMap: { name: "kube-root-ca.crt", items: [{ key: "ca.crt", path: "ca.crt" }] } },
                  { downwardAPI: { items: [{ path: "namespace", fieldRef: { fieldPath: "metadata.namespace" } }] } },
                ],
              },
            },
            opts.emptyDirState === false
              ? { name: "state", configMap: { name: "none" } }
              : { name: "state", emptyDir: {} },
          ],
        },
      },
    },
  };
}

const role = (rule: Record<string, unknown>): K8sObject => ({
  apiVersion: "rbac.authorization.k8s.io/v1",
  kind: "Role",
  metadata: { name: R, namespace: NS },
  rules: [{ apiGroups: [""], resources: ["secrets"], ...rule }],
});
const binding: K8sObject = {
  apiVersion: "rbac.authorization.k8s.io/v1",
  kind: "RoleBinding",
  metadata: { name: R, namespace: NS },
  roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "Role", name: R },
  subjects: [{ kind: "ServiceAccount", name: R, namespace: NS }],
};
const stateSecret = (data?: Record<string, string>): K8sObject => ({
  apiVersion: "v1",
  kind: "Secret",
  metadata: { name: STATE, namespace: NS },
  type: "Opaque",
  ...(data ? { data } : {}),
});
const OWN_ROLE = role({ resourceNames: [STATE], verbs: ["get", "update", "patch"] });

async function world(t: After, objects: K8sObject[] = [OWN_ROLE, binding, stateSecret()]) {
  let ms = Date.parse("2026-12-01T10:00:00Z");
  const fake = await useFakeHeadscale(t, {
    policy: '{"tagOwners": {"tag:k8s-shop-db": []}}',
    now: () => new Date(ms),
  });
  const key = await mint(fake);
  const all = [
    {
      apiVersion: "v1",
      kind: "Secret",
      metadata: { name: "db-authkey", namespace: NS },
      data: { authkey: b64(key.key) },
    },
    ...objects,
  ];
  return { fake, key, store: arrayStore(all), advance: (d: number) => (ms += d) };
}

async function mint(fake: FakeHeadscale) {
  const res = await fetch(`${fake.url}/api/v1/preauthkey`, {
    method: "POST",
    headers: { authorization: `Bearer ${fake.apiKey}`, "content-type": "application/json" },
    body: JSON.stringify({
      aclTags: ["tag:k8s-shop-db"],
      reusable: true,
      ephemeral: false,
      expiration: "2026-12-02T10:00:00Z",
    }),
  });
  return ((await res.json()) as { preAuthKey: { id: string; key: string } }).preAuthKey;
}

const stateOf = (store: PodStore) =>
  store.objects().find((o) => o.kind === "Secret" && o.metadata.name === STATE) as K8sObject;

describe("TS_KUBE_SECRET: state in the replica's Secret", () => {
  test("a first start logs in with TS_AUTHKEY and its machine key and writes the pod's keys into the Secret", async (t) => {
    const { fake, store, key } = await world(t);
    const pod = startPod(fake, store, statefulSet());
    assert.equal(pod.usedAuthKey, true);
    assert.deepEqual(
      [pod.node.givenName, pod.node.preAuthKeyId, pod.node.tags],
      ["shop-db", key.id, ["tag:k8s-shop-db"]],
    );
    const secret = stateOf(store);
    const profile = secretValue(secret, "_current-profile") ?? "";
    assert.match(profile, /^profile-[0-9a-f]{4}$/);
    assert.deepEqual(Object.keys(secret.data as object).sort(), [
      "_current-profile",
      "_machinekey",
      "_profiles",
      "device_fqdn",
      "device_id",
      "device_ips",
      profile,
      "tailscale_capver",
    ]);
    assert.match(secretValue(secret, "_machinekey") ?? "", /^privkey:[0-9a-f]{64}$/);
    assert.equal(pod.node.machineKey, publicKey("mkey", secretValue(secret, "_machinekey") ?? ""));
    assert.equal(secretValue(secret, "device_id"), pod.node.id);
    assert.equal(secretValue(secret, "device_fqdn"), "shop-db.ts.test.");
    assert.equal(secretValue(secret, "device_ips"), JSON.stringify([pod.node.ipv4, pod.node.ipv6]));
    assert.equal(secretValue(secret, "tailscale_capver"), CAPVER);
  });

  test("restart, pod replacement and a rotated, expired key: the same node, the key never used again", async (t) => {
    const { fake, store, key, advance } = await world(t);
    const first = startPod(fake, store, statefulSet());
    const { id, ipv4, ipv6, givenName, nodeKey } = first.node;
    const restarted = restartContainer(fake, store, first);
    advance(1000);
    await fetch(`${fake.url}/api/v1/preauthkey/expire`, {
      method: "POST",
      headers: { authorization: `Bearer ${fake.apiKey}`, "content-type": "application/json" },
      body: JSON.stringify({ id: key.id }),
    });
    advance(1000);
    const authkey = store.objects().find((o) => o.metadata.name === "db-authkey") as K8sObject;
    authkey.data = { authkey: b64("hskey-auth-rotatedXXXXX-nevervalid") };
    const replaced = replacePod(fake, store, restarted);
    for (const pod of [restarted, replaced]) {
      assert.equal(pod.usedAuthKey, false);
      assert.deepEqual(
        [pod.node.id, pod.node.ipv4, pod.node.ipv6, pod.node.givenName, pod.node.nodeKey, pod.node.online],
        [id, ipv4, ipv6, givenName, nodeKey, true],
      );
    }
    assert.equal(fake.state.nodes.size, 1);
  });

  test("a wiped state Secret: a new machine registers with the key, a new node named -1 beside the old", async (t) => {
    const { fake, store } = await world(t);
    const first = startPod(fake, store, statefulSet());
    wipeStateSecret(store, STATE, NS);
    assert.equal(stateOf(store).data, undefined);
    const again = replacePod(fake, store, first);
    assert.equal(again.usedAuthKey, true);
    assert.notEqual(again.node.id, first.node.id);
    assert.notEqual(again.node.machineKey, first.node.machineKey);
    assert.equal(again.node.givenName, "shop-db-1");
    assert.equal(secretValue(stateOf(store), "device_id"), again.node.id);
    assert.equal(fake.state.nodes.get(first.node.id)?.online, false, "the predecessor stays, offline");
  });

  test("its node deleted in Headscale: the next start logs in again with its own machine key", async (t) => {
    const { fake, store } = await world(t);
    const first = startPod(fake, store, statefulSet());
    fake.state.nodes.delete(first.node.id);
    const again = restartContainer(fake, store, first);
    assert.equal(again.usedAuthKey, true);
    assert.notEqual(again.node.id, first.node.id);
    assert.equal(again.node.machineKey, first.node.machineKey);
    assert.equal(again.node.givenName, "shop-db");
  });

  test("without TS_AUTH_ONCE every start logs in, and Headscale's same-node-key path keeps the node", async (t) => {
    const { fake, store } = await world(t);
    const first = startPod(fake, store, statefulSet({ TS_AUTH_ONCE: "false" }));
    const again = restartContainer(fake, store, first);
    assert.equal(again.usedAuthKey, true);
    assert.equal(again.node.id, first.node.id);
  });

  test("with TS_AUTH_ONCE and patch, a Secret-bound authkey is deleted after login (deleteAuthKey)", async (t) => {
    const { fake, store } = await world(t, [OWN_ROLE, binding, stateSecret({ authkey: b64("old") })]);
    startPod(fake, store, statefulSet());
    assert.equal(secretValue(stateOf(store), "authkey"), undefined);
    assert.ok(secretValue(stateOf(store), "_machinekey"));
  });
});

describe("TS_KUBE_SECRET: containerboot's permission check", () => {
  const boot = (objects: K8sObject[]) =>
    bootTailscale(statefulSet(), [
      {
        apiVersion: "v1",
        kind: "Secret",
        metadata: { name: "db-authkey", namespace: NS },
        data: { authkey: b64("k") },
      },
      ...objects,
    ]);
  const missing = (verbs: string[]) =>
    `boot: error setting up for running on Kubernetes: some Kubernetes permissions are missing, please check your RBAC configuration: ${verbs
      .map((v) => `missing ${v} permission on secret "${STATE}"`)
      .join("\n")}`;

  test("no RoleBinding, or a Role naming another replica's Secret: get and update missing", () => {
    assert.deepEqual(boot([OWN_ROLE, stateSecret()]), { ok: false, error: missing(["get", "update"]) });
    const other = role({ resourceNames: ["db-agent-1-state"], verbs: ["get", "update", "patch"] });
    assert.deepEqual(boot([other, binding, stateSecret()]), { ok: false, error: missing(["get", "update"]) });
    const otherSa = { ...binding, subjects: [{ kind: "ServiceAccount", name: "db-agent-1", namespace: NS }] };
    assert.deepEqual(boot([OWN_ROLE, otherSa, stateSecret()]), { ok: false, error: missing(["get", "update"]) });
  });

  test("a ClusterRole bound by a RoleBinding in the namespace grants it (wildcard verbs, no resourceNames)", () => {
    const cluster = {
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "ClusterRole",
      metadata: { name: "secrets-all" },
      rules: [{ apiGroups: [""], resources: ["secrets"], verbs: ["*"] }],
    };
    const rb = {
      ...binding,
      roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: "secrets-all" },
    };
    const r = boot([cluster, rb, stateSecret()]);
    assert.ok(r.ok);
    assert.deepEqual(r.boot.kubeState, { secret: STATE, canPatch: true, canCreate: true, exists: true });
  });

  test("get alone: update missing", () => {
    const getOnly = role({ resourceNames: [STATE], verbs: ["get"] });
    assert.deepEqual(boot([getOnly, binding, stateSecret()]), { ok: false, error: missing(["update"]) });
  });

  test("the Secret missing and no create: containerboot's own refusal", () => {
    const r = boot([OWN_ROLE, binding]);
    assert.equal(r.ok, false);
    assert.equal(
      !r.ok && r.error,
      `boot: error setting up for running on Kubernetes: tailscale state Secret ${STATE} does not exist and we don't have permissions to create it. If you intend to store tailscale state elsewhere than a Kubernetes Secret, you can explicitly set TS_KUBE_SECRET env var to an empty string. Else ensure that RBAC is set up that allows the service account associated with this installation to create Secrets.`,
    );
  });

  test("get, update, patch on its own Secret: boots, patch and create known", () => {
    const r = boot([OWN_ROLE, binding, stateSecret()]);
    assert.ok(r.ok);
    assert.deepEqual(r.boot.kubeState, { secret: STATE, canPatch: true, canCreate: false, exists: true });
    assert.equal(r.boot.authOnce, true);
  });

  test("without patch: tailscaled's keys are stored (GET+PUT), containerboot's device keys are not", async (t) => {
    const noPatch = role({ resourceNames: [STATE], verbs: ["get", "update"] });
    const { fake, store } = await world(t, [noPatch, binding, stateSecret()]);
    startPod(fake, store, statefulSet());
    const keys = Object.keys(stateOf(store).data as object);
    assert.deepEqual(keys.filter((k) => !k.startsWith("profile-")).sort(), [
      "_current-profile",
      "_machinekey",
      "_profiles",
    ]);
  });

  test("with create (no resourceNames) and no Secret: the kubestore creates it on the first write", async (t) => {
    const wide = role({ verbs: ["get", "update", "patch", "create"] });
    const { fake, store } = await world(t, [wide, binding]);
    const pod = startPod(fake, store, statefulSet());
    assert.equal(secretValue(stateOf(store), "device_id"), pod.node.id);
  });
});

describe("TS_KUBE_SECRET empty: today's behaviour", () => {
  test("no permission check; state on the emptyDir survives a container restart, not a new pod", async (t) => {
    const { fake, store } = await world(t, []);
    const first = startPod(fake, store, statefulSet({ TS_KUBE_SECRET: "" }));
    assert.equal(first.boot.kubeState, undefined);
    assert.equal(first.boot.persistentState, true);
    const restarted = restartContainer(fake, store, first);
    assert.deepEqual([restarted.node.id, restarted.usedAuthKey], [first.node.id, false]);
    const replaced = replacePod(fake, store, restarted);
    assert.notEqual(replaced.node.id, first.node.id);
    assert.equal(replaced.node.givenName, "shop-db-1");
    assert.equal(store.objects().filter((o) => o.kind === "Secret").length, 1, "nothing written to the API");
  });

  test("no emptyDir under TS_STATE_DIR: even a container restart is a new node", async (t) => {
    const { fake, store } = await world(t, []);
    const first = startPod(fake, store, statefulSet({ TS_KUBE_SECRET: "" }, { emptyDirState: false }));
    assert.equal(first.boot.persistentState, false);
    assert.notEqual(restartContainer(fake, store, first).node.id, first.node.id);
  });
});

describe("with the emulator's store", () => {
  test("the state is written into the live Secret (same uid), and a deleted pod comes back as the same node", async (t) => {
    const { fake, store: seed } = await world(t, []);
    const loop = new MetacontrollerLoop({ app: undefined as never });
    for (const o of [...seed.objects(), OWN_ROLE, binding, stateSecret()]) loop.apply(o as Obj);
    const uid = loop.get("v1", "Secret", STATE, NS)?.metadata.uid;
    const store = loopStore(loop);
    const pod = startPod(fake, store, statefulSet());
    const live = loop.get("v1", "Secret", STATE, NS);
    assert.equal(live?.metadata.uid, uid);
    assert.equal(secretValue(live, "device_id"), pod.node.id);
    const again = replacePod(fake, store, pod);
    assert.deepEqual([again.node.id, again.usedAuthKey], [pod.node.id, false]);
  });
});
