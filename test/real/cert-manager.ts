/**
 * The real cert-manager for cert-manager.test.ts: its CRDs from the pinned module (test/helpers/cert-manager.ts)
 * applied to the real kube-apiserver of kube/cluster.ts, and its controllers (scripts/cert-manager/main.go, built
 * by scripts/real-deps.sh) running against it on loopback; a CA issuer made the way cert-manager's docs bootstrap
 * one (a self-signed ClusterIssuer signs a CA Certificate, a CA ClusterIssuer signs with it).
 *
 * The operator's loop keeps its objects in memory (operator.ts), where the pod runner mounts Secrets from; the
 * Certificate is carried between that store and the real API server by `CertificateBridge`, playing
 * Metacontroller's create/update of the child and the informer that brings back its status and Secret — what
 * signs, renews and writes the Secret is cert-manager itself.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import type { MetacontrollerLoop } from "../../src/emulator/metacontroller/loop.js";
import type { Obj } from "../../src/emulator/metacontroller/types.js";
import { certManagerCrds } from "../helpers/cert-manager.js";
import { certManagerController } from "./bins.js";
import type { Cluster } from "./kube/cluster.js";
import { KubeClient } from "./kube/loop.js";

export const CERT_NS = "cert-manager";
export const CA_ISSUER = "tailnet-ca";

export interface RealCertManager {
  kube: KubeClient;
  logs(): string;
  stop(): Promise<void>;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export async function startCertManager(cluster: Cluster): Promise<RealCertManager> {
  for (const crd of certManagerCrds()) {
    const file = join(cluster.dir, `${crd.metadata.name}.json`);
    writeFileSync(file, JSON.stringify(crd));
    // server-side: the Certificate CRD is past client-side apply's annotation limit
    cluster.kubectl(["apply", "--server-side", "-f", file]);
  }
  for (const crd of certManagerCrds())
    cluster.kubectl(["wait", "--for=condition=Established", `crd/${crd.metadata.name}`, "--timeout=60s"]);
  cluster.kubectl(["create", "namespace", CERT_NS]);
  const lines: string[] = [];
  const proc: ChildProcess = spawn(
    certManagerController,
    [`--kubeconfig=${cluster.adminConfig}`, `--cluster-resource-namespace=${CERT_NS}`],
    { stdio: ["ignore", "pipe", "pipe"] },
  );
  for (const s of [proc.stdout, proc.stderr]) s?.on("data", (d: Buffer) => lines.push(...d.toString().split("\n")));
  const logs = () => `--- last lines of cert-manager-controller ---\n${lines.slice(-60).join("\n")}`;
  return {
    kube: new KubeClient(cluster),
    logs,
    async stop() {
      if (proc.exitCode !== null) return;
      proc.kill("SIGTERM");
      await Promise.race([new Promise((r) => proc.once("exit", r)), sleep(5000)]);
      if (proc.exitCode === null) proc.kill("SIGKILL");
    },
  };
}

const CA_OBJECTS = `
apiVersion: cert-manager.io/v1
kind: ClusterIssuer
metadata: { name: selfsigned }
spec: { selfSigned: {} }
---
apiVersion: cert-manager.io/v1
kind: Certificate
metadata: { name: ${CA_ISSUER}, namespace: ${CERT_NS} }
spec:
  isCA: true
  commonName: tailnet test CA
  secretName: ${CA_ISSUER}
  privateKey: { algorithm: ECDSA, size: 256 }
  issuerRef: { name: selfsigned, kind: ClusterIssuer, group: cert-manager.io }
---
apiVersion: cert-manager.io/v1
kind: ClusterIssuer
metadata: { name: ${CA_ISSUER} }
spec: { ca: { secretName: ${CA_ISSUER} } }
`;

/** The CA ClusterIssuer, Ready; returns the CA certificate clients trust (PEM). */
export async function caIssuer(cluster: Cluster, cm: RealCertManager): Promise<string> {
  cluster.kubectl(["apply", "-f", "-"], { input: CA_OBJECTS });
  const deadline = Date.now() + 90_000;
  for (;;) {
    const r = await cm.kube.send("GET", `/apis/cert-manager.io/v1/clusterissuers/${CA_ISSUER}`);
    const conds = (r.json.status as { conditions?: { type: string; status: string }[] } | undefined)?.conditions ?? [];
    if (conds.some((c) => c.type === "Ready" && c.status === "True")) break;
    if (Date.now() > deadline)
      throw new Error(`ClusterIssuer ${CA_ISSUER} not Ready: ${JSON.stringify(r.json.status)}\n${cm.logs()}`);
    await sleep(500);
  }
  const secret = await cm.kube.send("GET", `/api/v1/namespaces/${CERT_NS}/secrets/${CA_ISSUER}`);
  return Buffer.from((secret.json.data as Record<string, string>)["tls.crt"], "base64").toString();
}

/** JSON with object keys sorted: the server returns a custom resource's fields in its own order. */
const canonical = (v: unknown): string =>
  JSON.stringify(v, (_k, x) =>
    x && typeof x === "object" && !Array.isArray(x)
      ? Object.fromEntries(Object.entries(x as Record<string, unknown>).sort(([a], [b]) => a.localeCompare(b)))
      : x,
  );

const certPath = (ns: string, name = "") =>
  `/apis/cert-manager.io/v1/namespaces/${ns}/certificates${name ? `/${name}` : ""}`;

/**
 * Carries Certificates between the operator loop's store and the real API server: the child as the hook returned it
 * goes to the server (create, or update of its spec, as Metacontroller's InPlace update does); the server's status
 * and the Secret cert-manager wrote come back into the store. The status's observedGeneration is the server's; it is
 * rewritten to the store's generation of the same spec, since the two counters are separate objects' here.
 */
export class CertificateBridge {
  constructor(
    private readonly mc: MetacontrollerLoop,
    private readonly kube: KubeClient,
  ) {}

  async sync(): Promise<void> {
    for (const local of this.mc.list("Certificate")) {
      const ns = local.metadata.namespace ?? "default";
      const got = await this.kube.send("GET", certPath(ns, local.metadata.name));
      if (got.code !== 200 && got.code !== 404)
        throw new Error(`get Certificate: ${got.code} ${JSON.stringify(got.json)}`);
      let remote = got.json as Obj;
      if (got.code === 404) {
        const body = {
          apiVersion: local.apiVersion,
          kind: local.kind,
          metadata: { name: local.metadata.name, namespace: ns, labels: local.metadata.labels },
          spec: local.spec,
        };
        const r = await this.kube.send("POST", certPath(ns), body);
        if (r.code !== 201)
          throw new Error(`create Certificate ${ns}/${local.metadata.name}: ${r.code} ${JSON.stringify(r.json)}`);
        remote = r.json as Obj;
      } else if (canonical(remote.spec) !== canonical({ ...(remote.spec as object), ...(local.spec as object) })) {
        const r = await this.kube.send("PUT", certPath(ns, local.metadata.name), { ...remote, spec: local.spec });
        if (r.code !== 200) throw new Error(`update Certificate: ${r.code} ${JSON.stringify(r.json)}`);
        remote = r.json as Obj;
      }
      this.bringBack(local, remote);
      await this.secretBack(ns, (local.spec as { secretName: string }).secretName);
    }
  }

  private bringBack(local: Obj, remote: Obj): void {
    const status = structuredClone((remote.status ?? {}) as { conditions?: { observedGeneration?: number }[] });
    const gen = local.metadata.generation ?? 1;
    for (const c of status.conditions ?? [])
      if (c.observedGeneration !== undefined)
        c.observedGeneration = c.observedGeneration >= (remote.metadata.generation ?? 1) ? gen : gen - 1;
    if (canonical(status) !== canonical(local.status ?? {})) this.mc.apply({ ...local, status } as Obj);
  }

  private async secretBack(ns: string, name: string): Promise<void> {
    const r = await this.kube.send("GET", `/api/v1/namespaces/${ns}/secrets/${name}`);
    if (r.code !== 200) return;
    const s = r.json as Obj & { type?: string; data?: Record<string, string> };
    const local = this.mc.get("v1", "Secret", name, ns) as (Obj & { data?: unknown }) | undefined;
    if (local && canonical(local.data) === canonical(s.data)) return;
    this.mc.apply({
      apiVersion: "v1",
      kind: "Secret",
      metadata: { name, namespace: ns, labels: s.metadata.labels, annotations: s.metadata.annotations },
      type: s.type,
      data: s.data,
    } as Obj);
  }
}
