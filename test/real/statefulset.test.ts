/**
 * Issue 32's pod shape, by hand, with the real containerboot and tailscaled (the pinned image) against the
 * real Headscale: a StatefulSet of one pod per replica whose tailscale container keeps its state in a
 * state Secret through the pod API (pod-api.ts), with a projected ServiceAccount token and a Role that
 * names only that Secret. The state Secret gains tailscaled's keys and containerboot's `device_id`
 * (= the Headscale node id); a deleted pod, a restarted container and a rolled template come back as the
 * same node (no second node, same name); the StatefulSet never runs two pods of one ordinal; a Role that
 * names another Secret stops containerboot at its permission check.
 * Nothing leaves the test namespaces: the API answers on the test process's bridge leg (checked with
 * containmentProblems()).
 */
import assert from "node:assert/strict";
import { writeFile } from "node:fs/promises";
import { after, before, describe, test } from "node:test";
import type { Obj } from "../../src/emulator/metacontroller/types.js";
import { FakeMetacontroller } from "../fakes/metacontroller.js";
import { requireBins, versions } from "./bins.js";
import { type RealHeadscale, startHeadscale } from "./headscale.js";
import { TestNet } from "./net.js";
import { PodApi } from "./pod-api.js";
import { PodRunner, type RunningPod } from "./pods.js";

const NS = "shop";
const TAG = "tag:proxy";
const POLICY = `{ "tagOwners": { "${TAG}": [] }, "acls": [ { "action": "accept", "src": ["*"], "dst": ["*:*"] } ] }\n`;
type HsNode = { id: string | number; name: string; given_name?: string; tags?: string[]; online?: boolean };

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const b64 = (s: string) => Buffer.from(s).toString("base64");
const rbac = "rbac.authorization.k8s.io/v1";

/** SA, empty state Secret, Role (get/update/patch on `roleSecret`), RoleBinding and StatefulSet of replica `r`. */
function replica(r: string, hsUrl: string, roleSecret = `${r}-state`, tag = versions.tailscale): Obj[] {
  const env = [
    { name: "TS_USERSPACE", value: "true" },
    { name: "TS_SOCKET", value: "/tmp/tailscaled.sock" },
    { name: "TS_HOSTNAME", value: r },
    { name: "TS_EXTRA_ARGS", value: `--login-server=${hsUrl}` },
    { name: "TS_AUTH_ONCE", value: "true" },
    { name: "TS_KUBE_SECRET", value: `${r}-state` },
    { name: "TS_KUBERNETES_READ_API_SERVER_ADDRESS_FROM_ENV", value: "true" },
    { name: "TS_NO_LOGS_NO_SUPPORT", value: "true" },
    { name: "TS_ENABLE_HEALTH_CHECK", value: "true" },
    { name: "SSL_CERT_FILE", value: "/etc/headscale-ca/ca.crt" },
    { name: "POD_IP", valueFrom: { fieldRef: { fieldPath: "status.podIP" } } },
    { name: "POD_NAME", valueFrom: { fieldRef: { fieldPath: "metadata.name" } } },
    { name: "POD_UID", valueFrom: { fieldRef: { fieldPath: "metadata.uid" } } },
    { name: "TS_LOCAL_ADDR_PORT", value: "$(POD_IP):8080" },
    { name: "TS_AUTHKEY", valueFrom: { secretKeyRef: { name: "proxy-authkey", key: "authkey" } } },
  ];
  return [
    { apiVersion: "v1", kind: "ServiceAccount", metadata: { name: r, namespace: NS } },
    { apiVersion: "v1", kind: "Secret", metadata: { name: `${r}-state`, namespace: NS } },
    {
      apiVersion: rbac,
      kind: "Role",
      metadata: { name: r, namespace: NS },
      rules: [
        { apiGroups: [""], resources: ["secrets"], resourceNames: [roleSecret], verbs: ["get", "update", "patch"] },
      ],
    } as Obj,
    {
      apiVersion: rbac,
      kind: "RoleBinding",
      metadata: { name: r, namespace: NS },
      roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "Role", name: r },
      subjects: [{ kind: "ServiceAccount", name: r, namespace: NS }],
    } as Obj,
    {
      apiVersion: "apps/v1",
      kind: "StatefulSet",
      metadata: { name: r, namespace: NS, generation: 1 },
      spec: {
        replicas: 1,
        serviceName: r,
        selector: { matchLabels: { app: r } },
        template: {
          metadata: { labels: { app: r } },
          spec: {
            serviceAccountName: r,
            automountServiceAccountToken: false,
            securityContext: { runAsUser: 65532, runAsGroup: 65532, fsGroup: 65532 },
            containers: [
              {
                name: "tailscale",
                image: `tailscale/tailscale:${tag}`,
                env,
                ports: [{ name: "ts-health", containerPort: 8080 }],
                readinessProbe: { httpGet: { path: "/healthz", port: "ts-health" }, periodSeconds: 5 },
                securityContext: { readOnlyRootFilesystem: true },
                volumeMounts: [
                  { name: "tmp", mountPath: "/tmp" },
                  { name: "headscale-ca", mountPath: "/etc/headscale-ca", readOnly: true },
                  {
                    name: "serviceaccount",
                    mountPath: "/var/run/secrets/kubernetes.io/serviceaccount",
                    readOnly: true,
                  },
                ],
              },
            ],
            volumes: [
              { name: "tmp", emptyDir: {} },
              { name: "headscale-ca", configMap: { name: "headscale-ca" } },
              {
                name: "serviceaccount",
                projected: {
                  sources: [
                    { downwardAPI: { items: [{ path: "namespace", fieldRef: { fieldPath: "metadata.namespace" } }] } },
                    {
                      configMap: {
                        name: "kube-root-ca.crt",
                        items: [{ key: "ca.crt", path: "ca.crt" }],
                        optional: true,
                      },
                    },
                    { serviceAccountToken: { path: "token", expirationSeconds: 3600 } },
                  ],
                },
              },
            ],
          },
        },
      },
    } as Obj,
  ];
}

describe("StatefulSet pods keep their tailnet node in a state Secret (real containerboot, real Headscale)", () => {
  let net: TestNet;
  let hs: RealHeadscale;
  let mc: FakeMetacontroller;
  let api: PodApi;
  let pods: PodRunner;

  const state = (name = "db-agent-0-state") => {
    const data = mc.get("v1", "Secret", name, NS)?.data ?? {};
    return Object.fromEntries(Object.entries(data).map(([k, v]) => [k, Buffer.from(v, "base64").toString("utf8")]));
  };
  const nodes = async () => (await hs.json<HsNode[] | null>(["nodes", "list"])) ?? [];
  /** Syncs the runner until `ok` holds (the runner's check() after each pass). */
  const until = async (what: string, ok: () => boolean | Promise<boolean>, ms = 60_000) => {
    const deadline = Date.now() + ms;
    for (;;) {
      await pods.sync();
      pods.check();
      if (await ok()) return;
      if (Date.now() > deadline)
        throw new Error(`timed out waiting for ${what}\n${pods.pods.map((p) => p.logs()).join("\n")}`);
      await sleep(250);
    }
  };
  const onlyNode = async () => {
    const all = await nodes();
    assert.equal(all.length, 1, `one node in Headscale: ${JSON.stringify(all)}`);
    return all[0];
  };

  before(async () => {
    requireBins(["headscale", "containerboot", "tailscaled"]);
    net = await TestNet.create({ id: "sts" });
    hs = await startHeadscale(net);
    await writeFile(`${hs.host.dir}/policy.hujson`, POLICY);
    await hs.cli(["policy", "set", "-f", `${hs.host.dir}/policy.hujson`]);
    const key = (await hs.cli(["preauthkeys", "create", "--tags", TAG, "--reusable", "--expiration", "1h"]))
      .trim()
      .split("\n")
      .pop();
    mc = new FakeMetacontroller({ app: undefined as never, deploymentsAvailable: false });
    // the API server's certificate comes from Headscale's test CA, which kube-root-ca.crt then carries
    api = await PodApi.start(mc, { host: net.rootIp, pki: hs.pki });
    pods = new PodRunner({ net, mc, kubeApi: api, backoffSeconds: 1 });
    mc.apply({
      apiVersion: "v1",
      kind: "Secret",
      metadata: { name: "proxy-authkey", namespace: NS },
      data: { authkey: b64(key ?? "") },
    });
    mc.apply({
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: { name: "headscale-ca", namespace: NS },
      data: { "ca.crt": hs.caPem },
    });
  });
  after(async () => {
    await pods?.close();
    await api?.close();
    await hs?.close();
    await net?.close();
  });

  let first: { id: string; name: string; uid: string; pod: RunningPod };

  test("the state Secret gains tailscaled's state and device_id = the Headscale node id; StatefulSet status fed back", async () => {
    for (const o of replica("db-agent-0", hs.url)) mc.apply(o);
    const [pod] = await pods.waitStatefulSetReady(NS, "db-agent-0", 90_000);
    assert.equal(pod.name, "db-agent-0-0");
    await until("device_id in the state Secret", () => "device_id" in state());
    const node = await onlyNode();
    const s = state();
    assert.equal(s.device_id, String(node.id));
    assert.equal(node.given_name ?? node.name, "db-agent-0");
    assert.deepEqual(node.tags, [TAG]);
    for (const k of ["_machinekey", "_current-profile", "_profiles", "device_fqdn", "device_ips", "tailscale_capver"])
      assert.ok(k in s, `${k} in the state Secret: ${Object.keys(s).join(", ")}`);
    assert.equal(Object.keys(s).filter((k) => k.startsWith("profile-")).length, 1);
    assert.equal(s.pod_uid, pod.uid);
    assert.equal("authkey" in s, false);
    // the Pod object and the StatefulSet status, as the controller and the kubelet report them
    const sts = mc.get("apps/v1", "StatefulSet", "db-agent-0", NS) as Obj;
    const status = sts.status as Record<string, unknown>;
    const revision = status.updateRevision as string;
    assert.match(revision, /^db-agent-0-[0-9a-f]{10}$/);
    assert.deepEqual(status, {
      observedGeneration: 1,
      replicas: 1,
      readyReplicas: 1,
      currentReplicas: 1,
      updatedReplicas: 1,
      currentRevision: revision,
      updateRevision: revision,
      collisionCount: 0,
      availableReplicas: 1,
    });
    const podObj = mc.get("v1", "Pod", "db-agent-0-0", NS) as Obj;
    assert.deepEqual(podObj.metadata.labels, {
      app: "db-agent-0",
      "controller-revision-hash": revision,
      "statefulset.kubernetes.io/pod-name": "db-agent-0-0",
      "apps.kubernetes.io/pod-index": "0",
    });
    assert.deepEqual(
      podObj.metadata.ownerReferences?.map((r) => `${r.kind}/${r.name}/${r.uid}`),
      [`StatefulSet/db-agent-0/${sts.metadata.uid}`],
    );
    assert.deepEqual(mc.get("v1", "ConfigMap", "kube-root-ca.crt", NS)?.data, { "ca.crt": hs.caPem });
    // every request was the pod's own ServiceAccount, and none was refused
    assert.deepEqual([...new Set(api.log.map((e) => e.user))], ["system:serviceaccount:shop:db-agent-0"]);
    assert.deepEqual(
      api.log.filter((e) => e.code >= 400 && e.code !== 404 && e.code !== 422),
      [],
    );
    first = { id: String(node.id), name: node.given_name ?? node.name, uid: pod.uid, pod };
  });

  test("a deleted pod comes back as a new process under the same name, and as the same Headscale node", async () => {
    const old = first.pod;
    await pods.deletePod(NS, "db-agent-0-0");
    assert.equal(
      old.containers.every((c) => !c.alive),
      true,
    );
    const [pod] = await pods.waitStatefulSetReady(NS, "db-agent-0", 90_000);
    assert.equal(pod.name, "db-agent-0-0");
    assert.notEqual(pod.uid, old.uid);
    assert.notEqual(pod.ip, old.ip);
    await until("the new pod's uid in the state Secret", () => state().pod_uid === pod.uid);
    await until("the node online again", async () => (await nodes()).some((n) => n.online));
    const node = await onlyNode();
    assert.equal(String(node.id), first.id);
    assert.equal(node.given_name ?? node.name, first.name);
    assert.equal(state().device_id, first.id);
    first.pod = pod;
  });

  test("a restarted container comes back as the same node", async () => {
    const pod = first.pod;
    const c = pod.container("tailscale");
    pods.expectRestarts(pod, "tailscale", 1);
    await c.kill("SIGTERM");
    await until("the container restarted and ready", () => c.restartCount === 1 && pod.ready);
    await until("the node online again", async () => (await nodes()).some((n) => n.online));
    const node = await onlyNode();
    assert.equal(String(node.id), first.id);
    assert.equal(node.given_name ?? node.name, first.name);
  });

  test("a changed template rolls the ordinal: the old pod has exited before the new one starts; same node", async () => {
    const sts = mc.get("apps/v1", "StatefulSet", "db-agent-0", NS) as Obj;
    const before = (sts.status as { updateRevision: string }).updateRevision;
    const spec = structuredClone(sts.spec) as { template: { metadata: { annotations?: Record<string, string> } } };
    spec.template.metadata.annotations = { "example.com/rolled": "1" };
    mc.apply({ ...sts, spec: spec as unknown as Record<string, unknown> });
    const old = first.pod;
    let seenTwo = 0;
    let newPod: RunningPod | undefined;
    await until(
      "a pod of the new revision",
      () => {
        const mine = pods.pods.filter((p) => p.namespace === NS && p.name === "db-agent-0-0");
        if (mine.length > 1) seenTwo++;
        newPod = mine.find((p) => p !== old);
        return !!newPod;
      },
      90_000,
    );
    assert.equal(seenTwo, 0, "never two pods db-agent-0-0");
    const exited = old.container("tailscale").lastTerminated?.finishedAt ?? "";
    assert.ok(
      exited && new Date(exited) <= (newPod as RunningPod).createdAt,
      `${exited} <= ${newPod?.createdAt.toISOString()}`,
    );
    const [pod] = await pods.waitStatefulSetReady(NS, "db-agent-0", 90_000);
    const status = (mc.get("apps/v1", "StatefulSet", "db-agent-0", NS) as Obj).status as Record<string, unknown>;
    assert.notEqual(status.updateRevision, before);
    assert.equal(status.currentRevision, status.updateRevision);
    assert.equal(status.observedGeneration, 2);
    assert.equal(pod.annotations["example.com/rolled"], "1");
    await until("the node online again", async () => (await nodes()).some((n) => n.online));
    assert.equal(String((await onlyNode()).id), first.id);
    first.pod = pod;
  });

  test("replicas 0 stops the pod and keeps the state; replicas 1 brings the same node back", async () => {
    const sts = mc.get("apps/v1", "StatefulSet", "db-agent-0", NS) as Obj;
    mc.apply({ ...sts, spec: { ...(sts.spec as Record<string, unknown>), replicas: 0 } });
    await until("no pod", () => pods.podsOf(NS, "db-agent-0", "StatefulSet").length === 0);
    const zero = (mc.get("apps/v1", "StatefulSet", "db-agent-0", NS) as Obj).status as Record<string, unknown>;
    assert.equal(zero.replicas, 0);
    assert.equal(zero.readyReplicas, undefined);
    assert.equal(mc.get("v1", "Pod", "db-agent-0-0", NS), undefined);
    assert.equal(state().device_id, first.id);
    mc.apply({ ...sts, spec: { ...(sts.spec as Record<string, unknown>), replicas: 1 } });
    const [pod] = await pods.waitStatefulSetReady(NS, "db-agent-0", 90_000);
    await until("the node online again", async () => (await nodes()).some((n) => n.online));
    assert.equal(String((await onlyNode()).id), first.id);
    first.pod = pod;
  });

  test("updateStrategy OnDelete: a changed template waits for the pod's deletion; the replacement is the same node", async () => {
    const sts = mc.get("apps/v1", "StatefulSet", "db-agent-0", NS) as Obj;
    const spec = structuredClone(sts.spec) as {
      updateStrategy?: { type: string };
      template: { metadata: { annotations?: Record<string, string> } };
    };
    spec.updateStrategy = { type: "OnDelete" };
    spec.template.metadata.annotations = { "example.com/rolled": "2" };
    mc.apply({ ...sts, spec: spec as unknown as Record<string, unknown> });
    const old = first.pod;
    for (let i = 0; i < 8; i++) {
      await pods.sync();
      pods.check();
    }
    assert.equal(pods.podsOf(NS, "db-agent-0", "StatefulSet")[0], old, "the old pod still runs");
    const status = () => (mc.get("apps/v1", "StatefulSet", "db-agent-0", NS) as Obj).status as Record<string, unknown>;
    const held = status();
    assert.notEqual(held.updateRevision, held.currentRevision);
    assert.equal(held.currentReplicas, 1);
    assert.equal(held.updatedReplicas, undefined);
    await pods.deletePod(NS, "db-agent-0-0");
    const [pod] = await pods.waitStatefulSetReady(NS, "db-agent-0", 90_000);
    assert.equal(pod.annotations["example.com/rolled"], "2");
    assert.equal(status().updatedReplicas, 1);
    // as in Kubernetes, OnDelete never completes a rolling update: currentRevision stays the old one
    assert.equal(status().currentRevision, held.currentRevision);
    await until("the node online again", async () => (await nodes()).some((n) => n.online));
    assert.equal(String((await onlyNode()).id), first.id);
    first.pod = pod;
  });

  test("a pod naming a ServiceAccount that does not exist is not created (FailedCreate)", async () => {
    const [, , , , sts] = replica("db-agent-9", hs.url);
    mc.apply(sts);
    await assert.rejects(pods.waitStatefulSetReady(NS, "db-agent-9", 2_000), {
      message:
        'StatefulSet shop/db-agent-9 not ready within 2000 ms: create Pod db-agent-9-0 in StatefulSet db-agent-9 failed error: pods "db-agent-9-0" is forbidden: error looking up service account shop/db-agent-9: serviceaccount "db-agent-9" not found',
    });
    assert.deepEqual(pods.podsOf(NS, "db-agent-9", "StatefulSet"), []);
    mc.delete("apps/v1", "StatefulSet", "db-agent-9", NS);
  });

  test("a Role that names another Secret: containerboot exits at its permission check and says what is missing", async () => {
    // allowed before the pod exists: it may exit within the sync that starts it
    pods.expectRestarts({ name: "db-agent-1-0" } as RunningPod, "tailscale", 100);
    for (const o of replica("db-agent-1", hs.url, "db-agent-0-state")) mc.apply(o);
    let pod: RunningPod | undefined;
    await until("db-agent-1 started", () => {
      pod = pods.podsOf(NS, "db-agent-1", "StatefulSet")[0];
      return !!pod;
    });
    const c = (pod as RunningPod).container("tailscale");
    await until("containerboot exited", () => c.restartCount >= 1);
    assert.match(
      c.allLogs(),
      /error setting up for running on Kubernetes: some Kubernetes permissions are missing, please check your RBAC configuration: missing get permission on secret "db-agent-1-state"\nmissing update permission on secret "db-agent-1-state"/,
    );
    assert.deepEqual(state("db-agent-1-state"), {});
    assert.equal((await nodes()).length, 1, "no node for db-agent-1");
    // it asked, and was told no; it never read db-agent-0's Secret (its token is not db-agent-0's)
    const asked = api.log.filter((e) => e.user === "system:serviceaccount:shop:db-agent-1");
    assert.ok(asked.length > 0);
    assert.deepEqual(
      asked
        .filter((e) => !e.path.startsWith("/apis/authorization.k8s.io/"))
        .map((e) => `${e.method} ${e.path} ${e.code}`),
      [],
    );
    assert.equal(pods.podsOf(NS, "db-agent-1", "StatefulSet")[0]?.ready, false);
  });

  test("the oldest supported image (tailscaleOldest) keeps its node in its state Secret across a pod deletion", async () => {
    for (const o of replica("db-agent-2", hs.url, "db-agent-2-state", versions.tailscaleOldest)) mc.apply(o);
    await pods.waitStatefulSetReady(NS, "db-agent-2", 90_000);
    await until("device_id in db-agent-2-state", () => "device_id" in state("db-agent-2-state"));
    const mine = async () => (await nodes()).filter((n) => (n.given_name ?? n.name) === "db-agent-2");
    const [node] = await mine();
    assert.equal(state("db-agent-2-state").device_id, String(node.id));
    assert.ok("_machinekey" in state("db-agent-2-state"));
    await pods.deletePod(NS, "db-agent-2-0");
    const [pod] = await pods.waitStatefulSetReady(NS, "db-agent-2", 90_000);
    await until("the new pod's uid in db-agent-2-state", () => state("db-agent-2-state").pod_uid === pod.uid);
    await until("db-agent-2 online again", async () => (await mine()).some((n) => n.online));
    assert.deepEqual(
      (await mine()).map((n) => String(n.id)),
      [String(node.id)],
    );
  });

  test("at most one pod per ordinal over the whole run: each pod was created after its predecessor's processes exited", () => {
    const byName = new Map<string, RunningPod[]>();
    for (const p of pods.history)
      byName.set(`${p.namespace}/${p.name}`, [...(byName.get(`${p.namespace}/${p.name}`) ?? []), p]);
    const zero = byName.get(`${NS}/db-agent-0-0`) ?? [];
    assert.ok(zero.length >= 5, `db-agent-0-0 was replaced several times: ${zero.length}`);
    // when the last process of a pod exited (from the containers' own exit records, not the runner's bookkeeping)
    const exited = (p: RunningPod) =>
      p.containers.some((c) => c.alive)
        ? undefined
        : Math.max(...p.containers.map((c) => new Date(c.lastTerminated?.finishedAt ?? 0).getTime()));
    for (const [name, lives] of byName) {
      for (let i = 1; i < lives.length; i++) {
        const before = exited(lives[i - 1]);
        assert.ok(
          before !== undefined && before <= lives[i].createdAt.getTime(),
          `${name}: pod ${i} created before pod ${i - 1} exited`,
        );
      }
      assert.equal(new Set(lives.map((l) => l.uid)).size, lives.length, `${name}: a new uid per pod`);
    }
  });

  test("nothing left the test namespaces", async () => {
    assert.deepEqual(await net.containmentProblems(), []);
    assert.deepEqual(pods.unansweredQueries(), []);
  });
});
