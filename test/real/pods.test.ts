/**
 * The pod runner on its own (no tailnet): an agent pod built by the product's own Deployment builder
 * runs as real processes in its own namespace, its readiness probe is polled against the pod IP, the
 * Pod object flows back into the loop, env and volumes are what the kubelet would give, the
 * service-account files appear only when the pod spec would get them, and a container that exits
 * fails the runner's check with its last log lines.
 */
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { after, before, describe, test } from "node:test";
import { promisify } from "node:util";
import { request } from "undici";
import type { Obj } from "../../src/emulator/metacontroller/types.js";
import { b64 } from "../../src/kinds/shared/secrets.js";
import { FakeMetacontroller } from "../fakes/metacontroller.js";
import { requireBins } from "./bins.js";
import { TestNet } from "./net.js";
import { PodRunner } from "./pods.js";

const run = promisify(execFile);

const AGENT_IMAGE = "ghcr.io/tailnet-operator/tailnet-operator:0.1.0";

function deployment(name: string, spec: Record<string, unknown>, extra: Record<string, unknown> = {}): Obj {
  return {
    apiVersion: "apps/v1",
    kind: "Deployment",
    metadata: { name, namespace: "shop" },
    spec: {
      replicas: 1,
      selector: { matchLabels: { app: name } },
      template: { metadata: { labels: { app: name } }, spec },
      ...extra,
    },
  };
}

/** Reads a file inside the container's own mount namespace (what the process sees). */
async function catIn(pid: number, path: string): Promise<string | undefined> {
  return run("nsenter", ["--target", String(pid), "--mount", "--", "cat", path]).then(
    (r) => r.stdout,
    () => undefined,
  );
}

describe("pod runner", () => {
  let net: TestNet;
  let mc: FakeMetacontroller;
  let pods: PodRunner;

  before(async () => {
    requireBins();
    net = await TestNet.create({ id: "pods" });
    // the loop's hooks are not called here: the runner only reads and writes its object store
    mc = new FakeMetacontroller({ app: undefined as never, deploymentsAvailable: false });
    pods = new PodRunner({ net, mc, backoffSeconds: 1 });
  });
  after(async () => {
    await pods?.close();
    await net?.close();
  });

  test("an agent pod runs in its own namespace, is probed ready, and its Pod flows back", async () => {
    mc.apply({
      apiVersion: "v1",
      kind: "Secret",
      metadata: { name: "s", namespace: "shop" },
      data: { k: b64("sekret") },
    });
    mc.apply({
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: { name: "agent", namespace: "shop" },
      data: {
        "config.json": JSON.stringify({
          role: "egress",
          metricsPort: 9080,
          targets: [{ name: "t", host: "127.0.0.1", ports: [{ port: 9, listenPort: 10000 }] }],
        }),
      },
    });
    mc.apply(
      deployment("agent", {
        automountServiceAccountToken: false,
        securityContext: { runAsNonRoot: true, runAsUser: 65532, runAsGroup: 65532, fsGroup: 65532 },
        containers: [
          {
            name: "agent",
            image: AGENT_IMAGE,
            args: ["agent", "--config", "/etc/tailnet-agent/config.json"],
            env: [
              { name: "FROM_SECRET", valueFrom: { secretKeyRef: { name: "s", key: "k" } } },
              { name: "POD_NS", valueFrom: { fieldRef: { fieldPath: "metadata.namespace" } } },
              { name: "EXPANDED", value: "ns=$(POD_NS)" },
              // the agent listens on the pod IP (issue 31), as the operator's pods give it
              { name: "POD_IP", valueFrom: { fieldRef: { fieldPath: "status.podIP" } } },
            ],
            ports: [{ name: "metrics", containerPort: 9080 }],
            readinessProbe: { httpGet: { path: "/healthz", port: "metrics" }, periodSeconds: 1 },
            securityContext: { readOnlyRootFilesystem: true },
            volumeMounts: [
              { name: "config", mountPath: "/etc/tailnet-agent", readOnly: true },
              { name: "sa", mountPath: "/var/run/secrets/kubernetes.io/serviceaccount", readOnly: true },
            ],
          },
        ],
        volumes: [
          { name: "config", configMap: { name: "agent" } },
          {
            name: "sa",
            projected: {
              sources: [
                { configMap: { name: "kube-root-ca.crt", items: [{ key: "ca.crt", path: "ca.crt" }] } },
                { downwardAPI: { items: [{ path: "namespace", fieldRef: { fieldPath: "metadata.namespace" } }] } },
              ],
            },
          },
        ],
      }),
    );
    const pod = await pods.waitReady("shop", "agent", 60_000);
    assert.match(pod.ip, /^10\.213\.\d+\.\d+$/);
    // the pod's IP is real: the test process (the node) reaches the agent's /status there
    const res = await request(`http://${pod.ip}:9080/status`);
    assert.equal(res.statusCode, 200);
    assert.deepEqual(
      ((await res.body.json()) as { targets: { name: string }[] }).targets.map((t) => t.name),
      ["t"],
    );

    const fed = mc.get("v1", "Pod", pod.name, "shop");
    const status = fed?.status as { podIP: string; conditions: { type: string; status: string }[] };
    assert.equal(status.podIP, pod.ip);
    assert.deepEqual(status.conditions.find((c) => c.type === "Ready")?.status, "True");
    const d = mc.get("apps/v1", "Deployment", "agent", "shop");
    assert.equal((d?.status as { readyReplicas?: number } | undefined)?.readyReplicas, 1);

    const pid = pod.container("agent").pid;
    assert.ok(pid);
    const environ = (await catIn(pid, `/proc/${pid}/environ`))?.split("\0") ?? [];
    assert.ok(environ.includes("FROM_SECRET=sekret"));
    assert.ok(environ.includes("EXPANDED=ns=shop"));
    assert.ok(environ.includes(`KUBERNETES_SERVICE_HOST=${net.rootIp}`));
    // the projected files are there, the token is not (automountServiceAccountToken: false)
    const sa = "/var/run/secrets/kubernetes.io/serviceaccount";
    assert.equal(await catIn(pid, `${sa}/namespace`), "shop");
    assert.match((await catIn(pid, `${sa}/ca.crt`)) ?? "", /BEGIN CERTIFICATE/);
    assert.equal(await catIn(pid, `${sa}/token`), undefined);
    // run as the pod's user, root read-only, nothing of the pod on the machine's own /etc
    const st = (await catIn(pid, `/proc/${pid}/status`)) ?? "";
    assert.match(st, /^Uid:\s+65532\s/m);
    const touch = await run("nsenter", ["--target", String(pid), "--mount", "--", "touch", "/etc/x"]).then(
      () => "ok",
      (e: { stderr: string }) => e.stderr,
    );
    assert.match(touch, /Read-only file system/);
    assert.equal(await catIn(process.pid, "/etc/tailnet-agent/config.json"), undefined);
  });

  test("a pod without the service-account opt-out gets the token files; a missing Secret key waits", async () => {
    mc.apply(
      deployment("sa", {
        containers: [
          {
            name: "c",
            image: AGENT_IMAGE,
            args: ["agent", "--config", "/etc/tailnet-agent/config.json"],
            volumeMounts: [{ name: "config", mountPath: "/etc/tailnet-agent" }],
          },
        ],
        volumes: [{ name: "config", configMap: { name: "agent" } }],
      }),
    );
    mc.apply(
      deployment("nokey", {
        containers: [
          {
            name: "c",
            image: AGENT_IMAGE,
            env: [{ name: "K", valueFrom: { secretKeyRef: { name: "s", key: "absent" } } }],
          },
        ],
      }),
    );
    const pod = await pods.waitReady("shop", "sa", 60_000);
    const pid = pod.container("c").pid;
    assert.ok(pid);
    assert.equal(
      await catIn(pid, "/var/run/secrets/kubernetes.io/serviceaccount/token"),
      "real-world-test-token.not-a-jwt",
    );
    const [nokey] = pods.podsOf("shop", "nokey");
    assert.equal(nokey.container("c").running, false);
    assert.equal(nokey.container("c").waiting?.reason, "CreateContainerConfigError");
    mc.delete("apps/v1", "Deployment", "sa", "shop");
    mc.delete("apps/v1", "Deployment", "nokey", "shop");
    await pods.sync();
    assert.equal(pods.podsOf("shop", "sa").length, 0);
    assert.equal(mc.get("v1", "Pod", pod.name, "shop"), undefined);
  });

  test("a container that exits fails the check with its last log lines, and restarts with a counter", async () => {
    mc.apply(
      deployment("crash", {
        containers: [{ name: "c", image: AGENT_IMAGE, args: ["agent", "--config", "/nonexistent.json"] }],
      }),
    );
    const deadline = Date.now() + 30_000;
    let restarts = 0;
    while (Date.now() < deadline && restarts < 2) {
      await pods.sync();
      restarts = pods.podsOf("shop", "crash")[0]?.container("c").restartCount ?? 0;
      await new Promise((r) => setTimeout(r, 200));
    }
    assert.ok(restarts >= 2, `restarts ${restarts}`);
    assert.throws(() => pods.check(), /shop\/crash|crash-.*\/c exited[\s\S]*nonexistent/);
    const fed = mc.list("Pod").find((p) => p.metadata.name.startsWith("crash-"));
    const cs = (fed?.status as { containerStatuses?: { restartCount: number }[] } | undefined)?.containerStatuses;
    assert.ok((cs?.[0]?.restartCount ?? 0) >= 2);
    pods.failures.length = 0;
    mc.delete("apps/v1", "Deployment", "crash", "shop");
    await pods.sync();
  });
});
