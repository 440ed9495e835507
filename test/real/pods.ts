/**
 * The pod runner: runs the pods of the Deployments and StatefulSets (statefulsets.ts) a sync returned, as
 * the kubelet would, with the real binaries, in the test network (net.ts). API:
 *
 *   const pods = new PodRunner({ net, mc, hosts: () => ({ headscale: hs.host.ip }) });
 *   await pods.sync();                // start/stop/roll pods for mc's Deployments, feed Pods back to mc
 *   await pods.waitReady("shop", "db-agent");   // → RunningPod (throws with the last log lines)
 *   pods.serviceAddr("shop", "postgres", 5432) // → { host: pod IP, port: targetPort } (no kube-proxy)
 *   pods.check();                     // throws if a container exited / crash-loops (its last log lines)
 *   pods.expectRestarts(pod, "tailscale", 1);   // before killing something on purpose
 *   await pods.waitStatefulSetReady("shop", "db-agent-0")   // → its pods by ordinal (db-agent-0-0)
 *   await pods.deletePod("shop", "db-agent-0-0");           // its controller makes a new one
 *   await pods.close();               // stops every pod (also on failure)
 *
 * Per pod: one host of the TestNet (`pod-<n>`: its own netns, 127.0.0.1 and a real pod IP), one
 * folder with its volumes, /etc/hosts (Service names → the runner's Service map) and /etc/resolv.conf
 * (cluster search path, nameserver = the runner's DNS stub on the test process's leg, see dns.ts).
 * Per container: `ip netns exec <pod> unshare --mount --propagation private` then a shell that
 * bind-mounts the volumes at their mountPaths (a missing mount point is made inside an overlay of its
 * parent, so nothing is created on the machine's root), /etc/hosts and /etc/resolv.conf, remounts /
 * read-only when the container says readOnlyRootFilesystem, and execs the binary as the pod's
 * runAsUser/runAsGroup (setpriv). Env as the kubelet builds it: value/$(VAR), valueFrom (secretKeyRef,
 * configMapKeyRef, fieldRef), envFrom, HOSTNAME, KUBERNETES_SERVICE_HOST/PORT (the test process's leg,
 * port 443: nothing answers there unless the runner has a `kubeApi`, pod-api.ts). Service-account files only
 * when the pod spec would get them (automountServiceAccountToken, else the ServiceAccount's, else true) — or
 * through a projected volume, whose serviceAccountToken is one the pod API accepts when there is one.
 * Images: tailscale/tailscale → containerboot (tailscaled, tailscale on PATH), coredns/coredns →
 * coredns, the operator image → `tailnet-operator` (node + tsx + src/cli.ts); an image whose tag is not
 * a version built in .cache/real (tailscale: the pin or `tailscaleOldest`) is an ErrImageMismatch (a failure). restartPolicy Always with a
 * restart counter and doubling backoff; readiness/liveness probes (httpGet/tcpSocket/exec) polled from
 * the test process (the node) against the pod IP.
 */
import { type ChildProcess, execFile, spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { appendFile, chmod, chown, lstat, mkdir, readlink, rename, rm, symlink, writeFile } from "node:fs/promises";
import { connect } from "node:net";
import { dirname, join } from "node:path";
import { promisify } from "node:util";
import { request } from "undici";
import type { MetacontrollerLoop } from "../../src/emulator/metacontroller/loop.js";
import type { Obj } from "../../src/emulator/metacontroller/types.js";
import { bins, REPO, versions } from "./bins.js";
import { type DnsStub, startDnsStub } from "./dns.js";
import type { Host, TestNet } from "./net.js";
import type { PodApi } from "./pod-api.js";
import { statefulSetUid, syncStatefulSets, waitStatefulSetReady } from "./statefulsets.js";

const run = promisify(execFile);
const IP = "/usr/sbin/ip";
const LOG_LINES = 40;

// ---- the slice of the Kubernetes pod spec the runner reads ----
type KeyRef = { name: string; key: string; optional?: boolean };
type FieldRef = { fieldPath: string };
interface EnvVar {
  name: string;
  value?: string;
  valueFrom?: { secretKeyRef?: KeyRef; configMapKeyRef?: KeyRef; fieldRef?: FieldRef; resourceFieldRef?: unknown };
}
interface EnvFrom {
  prefix?: string;
  secretRef?: { name: string; optional?: boolean };
  configMapRef?: { name: string; optional?: boolean };
}
type PortRef = number | string;
interface Probe {
  httpGet?: { path?: string; port: PortRef; scheme?: string };
  tcpSocket?: { port: PortRef };
  exec?: { command: string[] };
  initialDelaySeconds?: number;
  periodSeconds?: number;
  timeoutSeconds?: number;
  failureThreshold?: number;
  successThreshold?: number;
}
interface Container {
  name: string;
  image: string;
  command?: string[];
  args?: string[];
  env?: EnvVar[];
  envFrom?: EnvFrom[];
  ports?: { name?: string; containerPort: number }[];
  volumeMounts?: { name: string; mountPath: string; readOnly?: boolean; subPath?: string }[];
  readinessProbe?: Probe;
  livenessProbe?: Probe;
  startupProbe?: Probe;
  securityContext?: { readOnlyRootFilesystem?: boolean; runAsUser?: number; runAsGroup?: number };
}
type KeyToPath = { key: string; path: string; mode?: number };
interface ProjectionSource {
  secret?: { name: string; items?: KeyToPath[]; optional?: boolean };
  configMap?: { name: string; items?: KeyToPath[]; optional?: boolean };
  downwardAPI?: { items: { path: string; fieldRef?: FieldRef; mode?: number }[] };
  serviceAccountToken?: { path: string; expirationSeconds?: number; audience?: string };
}
interface Volume {
  name: string;
  emptyDir?: { medium?: string; sizeLimit?: string };
  secret?: { secretName: string; items?: KeyToPath[]; optional?: boolean; defaultMode?: number };
  configMap?: { name: string; items?: KeyToPath[]; optional?: boolean; defaultMode?: number };
  projected?: { sources: ProjectionSource[]; defaultMode?: number };
  downwardAPI?: { items: { path: string; fieldRef?: FieldRef; mode?: number }[]; defaultMode?: number };
}
export interface PodSpec {
  hostname?: string;
  subdomain?: string;
  containers: Container[];
  volumes?: Volume[];
  restartPolicy?: string;
  serviceAccountName?: string;
  automountServiceAccountToken?: boolean;
  securityContext?: { runAsUser?: number; runAsGroup?: number; fsGroup?: number };
  terminationGracePeriodSeconds?: number;
}
interface DeploymentSpec {
  replicas?: number;
  template: { metadata?: { labels?: Record<string, string>; annotations?: Record<string, string> }; spec: PodSpec };
}

const SA_DIR = "/var/run/secrets/kubernetes.io/serviceaccount";
/** The mount script's last line before exec: the container counts as started from here. */
const MOUNTED = "=== volumes mounted";
/** What a pod that should not talk to the API server finds there: a token no API server accepts. */
const FAKE_SA_TOKEN = "real-world-test-token.not-a-jwt";

/** A container that could not start: the kubelet's Waiting reasons. */
class WaitingError extends Error {
  constructor(
    readonly reason: string,
    message: string,
  ) {
    super(message);
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const b64d = (s: string) => Buffer.from(s, "base64").toString("utf8");
const shq = (s: string) => `'${s.replaceAll("'", `'\\''`)}'`;

/** $(VAR) expansion as the kubelet does it (expansion.go): unknown references stay, $$ is a literal $. */
export function expandVars(text: string, vars: Record<string, string>): string {
  return text.replace(/\$\$|\$\(([A-Za-z_][A-Za-z0-9_.-]*)\)/g, (m, name: string | undefined) => {
    if (m === "$$") return "$";
    return name !== undefined && Object.hasOwn(vars, name) ? vars[name] : m;
  });
}

export interface PodRunnerOptions {
  net: TestNet;
  mc: MetacontrollerLoop;
  /** Extra names the pods resolve (/etc/hosts and the DNS stub), e.g. the Headscale host. */
  hosts?: () => Record<string, string>;
  /** Probe periods, initial delays and restart backoff are scaled by this (default 0.2: 10 s → 2 s). */
  timeScale?: number;
  /** First restart backoff before scaling, doubled per restart (kubelet: 10 s, capped at 300 s; here at 60 s). */
  backoffSeconds?: number;
  /** The kube-root-ca.crt every namespace holds (default: a constant PEM nobody trusts). */
  kubeRootCaPem?: string;
  /** Run containers as the pod's runAsUser/runAsGroup (default true). */
  runAsUser?: boolean;
  /** Refuse images whose tag is not the version built in .cache/real (default true). */
  strictImages?: boolean;
  /** Where the containers find "the API server" (default: the test process's leg, where nothing listens on 443). */
  kubeApiHost?: string;
  /**
   * The API server the pods reach there (pod-api.ts, listening on the leg's 443): projected
   * serviceAccountToken files get a token it accepts for the pod's ServiceAccount, its CA becomes
   * kube-root-ca.crt and is published as that ConfigMap in every namespace a pod starts in.
   * Without it a projection gets FAKE_SA_TOKEN, which nothing accepts.
   */
  kubeApi?: PodApi;
}

export interface ContainerState {
  name: string;
  running: boolean;
  ready: boolean;
  restartCount: number;
  waiting?: { reason: string; message: string };
  lastTerminated?: { exitCode: number | null; signal: string | null; finishedAt: string };
  startedAt?: string;
}

interface ProbeState {
  successes: number;
  failures: number;
  ok: boolean;
}

/** One container of a running pod: a process (group) that restarts as restartPolicy Always says. */
export class RunningContainer {
  child: ChildProcess | undefined;
  restartCount = 0;
  waiting: { reason: string; message: string } | undefined;
  lastTerminated: ContainerState["lastTerminated"];
  startedAt: Date | undefined;
  private lines: string[] = [];
  private partial = "";
  private readiness: ProbeState = { successes: 0, failures: 0, ok: false };
  private liveness: ProbeState = { successes: 0, failures: 0, ok: true };
  private nextStart = 0;
  private exited: Promise<void> = Promise.resolve();
  private killedByUs = false;

  constructor(
    readonly pod: RunningPod,
    readonly spec: Container,
  ) {}

  get name(): string {
    return this.spec.name;
  }
  /** Started: the process runs and its mounts are in place (the binary has been exec'd). */
  get running(): boolean {
    return this.started && this.alive;
  }
  /** The process (still mounting, or running) has not exited. */
  get alive(): boolean {
    return !!this.child && this.child.exitCode === null && this.child.signalCode === null;
  }
  private started = false;
  /** Descendants seen at the last sync: killed with the main process (the kubelet kills the cgroup). */
  private orphans: number[] = [];
  get pid(): number | undefined {
    return this.running ? this.child?.pid : undefined;
  }
  get ready(): boolean {
    return this.running && (!this.spec.readinessProbe || this.readiness.ok);
  }

  logs(): string {
    const all = [...this.lines, ...(this.partial ? [this.partial] : [])].slice(-LOG_LINES);
    return `--- last lines of ${this.pod.name}/${this.name} (restarts ${this.restartCount}) ---\n${all.join("\n")}`;
  }

  /** Every line logged so far (all starts), for assertions on what the real binary said. */
  allLogs(): string {
    try {
      return readFileSync(this.logFile, "utf8");
    } catch {
      return "";
    }
  }

  get logFile(): string {
    return join(this.pod.runner.net.logDir, `${this.pod.name}.${this.name}.log`);
  }

  private push(text: string) {
    void appendFile(this.logFile, text).catch(() => undefined);
    if (!this.started && text.includes(MOUNTED)) {
      this.started = true;
      this.pod.runner.changed = true;
    }
    const parts = (this.partial + text).split("\n");
    this.partial = parts.pop() ?? "";
    this.lines.push(...parts);
    if (this.lines.length > LOG_LINES * 4) this.lines = this.lines.slice(-LOG_LINES);
  }

  state(): ContainerState {
    return {
      name: this.name,
      running: this.running,
      ready: this.ready,
      restartCount: this.restartCount,
      waiting: this.running ? undefined : this.waiting,
      lastTerminated: this.lastTerminated,
      startedAt: this.startedAt?.toISOString(),
    };
  }

  /** Starts the container unless it runs or waits for its backoff; a missing key/Secret leaves it Waiting. */
  async ensureStarted(): Promise<void> {
    if (this.alive || this.pod.stopping || Date.now() < this.nextStart) return;
    let argv: { cmd: string; args: string[]; env: Record<string, string> };
    try {
      argv = await this.pod.prepare(this.spec);
    } catch (err) {
      if (!(err instanceof WaitingError)) throw err;
      this.waiting = { reason: err.reason, message: err.message };
      return;
    }
    this.waiting = undefined;
    this.readiness = { successes: 0, failures: 0, ok: false };
    this.liveness = { successes: 0, failures: 0, ok: true };
    this.killedByUs = false;
    this.started = false;
    const script = this.pod.mountScript(this.spec);
    const child = spawn(
      IP,
      [
        "netns",
        "exec",
        this.pod.host.netns,
        "unshare",
        "--mount",
        "--propagation",
        "private",
        "--",
        "/bin/sh",
        "-c",
        script,
        "sh",
        argv.cmd,
        ...argv.args,
      ],
      { env: argv.env, cwd: "/", stdio: ["ignore", "pipe", "pipe"], detached: true },
    );
    this.child = child;
    this.startedAt = new Date();
    this.push(
      `=== start ${this.startedAt.toISOString()} (restart ${this.restartCount}): ${argv.cmd} ${argv.args.join(" ")}\n`,
    );
    const onData = (d: Buffer) => this.push(d.toString("utf8"));
    child.stdout?.on("data", onData);
    child.stderr?.on("data", onData);
    this.exited = new Promise((resolve) => {
      child.on("exit", (code, signal) => {
        this.onExit(code, signal);
        resolve();
      });
      child.on("error", (err) => {
        this.push(`spawn error: ${err.message}\n`);
      });
    });
    this.pod.runner.changed = true;
  }

  private onExit(code: number | null, signal: NodeJS.Signals | null) {
    this.lastTerminated = { exitCode: code, signal, finishedAt: new Date().toISOString() };
    this.push(`=== exited code=${code} signal=${signal}\n`);
    // the rest of the container goes with it (the kubelet kills the whole cgroup)
    if (this.child?.pid) killGroup(this.child.pid, "SIGKILL");
    for (const pid of this.orphans) {
      try {
        process.kill(pid, "SIGKILL");
      } catch {
        // gone
      }
    }
    this.pod.runner.changed = true;
    if (this.pod.stopping) return;
    const backoff = Math.min(60, (this.pod.runner.backoffSeconds * 2 ** this.restartCount) | 0);
    this.restartCount++;
    this.nextStart = Date.now() + backoff * 1000 * this.pod.runner.timeScale;
    this.waiting = { reason: "CrashLoopBackOff", message: `back-off restarting failed container ${this.name}` };
    if (!this.killedByUs) this.pod.runner.noteExit(this, code, signal);
  }

  /** Signal the container's main process (its group on SIGKILL); resolves once it exited. */
  async kill(signal: NodeJS.Signals = "SIGTERM", graceMs = 5000): Promise<void> {
    if (!this.alive || !this.child?.pid) return;
    const pid = this.child.pid;
    try {
      process.kill(pid, signal);
    } catch {
      // gone already
    }
    const timer = setTimeout(() => killGroup(pid, "SIGKILL"), graceMs);
    await this.exited;
    clearTimeout(timer);
  }

  /** Every process of this container (its main process and all descendants), with command names. */
  processes(): { pid: number; comm: string }[] {
    const root = this.pid;
    if (!root) return [];
    const all = new Map<number, { ppid: number; comm: string }>();
    for (const d of readdirSync("/proc")) {
      if (!/^\d+$/.test(d)) continue;
      try {
        const stat = readFileSync(`/proc/${d}/stat`, "utf8");
        const close = stat.lastIndexOf(")");
        const fields = stat.slice(close + 2).split(" ");
        all.set(Number(d), { ppid: Number(fields[1]), comm: stat.slice(stat.indexOf("(") + 1, close) });
      } catch {
        // exited meanwhile
      }
    }
    const out: { pid: number; comm: string }[] = [];
    const walk = (pid: number) => {
      const p = all.get(pid);
      if (!p) return;
      out.push({ pid, comm: p.comm });
      for (const [child, q] of all) if (q.ppid === pid) walk(child);
    };
    walk(root);
    return out;
  }

  async probe(): Promise<void> {
    if (!this.running || !this.startedAt) return;
    this.orphans = this.processes()
      .map((p) => p.pid)
      .filter((pid) => pid !== this.pid);
    const age = (Date.now() - this.startedAt.getTime()) / 1000;
    const scale = this.pod.runner.timeScale;
    const due = (p: Probe, last: { at: number }) => {
      const period = (p.periodSeconds ?? 10) * scale;
      if (age < (p.initialDelaySeconds ?? 0) * scale) return false;
      if (Date.now() - last.at < period * 1000) return false;
      last.at = Date.now();
      return true;
    };
    const r = this.spec.readinessProbe;
    if (r && due(r, this.lastReadiness)) {
      const ok = await this.pod.runProbe(this, r);
      const before = this.readiness.ok;
      tally(this.readiness, ok, r);
      if (before !== this.readiness.ok) this.pod.runner.changed = true;
    }
    const l = this.spec.livenessProbe;
    if (l && due(l, this.lastLiveness)) {
      const ok = await this.pod.runProbe(this, l);
      tally(this.liveness, ok, l);
      if (!this.liveness.ok && this.running) {
        this.push(`=== liveness probe failed ${this.liveness.failures} times: restarting\n`);
        this.pod.runner.noteFailure(`${this.pod.name}/${this.name}: liveness probe failed\n${this.logs()}`);
        this.killedByUs = true;
        await this.kill("SIGTERM", 2000);
      }
    }
  }
  private lastReadiness = { at: 0 };
  private lastLiveness = { at: 0 };
}

function tally(s: ProbeState, ok: boolean, p: Probe) {
  if (ok) {
    s.successes++;
    s.failures = 0;
    if (s.successes >= (p.successThreshold ?? 1)) s.ok = true;
  } else {
    s.failures++;
    s.successes = 0;
    if (s.failures >= (p.failureThreshold ?? 3)) s.ok = false;
  }
}

function killGroup(pid: number, signal: NodeJS.Signals) {
  try {
    process.kill(-pid, signal);
  } catch {
    // the group is gone
  }
}

/** A running pod: its host (netns), folder, volumes and containers. */
export class RunningPod {
  readonly containers: RunningContainer[];
  stopping = false;
  readonly createdAt = new Date();
  private volumesWritten = false;

  constructor(
    readonly runner: PodRunner,
    readonly name: string,
    readonly namespace: string,
    readonly deployment: string,
    readonly templateHash: string,
    readonly labels: Record<string, string>,
    readonly annotations: Record<string, string>,
    readonly spec: PodSpec,
    readonly host: Host,
    /** The controller that made it: a Deployment's ReplicaSet, or a StatefulSet (statefulsets.ts). */
    readonly controllerKind: "Deployment" | "StatefulSet" = "Deployment",
    /** A StatefulSet's pod keeps its name across replacements, never its uid. */
    readonly uid: string = `pod-uid-${name}`,
  ) {
    this.containers = spec.containers.map((c) => new RunningContainer(this, c));
  }

  get ip(): string {
    return this.host.ip;
  }
  get dir(): string {
    return join(this.host.dir, "pod");
  }
  get ready(): boolean {
    return !this.stopping && this.containers.every((c) => c.ready);
  }
  container(name: string): RunningContainer {
    const c = this.containers.find((x) => x.name === name);
    if (!c) throw new Error(`pod ${this.name} has no container ${name}`);
    return c;
  }
  /** The last log lines of every container. */
  logs(): string {
    return this.containers.map((c) => c.logs()).join("\n");
  }

  private get fsGroup(): number | undefined {
    return this.spec.securityContext?.fsGroup;
  }

  private secretData(name: string): Record<string, string> | undefined {
    const s = this.runner.mc.get("v1", "Secret", name, this.namespace) as
      | (Obj & { stringData?: Record<string, string> })
      | undefined;
    if (!s) return undefined;
    const out: Record<string, string> = {};
    for (const [k, v] of Object.entries(s.data ?? {})) out[k] = b64d(v);
    for (const [k, v] of Object.entries(s.stringData ?? {})) out[k] = v;
    return out;
  }

  private configMapData(name: string): Record<string, string> | undefined {
    if (name === "kube-root-ca.crt") return { "ca.crt": this.runner.kubeRootCaPem };
    const c = this.runner.mc.get("v1", "ConfigMap", name, this.namespace);
    return c ? { ...(c.data ?? {}) } : undefined;
  }

  private field(ref: FieldRef): string {
    const p = ref.fieldPath;
    const label = /^metadata\.(labels|annotations)\['(.+)'\]$/.exec(p);
    if (label) return (label[1] === "labels" ? this.labels : this.annotations)[label[2]] ?? "";
    const fields: Record<string, string> = {
      "metadata.name": this.name,
      "metadata.namespace": this.namespace,
      "metadata.uid": this.uid,
      "spec.nodeName": "real-world-node",
      "spec.serviceAccountName": this.spec.serviceAccountName ?? "default",
      "status.podIP": this.ip,
      "status.podIPs": this.ip,
      "status.hostIP": this.runner.net.rootIp,
    };
    if (!(p in fields)) throw new WaitingError("CreateContainerConfigError", `unsupported fieldRef ${p}`);
    return fields[p];
  }

  /** The kubelet's env for a container: service links for the API server, then envFrom, then env. */
  private env(c: Container): Record<string, string> {
    const api = this.runner.kubeApiHost;
    const env: Record<string, string> = {
      KUBERNETES_SERVICE_HOST: api,
      KUBERNETES_SERVICE_PORT: "443",
      KUBERNETES_SERVICE_PORT_HTTPS: "443",
      KUBERNETES_PORT: `tcp://${api}:443`,
      KUBERNETES_PORT_443_TCP: `tcp://${api}:443`,
      KUBERNETES_PORT_443_TCP_PROTO: "tcp",
      KUBERNETES_PORT_443_TCP_PORT: "443",
      KUBERNETES_PORT_443_TCP_ADDR: api,
    };
    const missing = (what: string) => new WaitingError("CreateContainerConfigError", `${what} not found`);
    for (const from of c.envFrom ?? []) {
      const ref = from.secretRef ?? from.configMapRef;
      if (!ref) continue;
      const data = from.secretRef ? this.secretData(ref.name) : this.configMapData(ref.name);
      if (!data) {
        if (ref.optional) continue;
        throw missing(`${from.secretRef ? "secret" : "configmap"} "${ref.name}"`);
      }
      for (const [k, v] of Object.entries(data)) env[`${from.prefix ?? ""}${k}`] = v;
    }
    for (const e of c.env ?? []) {
      if (e.value !== undefined || !e.valueFrom) {
        env[e.name] = expandVars(e.value ?? "", env);
        continue;
      }
      const vf = e.valueFrom;
      const keyRef = vf.secretKeyRef ?? vf.configMapKeyRef;
      if (keyRef) {
        const kind = vf.secretKeyRef ? "secret" : "configmap";
        const data = vf.secretKeyRef ? this.secretData(keyRef.name) : this.configMapData(keyRef.name);
        if (!data) {
          if (keyRef.optional) continue;
          throw missing(`${kind} "${keyRef.name}"`);
        }
        if (!(keyRef.key in data)) {
          if (keyRef.optional) continue;
          throw new WaitingError(
            "CreateContainerConfigError",
            `couldn't find key ${keyRef.key} in ${kind} ${this.namespace}/${keyRef.name}`,
          );
        }
        env[e.name] = data[keyRef.key];
      } else if (vf.fieldRef) {
        env[e.name] = this.field(vf.fieldRef);
      } else {
        throw new WaitingError("CreateContainerConfigError", `env ${e.name}: unsupported valueFrom`);
      }
    }
    return env;
  }

  /** command/args/env of a container, the image mapped to a binary. Throws WaitingError when it cannot start. */
  async prepare(c: Container): Promise<{ cmd: string; args: string[]; env: Record<string, string> }> {
    const image = mapImage(c.image, this.runner.strictImages);
    const vars = this.env(c);
    await this.writeVolumes();
    const command = c.command?.length ? c.command : image.entrypoint;
    const args = c.command?.length ? (c.args ?? []) : c.args ? c.args : image.cmd;
    const argv = [...command, ...args].map((a) => expandVars(a, vars));
    const [first, ...rest] = argv;
    const resolved = image.paths[first] ?? first;
    const prefix = image.prefix ?? [];
    const cmd = prefix.length ? prefix[0] : resolved;
    const finalArgs = prefix.length ? [...prefix.slice(1), ...rest] : rest;
    const env: Record<string, string> = {
      PATH: image.path,
      HOSTNAME: this.name,
      HOME: "/",
      ...image.env,
      ...vars,
    };
    return { cmd, args: finalArgs, env };
  }

  /** Writes every volume's files (again: a changed Secret or ConfigMap shows in the mounted files, as with the kubelet). */
  async writeVolumes(): Promise<void> {
    const root = join(this.dir, "volumes");
    await mkdir(root, { recursive: true });
    for (const v of this.spec.volumes ?? []) {
      const dir = join(root, v.name);
      if (v.emptyDir) {
        if (!existsSync(dir)) {
          // as the kubelet makes it: owned by root, 0777, and with an fsGroup group-owned by it with
          // the setgid bit (volume.SetVolumeOwnership) — a non-root process may not chmod it
          await mkdir(dir, { recursive: true });
          if (this.fsGroup !== undefined) await chown(dir, 0, this.fsGroup);
          await chmod(dir, this.fsGroup !== undefined ? 0o2777 : 0o777);
        }
        continue;
      }
      const files = this.volumeFiles(v);
      if (files === undefined) {
        if (!this.volumesWritten)
          throw new WaitingError("ContainerCreating", `MountVolume.SetUp failed for volume "${v.name}"`);
        continue;
      }
      await writeAtomically(dir, files, this.fsGroup);
    }
    await this.writeServiceAccount();
    await this.writeNetworkFiles();
    this.volumesWritten = true;
  }

  /** path → {content, mode}; undefined when a source is missing and not optional. */
  private volumeFiles(v: Volume): Record<string, { content: string; mode: number }> | undefined {
    const out: Record<string, { content: string; mode: number }> = {};
    const put = (data: Record<string, string>, items: KeyToPath[] | undefined, mode: number): boolean => {
      if (items?.length) {
        for (const it of items) {
          if (!(it.key in data)) return false;
          out[it.path] = { content: data[it.key], mode: it.mode ?? mode };
        }
      } else {
        for (const [k, val] of Object.entries(data)) out[k] = { content: val, mode };
      }
      return true;
    };
    const downward = (items: { path: string; fieldRef?: FieldRef; mode?: number }[], mode: number) => {
      for (const it of items)
        if (it.fieldRef) out[it.path] = { content: this.field(it.fieldRef), mode: it.mode ?? mode };
    };
    if (v.secret) {
      const data = this.secretData(v.secret.secretName);
      if (!data) return v.secret.optional ? {} : undefined;
      return put(data, v.secret.items, v.secret.defaultMode ?? 0o644) || v.secret.optional ? out : undefined;
    }
    if (v.configMap) {
      const data = this.configMapData(v.configMap.name);
      if (!data) return v.configMap.optional ? {} : undefined;
      return put(data, v.configMap.items, v.configMap.defaultMode ?? 0o644) || v.configMap.optional ? out : undefined;
    }
    if (v.downwardAPI) {
      downward(v.downwardAPI.items, v.downwardAPI.defaultMode ?? 0o644);
      return out;
    }
    if (v.projected) {
      const mode = v.projected.defaultMode ?? 0o644;
      for (const s of v.projected.sources) {
        if (s.secret) {
          const data = this.secretData(s.secret.name);
          if (!data) {
            if (s.secret.optional) continue;
            return undefined;
          }
          if (!put(data, s.secret.items, mode) && !s.secret.optional) return undefined;
        } else if (s.configMap) {
          const data = this.configMapData(s.configMap.name);
          if (!data) {
            if (s.configMap.optional) continue;
            return undefined;
          }
          if (!put(data, s.configMap.items, mode) && !s.configMap.optional) return undefined;
        } else if (s.downwardAPI) {
          downward(s.downwardAPI.items, mode);
        } else if (s.serviceAccountToken) {
          out[s.serviceAccountToken.path] = { content: this.runner.serviceAccountToken(this), mode };
        }
      }
      return out;
    }
    throw new WaitingError("ContainerCreating", `volume ${v.name}: unsupported volume type`);
  }

  /** Would the kubelet mount the service-account token volume? (pod field, else the ServiceAccount's, else true) */
  get automountsServiceAccount(): boolean {
    if (this.spec.automountServiceAccountToken !== undefined) return this.spec.automountServiceAccountToken;
    const sa = this.runner.mc.get("v1", "ServiceAccount", this.spec.serviceAccountName ?? "default", this.namespace) as
      | (Obj & { automountServiceAccountToken?: boolean })
      | undefined;
    return sa?.automountServiceAccountToken ?? true;
  }

  private async writeServiceAccount(): Promise<void> {
    if (!this.automountsServiceAccount) return;
    await writeAtomically(
      join(this.dir, "serviceaccount"),
      {
        token: { content: FAKE_SA_TOKEN, mode: 0o644 },
        "ca.crt": { content: this.runner.kubeRootCaPem, mode: 0o644 },
        namespace: { content: this.namespace, mode: 0o644 },
      },
      this.fsGroup,
    );
  }

  /** /etc/hosts and /etc/resolv.conf of the pod, rewritten in place (bind mounts hold the inode). */
  async writeNetworkFiles(): Promise<void> {
    const lines = ["127.0.0.1\tlocalhost", `${this.ip}\t${this.name}`];
    for (const [name, ip] of Object.entries(this.runner.names(this.namespace))) lines.push(`${ip}\t${name}`);
    const hosts = `# kubelet-managed hosts file (real-world pod runner)\n${lines.join("\n")}\n`;
    const resolv =
      `search ${this.namespace}.svc.cluster.local svc.cluster.local cluster.local\n` +
      `nameserver ${this.runner.dnsIp}\noptions ndots:5\n`;
    await mkdir(this.dir, { recursive: true });
    await writeFile(join(this.dir, "hosts"), hosts);
    await writeFile(join(this.dir, "resolv.conf"), resolv);
  }

  /**
   * The shell run inside the container's private mount namespace: volumes, service-account files,
   * hosts and resolv.conf bind-mounted, / read-only if asked, then exec as the pod's user.
   */
  mountScript(c: Container): string {
    // Sources are relative to the pod's folder, the shell's cwd, and mounted without canonicalising:
    // a mount over /tmp (an emptyDir) hides the folder's absolute path, never the cwd.
    const mounts: { target: string; source: string; ro: boolean }[] = [];
    for (const m of c.volumeMounts ?? []) {
      const source = m.subPath ? join("volumes", m.name, m.subPath) : join("volumes", m.name);
      mounts.push({ target: m.mountPath, source, ro: !!m.readOnly || !this.volumeWritable(m.name) });
    }
    if (this.automountsServiceAccount && !mounts.some((m) => m.target === SA_DIR)) {
      mounts.push({ target: SA_DIR, source: "serviceaccount", ro: true });
    }
    const real = (p: string) => p.replace(/^\/var\/run(\/|$)/, "/run$1");
    // The binaries and this checkout live under REPO, which a volume can hide (CI clones into a folder
    // under /tmp, where the pods mount an emptyDir): keep a handle on it and put it back after the mounts.
    const lines = ["set -e", `cd ${shq(this.dir)}`, "mkdir -p repo-keep", `mount --bind ${shq(REPO)} repo-keep`];
    // Mount points that do not exist on this machine are made inside a writable layer over the nearest
    // existing ancestor (tmpfs for /run, an overlay elsewhere): the machine's own root stays untouched.
    const layered = new Set<string>();
    for (const m of [...mounts].sort((a, b) => a.target.length - b.target.length)) {
      const target = real(m.target);
      if (existsSync(target)) continue;
      let anc = dirname(target);
      while (!existsSync(anc)) anc = dirname(anc);
      if ([...layered].some((l) => anc === l || anc.startsWith(`${l}/`))) continue;
      if (anc === "/") throw new Error(`mount point ${m.target}: no writable layer over /`);
      layered.add(anc);
      if (anc === "/run") {
        lines.push("mount -t tmpfs -o mode=0755 tmpfs /run");
      } else {
        const layer = join(this.dir, "layers", `${c.name}${anc.replaceAll("/", "_")}`);
        lines.push(
          `rm -rf ${shq(layer)} && mkdir -p ${shq(`${layer}/upper`)} ${shq(`${layer}/work`)}`,
          `mount -t overlay overlay -o ${shq(`lowerdir=${anc},upperdir=${layer}/upper,workdir=${layer}/work`)} ${shq(anc)}`,
        );
      }
    }
    for (const m of [...mounts].sort((a, b) => a.target.length - b.target.length)) {
      const target = real(m.target);
      lines.push(`mkdir -p ${shq(target)}`, `mount --no-canonicalize --bind ${shq(m.source)} ${shq(target)}`);
      if (m.ro) lines.push(`mount -o remount,bind,ro ${shq(target)}`);
    }
    lines.push(
      `if [ ! -e ${shq(join(REPO, "package.json"))} ]; then mkdir -p ${shq(REPO)} && mount --no-canonicalize --bind repo-keep ${shq(REPO)}; fi`,
      "mount --no-canonicalize --bind hosts /etc/hosts",
      "mount --no-canonicalize --bind resolv.conf /etc/resolv.conf",
    );
    if (c.securityContext?.readOnlyRootFilesystem) {
      // the writable layers made for mount points are part of the root filesystem too
      for (const l of layered) lines.push(`mount -o remount,ro ${shq(l)}`);
      lines.push("mount -o remount,bind,ro /");
    }
    lines.push("cd /", `echo ${shq(MOUNTED)} >&2`);
    const uid = c.securityContext?.runAsUser ?? this.spec.securityContext?.runAsUser;
    const gid = c.securityContext?.runAsGroup ?? this.spec.securityContext?.runAsGroup ?? uid;
    if (this.runner.runAsUser && uid !== undefined && uid !== 0) {
      const groups = this.fsGroup !== undefined ? `--groups=${this.fsGroup}` : "--clear-groups";
      lines.push(`exec setpriv --reuid=${uid} --regid=${gid} ${groups} --inh-caps=-all -- "$@"`);
    } else {
      lines.push('exec "$@"');
    }
    return lines.join("\n");
  }

  private volumeWritable(name: string): boolean {
    const v = this.spec.volumes?.find((x) => x.name === name);
    return !!v?.emptyDir;
  }

  private resolvePort(c: RunningContainer, port: PortRef): number {
    if (typeof port === "number") return port;
    const found = this.spec.containers.flatMap((x) => x.ports ?? []).find((p) => p.name === port);
    if (!found) throw new Error(`${this.name}/${c.name}: probe port ${port} is not a container port`);
    return found.containerPort;
  }

  async runProbe(c: RunningContainer, p: Probe): Promise<boolean> {
    const timeoutMs = (p.timeoutSeconds ?? 1) * 1000;
    try {
      if (p.httpGet) {
        const port = this.resolvePort(c, p.httpGet.port);
        const res = await request(`http://${this.ip}:${port}${p.httpGet.path ?? "/"}`, {
          headersTimeout: timeoutMs,
          bodyTimeout: timeoutMs,
        });
        await res.body.dump();
        return res.statusCode >= 200 && res.statusCode < 400;
      }
      if (p.tcpSocket) {
        const port = this.resolvePort(c, p.tcpSocket.port);
        return await new Promise<boolean>((resolve) => {
          const s = connect({ host: this.ip, port, timeout: timeoutMs });
          s.on("connect", () => {
            s.destroy();
            resolve(true);
          });
          s.on("timeout", () => {
            s.destroy();
            resolve(false);
          });
          s.on("error", () => resolve(false));
        });
      }
      if (p.exec && c.pid) {
        const r = await run("nsenter", ["--target", String(c.pid), "--mount", "--net", "--", ...p.exec.command], {
          timeout: timeoutMs,
        }).then(
          () => true,
          () => false,
        );
        return r;
      }
    } catch {
      return false;
    }
    return false;
  }

  /** The Pod object the API server would hold for this pod. */
  object(): Obj {
    const states = this.containers.map((c) => c.state());
    const ready = this.ready;
    const cond = (type: string, status: boolean) => ({ type, status: status ? "True" : "False" });
    const sts = this.controllerKind === "StatefulSet";
    const owner = sts
      ? { kind: "StatefulSet", name: this.deployment, uid: this.runner.statefulSetUid(this) }
      : {
          kind: "ReplicaSet",
          name: `${this.deployment}-${this.templateHash}`,
          uid: `rs-${this.deployment}-${this.templateHash}`,
        };
    return {
      apiVersion: "v1",
      kind: "Pod",
      metadata: {
        name: this.name,
        namespace: this.namespace,
        uid: this.uid,
        // a StatefulSet's pods carry their labels from statefulsets.ts (revision hash, pod index)
        labels: sts ? { ...this.labels } : { ...this.labels, "pod-template-hash": this.templateHash },
        annotations: { ...this.annotations },
        creationTimestamp: this.createdAt.toISOString(),
        ownerReferences: [{ apiVersion: "apps/v1", ...owner, controller: true }],
      },
      spec: { ...structuredClone(this.spec), nodeName: "real-world-node" } as unknown as Record<string, unknown>,
      status: {
        phase: "Running",
        podIP: this.ip,
        podIPs: [{ ip: this.ip }],
        hostIP: this.runner.net.rootIp,
        startTime: this.createdAt.toISOString(),
        conditions: [
          cond("PodScheduled", true),
          cond("Initialized", true),
          cond("ContainersReady", ready),
          cond("Ready", ready),
        ],
        containerStatuses: states.map((s, i) => ({
          name: s.name,
          image: this.spec.containers[i].image,
          imageID: `real-world://${this.spec.containers[i].image}`,
          ready: s.ready,
          started: s.running,
          restartCount: s.restartCount,
          state: s.running
            ? { running: { startedAt: s.startedAt } }
            : { waiting: s.waiting ?? { reason: "ContainerCreating" } },
          ...(s.lastTerminated
            ? {
                lastState: {
                  terminated: {
                    exitCode: s.lastTerminated.exitCode ?? 137,
                    finishedAt: s.lastTerminated.finishedAt,
                    reason: s.lastTerminated.signal ? "Error" : "Completed",
                  },
                },
              }
            : {}),
        })),
      },
    };
  }

  async stop(): Promise<void> {
    this.stopping = true;
    const grace = Math.min(5, this.spec.terminationGracePeriodSeconds ?? 30) * 1000;
    await Promise.all(this.containers.map((c) => c.kill("SIGTERM", grace)));
    // anything left in the pod's namespace goes too
    const { stdout } = await run(IP, ["netns", "pids", this.host.netns]).catch(() => ({ stdout: "" }));
    for (const pid of stdout.split(/\s+/).filter(Boolean)) {
      try {
        process.kill(Number(pid), "SIGKILL");
      } catch {
        // gone
      }
    }
  }
}

/** Kubelet-style volume contents: a `..data` symlink swapped atomically, top-level symlinks into it. */
async function writeAtomically(
  dir: string,
  files: Record<string, { content: string; mode: number }>,
  fsGroup: number | undefined,
): Promise<void> {
  await mkdir(dir, { recursive: true });
  const digest = createHash("sha256")
    .update(JSON.stringify(Object.entries(files).sort()))
    .digest("hex")
    .slice(0, 12);
  const version = `..v${digest}`;
  let previous: string | undefined;
  try {
    previous = await readlink(join(dir, "..data"));
  } catch {
    previous = undefined;
  }
  if (previous === version) return;
  await mkdir(join(dir, version), { recursive: true });
  for (const [path, f] of Object.entries(files)) {
    const file = join(dir, version, path);
    await mkdir(dirname(file), { recursive: true });
    await writeFile(file, f.content);
    await chmod(file, f.mode);
    if (fsGroup !== undefined) await chown(file, 0, fsGroup);
  }
  await rm(join(dir, "..data_tmp"), { force: true });
  await symlink(version, join(dir, "..data_tmp"));
  await rename(join(dir, "..data_tmp"), join(dir, "..data"));
  const tops = new Set(Object.keys(files).map((p) => p.split("/")[0]));
  for (const entry of readdirSync(dir)) {
    if (entry.startsWith("..")) continue;
    if (!tops.has(entry)) await rm(join(dir, entry), { force: true, recursive: true });
  }
  for (const top of tops) {
    const link = join(dir, top);
    const st = await lstat(link).catch(() => undefined);
    if (!st) await symlink(join("..data", top), link);
  }
  if (previous) await rm(join(dir, previous), { recursive: true, force: true });
}

interface ImageMapping {
  /** The image's ENTRYPOINT and CMD. */
  entrypoint: string[];
  cmd: string[];
  /** Paths inside the image → binaries here (for a command that names them). */
  paths: Record<string, string>;
  /** The whole command line replaced by this prefix + args (the operator image: node + tsx + cli.ts). */
  prefix?: string[];
  path: string;
  /** Environment the image itself sets. */
  env?: Record<string, string>;
}

const SYSTEM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

/** The image → the binaries built in .cache/real (or this checkout for the operator image). */
export function mapImage(image: string, strict: boolean): ImageMapping {
  const at = image.lastIndexOf(":");
  const slash = image.lastIndexOf("/");
  const repo = at > slash ? image.slice(0, at) : image;
  const tag = at > slash ? image.slice(at + 1) : "latest";
  const want = (v: string) => {
    if (strict && tag !== v)
      throw new WaitingError(
        "ErrImageMismatch",
        `image ${image}: the real world runs ${repo}:${v} (built in .cache/real from src/real-versions.json)`,
      );
  };
  if (/(^|\/)tailscale\/tailscale$/.test(repo)) {
    // the oldest image the docs claim to support is built too (a TailnetProxyClass picks it)
    const oldest = tag === versions.tailscaleOldest;
    if (!oldest) want(versions.tailscale);
    const b = oldest
      ? { containerboot: bins.containerbootOldest, tailscaled: bins.tailscaledOldest, tailscale: bins.tailscaleOldest }
      : bins;
    return {
      entrypoint: ["/usr/local/bin/containerboot"],
      cmd: [],
      paths: {
        "/usr/local/bin/containerboot": b.containerboot,
        "/usr/local/bin/tailscaled": b.tailscaled,
        "/usr/local/bin/tailscale": b.tailscale,
      },
      path: `${dirname(b.containerboot)}:${SYSTEM_PATH}`,
    };
  }
  if (/(^|\/)coredns\/coredns$/.test(repo)) {
    want(versions.coredns);
    return { entrypoint: ["/coredns"], cmd: [], paths: { "/coredns": bins.coredns }, path: SYSTEM_PATH };
  }
  if (/(^|\/)tailnet-operator$/.test(repo)) {
    // the image's ENTRYPOINT is `node /app/bin/tailnet-operator.js`; here: this checkout through tsx
    return {
      entrypoint: ["tailnet-operator"],
      cmd: ["serve"],
      paths: {},
      prefix: [
        bins.node,
        "--import",
        join(REPO, "node_modules", "tsx", "dist", "esm", "index.mjs"),
        join(REPO, "src", "cli.ts"),
      ],
      path: `${dirname(bins.node)}:${SYSTEM_PATH}`,
      // the image runs compiled JS; tsx here compiles in memory (no cache to write on a read-only root)
      env: { TSX_DISABLE_CACHE: "1" },
    };
  }
  throw new WaitingError("ErrImagePull", `image ${image}: the real world has no binary for it`);
}

/** A selector-matched stand-in pod (e.g. a backend process run by the test in its own host). */
export interface Workload {
  namespace: string;
  name: string;
  labels: Record<string, string>;
  host: Host;
}

/** Runs the pods of the loop's Deployments; see the file comment for the API. */
export class PodRunner {
  readonly net: TestNet;
  readonly mc: MetacontrollerLoop;
  readonly timeScale: number;
  readonly backoffSeconds: number;
  kubeRootCaPem: string;
  readonly runAsUser: boolean;
  readonly strictImages: boolean;
  readonly kubeApiHost: string;
  readonly pods: RunningPod[] = [];
  readonly workloads: Workload[] = [];
  /** Unexpected exits and probe failures, with the container's last log lines. */
  readonly failures: string[] = [];
  changed = false;
  private allowed = new Map<string, number>();
  private seq = 0;
  private dns: DnsStub | undefined;
  private closed = false;
  private extraHosts: () => Record<string, string>;
  readonly kubeApi: PodApi | undefined;
  /** Pods a controller could not create (FailedCreate), by `<ns>/<controller>`, for waitReady's error. */
  readonly failedCreate = new Map<string, string>();
  private tokens = new Map<RunningPod, string>();
  private apiWrote = false;
  /** Every pod this runner made, in order (at-most-one checks read each one's containers' exit times). */
  readonly history: RunningPod[] = [];

  constructor(opts: PodRunnerOptions) {
    this.net = opts.net;
    this.mc = opts.mc;
    this.timeScale = opts.timeScale ?? 0.2;
    this.backoffSeconds = opts.backoffSeconds ?? 10;
    this.kubeRootCaPem = opts.kubeRootCaPem ?? "";
    this.runAsUser = opts.runAsUser ?? true;
    this.strictImages = opts.strictImages ?? true;
    this.kubeApiHost = opts.kubeApiHost ?? opts.net.rootIp;
    this.extraHosts = opts.hosts ?? (() => ({}));
    this.kubeApi = opts.kubeApi;
    if (this.kubeApi) {
      this.kubeRootCaPem = this.kubeApi.caPem;
      this.kubeApi.onWrite = () => {
        this.apiWrote = true;
      };
    }
  }

  /** The token a projected serviceAccountToken holds: one the pod API accepts (minted once per pod), else a fake. */
  serviceAccountToken(pod: RunningPod): string {
    if (!this.kubeApi) return FAKE_SA_TOKEN;
    let t = this.tokens.get(pod);
    if (!t) {
      t = this.kubeApi.mintToken(pod.namespace, pod.spec.serviceAccountName ?? "default", pod.name);
      this.tokens.set(pod, t);
    }
    return t;
  }

  /** The uid of the StatefulSet that owns a pod (its ownerReference). */
  statefulSetUid(pod: RunningPod): string {
    return statefulSetUid(this, pod);
  }

  /** What kube-controller-manager's root-ca-cert-publisher keeps in every namespace (only with a pod API). */
  private publishRootCa(namespace: string): void {
    if (!this.kubeApi) return;
    const live = this.mc.get("v1", "ConfigMap", "kube-root-ca.crt", namespace);
    if (live?.data?.["ca.crt"] === this.kubeRootCaPem) return;
    this.mc.apply({
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: { name: "kube-root-ca.crt", namespace },
      data: { "ca.crt": this.kubeRootCaPem },
    });
  }

  get dnsIp(): string {
    return this.net.rootIp;
  }

  /** Every DNS question a pod asked that the stub could not answer (names outside the test world). */
  unansweredQueries(): { from: string; name: string }[] {
    return this.dns?.unanswered() ?? [];
  }

  /** name → IP every pod of `namespace` resolves: Services (short in their own namespace) and extra hosts. */
  names(namespace: string): Record<string, string> {
    const out: Record<string, string> = { ...this.extraHosts() };
    if (this.kubeApi) {
      // the `kubernetes` Service of `default`: cluster DNS answers it in every cluster. Clients that build
      // their URL from https://kubernetes.default.svc need it even with the env address switch (tailscale
      // kube/kubeclient/client.go New checks Event permissions there before the caller's SetURL).
      for (const n of ["kubernetes.default.svc.cluster.local", "kubernetes.default.svc", "kubernetes.default"])
        out[n] = this.kubeApiHost;
      if (namespace === "default") out.kubernetes = this.kubeApiHost;
    }
    for (const svc of this.mc.list("Service")) {
      const ip = this.serviceBackend(svc)?.ip;
      if (!ip) continue;
      const ns = svc.metadata.namespace ?? "default";
      const n = svc.metadata.name;
      out[`${n}.${ns}.svc.cluster.local`] = ip;
      out[`${n}.${ns}.svc`] = ip;
      out[`${n}.${ns}`] = ip;
      if (ns === namespace) out[n] = ip;
    }
    return out;
  }

  private serviceBackend(svc: Obj): { ip: string; pod?: RunningPod } | undefined {
    const selector = (svc.spec as { selector?: Record<string, string> } | undefined)?.selector;
    if (!selector || !Object.keys(selector).length) return undefined;
    const ns = svc.metadata.namespace ?? "default";
    const match = (labels: Record<string, string>) => Object.entries(selector).every(([k, v]) => labels[k] === v);
    const pod = this.pods.find((p) => p.namespace === ns && p.ready && match(p.labels));
    if (pod) return { ip: pod.ip, pod };
    const w = this.workloads.find((x) => x.namespace === ns && match(x.labels));
    return w ? { ip: w.host.ip } : undefined;
  }

  /** Where a client reaching Service ns/name on `port` really connects (pod IP and target port). */
  serviceAddr(namespace: string, name: string, port: number): { host: string; port: number } {
    const svc = this.mc.get("v1", "Service", name, namespace);
    if (!svc) throw new Error(`no Service ${namespace}/${name}`);
    const backend = this.serviceBackend(svc);
    if (!backend) throw new Error(`Service ${namespace}/${name} has no ready endpoint`);
    const ports = (svc.spec as { ports?: { port: number; targetPort?: PortRef }[] }).ports ?? [];
    const p = ports.find((x) => x.port === port);
    if (!p) throw new Error(`Service ${namespace}/${name} has no port ${port}`);
    let target: PortRef = p.targetPort ?? p.port;
    if (typeof target === "string") {
      const named = backend.pod?.spec.containers.flatMap((c) => c.ports ?? []).find((x) => x.name === target);
      if (!named) throw new Error(`Service ${namespace}/${name}: target port ${target} is no container port`);
      target = named.containerPort;
    }
    return { host: backend.ip, port: target };
  }

  addWorkload(w: Workload): void {
    this.workloads.push(w);
  }

  /** The pods of one Deployment (or StatefulSet), newest first. */
  podsOf(namespace: string, deployment: string, kind: RunningPod["controllerKind"] = "Deployment"): RunningPod[] {
    return this.pods
      .filter(
        (p) => p.namespace === namespace && p.deployment === deployment && p.controllerKind === kind && !p.stopping,
      )
      .sort((a, b) => b.createdAt.getTime() - a.createdAt.getTime());
  }

  /** Allow `count` more exits of a container (a test that kills it on purpose). */
  expectRestarts(pod: RunningPod, container: string, count = 1): void {
    const k = `${pod.name}/${container}`;
    this.allowed.set(k, (this.allowed.get(k) ?? 0) + count);
  }

  noteExit(c: RunningContainer, code: number | null, signal: string | null): void {
    const k = `${c.pod.name}/${c.name}`;
    const left = this.allowed.get(k) ?? 0;
    if (left > 0) {
      this.allowed.set(k, left - 1);
      return;
    }
    this.failures.push(`${k} exited (code ${code}, signal ${signal}, restart ${c.restartCount})\n${c.logs()}`);
  }

  noteFailure(text: string): void {
    this.failures.push(text);
  }

  /** Throws with the last log lines when a container exited unexpectedly or cannot start. */
  check(): void {
    if (this.failures.length) {
      // the last failure of each container (its log holds the earlier starts)
      const last = new Map<string, string>();
      for (const f of this.failures) last.set(f.slice(0, f.indexOf(" ")), f);
      throw new Error(`pod failures (${this.failures.length}):\n${[...last.values()].join("\n")}`);
    }
    for (const p of this.pods) {
      for (const c of p.containers) {
        const w = c.waiting;
        if (!c.running && w && ["ErrImageMismatch", "ErrImagePull"].includes(w.reason)) {
          throw new Error(`${p.name}/${c.name}: ${w.reason}: ${w.message}`);
        }
      }
    }
  }

  private async ensureDns(): Promise<void> {
    if (this.dns) return;
    if (!this.kubeRootCaPem) {
      // the cluster's kube-root-ca.crt stand-in: a CA nobody in the test world trusts for anything
      const { stdout } = await run("openssl", [
        "req",
        "-x509",
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:prime256v1",
        "-nodes",
        "-keyout",
        "/dev/null",
        "-subj",
        "/CN=kube-root-ca (real-world tests)",
        "-days",
        "2",
      ]);
      this.kubeRootCaPem = stdout;
    }
    this.dns = await startDnsStub(this.net.rootIp, (from, name) => {
      const pod = this.pods.find((p) => p.ip === from);
      const table = this.names(pod?.namespace ?? "default");
      const n = name.replace(/\.$/, "").toLowerCase();
      return table[n];
    });
  }

  /**
   * One kubelet + ReplicaSet pass: start the pods a Deployment wants (a changed template rolls:
   * new pod first, the old one stops once the new one is ready), stop pods whose Deployment is gone
   * or scaled down, (re)start containers past their backoff, poll probes, rewrite volumes and hosts,
   * and write Pods and Deployment status back into the loop. Returns true when something changed.
   */
  async sync(): Promise<boolean> {
    if (this.closed) throw new Error("PodRunner is closed");
    await this.ensureDns();
    this.changed = this.apiWrote;
    this.apiWrote = false;
    const deployments = this.mc.list("Deployment");
    const live = new Set<string>();
    for (const d of deployments) {
      const spec = d.spec as unknown as DeploymentSpec;
      const ns = d.metadata.namespace ?? "default";
      const key = `${ns}/${d.metadata.name}`;
      live.add(key);
      const replicas = spec.replicas ?? 1;
      const hash = createHash("sha256").update(JSON.stringify(spec.template)).digest("hex").slice(0, 10);
      const mine = this.podsOf(ns, d.metadata.name);
      const current = mine.filter((p) => p.templateHash === hash);
      const old = mine.filter((p) => p.templateHash !== hash);
      const recreate = (d.spec as { strategy?: { type?: string } }).strategy?.type === "Recreate";
      if (recreate || replicas === 0) for (const p of old) await this.stopPod(p);
      if (current.length > replicas) for (const p of current.slice(replicas)) await this.stopPod(p);
      const surge = recreate ? 0 : 1;
      const running = current.length + (recreate ? 0 : old.length);
      if (current.length < replicas && running < replicas + surge) await this.startPod(d, spec, hash);
      const currentNow = this.podsOf(ns, d.metadata.name).filter((p) => p.templateHash === hash);
      if (currentNow.length >= replicas && currentNow.every((p) => p.ready)) {
        for (const p of old) await this.stopPod(p);
      }
    }
    for (const p of [...this.pods])
      if (p.controllerKind === "Deployment" && !live.has(`${p.namespace}/${p.deployment}`)) await this.stopPod(p);
    const statefulSets = await syncStatefulSets(this);
    for (const p of this.pods) {
      for (const c of p.containers) await c.ensureStarted();
      await Promise.all(p.containers.map((c) => c.probe()));
      await p.writeVolumes().catch((err) => {
        if (!(err instanceof WaitingError)) throw err;
      });
    }
    this.feedBack(deployments);
    statefulSets.feedBack();
    return this.changed;
  }

  private async startPod(d: Obj, spec: DeploymentSpec, hash: string): Promise<RunningPod> {
    return this.createPod(d, spec.template, hash, (host) => {
      const suffix = createHash("sha256").update(`${host.netns}`).digest("hex").slice(0, 5);
      return { name: `${d.metadata.name}-${hash}-${suffix}`, kind: "Deployment" };
    });
  }

  /** A new pod (a new host: netns and IP) for controller `d`, named and labelled by `identity`. */
  async createPod(
    d: Obj,
    template: DeploymentSpec["template"],
    hash: string,
    identity: (host: Host) => {
      name: string;
      kind: RunningPod["controllerKind"];
      uid?: string;
      labels?: Record<string, string>;
    },
  ): Promise<RunningPod> {
    const ns = d.metadata.namespace ?? "default";
    this.publishRootCa(ns);
    const n = ++this.seq;
    const host = await this.net.addHost(`pod-${n}`);
    const id = identity(host);
    const pod = new RunningPod(
      this,
      id.name,
      ns,
      d.metadata.name,
      hash,
      { ...(template.metadata?.labels ?? {}), ...(id.labels ?? {}) },
      { ...(template.metadata?.annotations ?? {}) },
      structuredClone(template.spec),
      host,
      id.kind,
      id.uid ?? `pod-uid-${id.name}`,
    );
    this.pods.push(pod);
    this.history.push(pod);
    this.changed = true;
    return pod;
  }

  /** Stops a pod (its processes have exited when this resolves) and removes it; its tokens stop working. */
  async stopPod(p: RunningPod): Promise<void> {
    await p.stop();
    this.pods.splice(this.pods.indexOf(p), 1);
    this.tokens.delete(p);
    this.kubeApi?.revokePod(p.namespace, p.name);
    this.mc.delete("v1", "Pod", p.name, p.namespace);
    this.changed = true;
  }

  /**
   * `kubectl delete pod`: the pod stops (grace period, then SIGKILL) and is gone; its controller makes a
   * new one at the next sync (a StatefulSet: the same name, a new process, host and uid).
   */
  async deletePod(namespace: string, name: string): Promise<void> {
    const p = this.pods.find((x) => x.namespace === namespace && x.name === name && !x.stopping);
    if (!p) throw new Error(`no pod ${namespace}/${name}`);
    await this.stopPod(p);
  }

  /** Syncs until the StatefulSet's pods of its update revision are all ready; returns them by ordinal. */
  async waitStatefulSetReady(namespace: string, name: string, timeoutMs = 60_000): Promise<RunningPod[]> {
    return waitStatefulSetReady(this, namespace, name, timeoutMs);
  }

  /** Pods into the loop's store (status included) and each Deployment's status from its real pods. */
  private feedBack(deployments: Obj[]): void {
    for (const p of this.pods) {
      const o = p.object();
      const before = this.mc.get("v1", "Pod", p.name, p.namespace);
      if (JSON.stringify(before?.status) !== JSON.stringify(o.status)) this.changed = true;
      this.mc.apply(o);
    }
    for (const d of deployments) {
      const ns = d.metadata.namespace ?? "default";
      const spec = d.spec as unknown as DeploymentSpec;
      const replicas = spec.replicas ?? 1;
      const hash = createHash("sha256").update(JSON.stringify(spec.template)).digest("hex").slice(0, 10);
      const pods = this.podsOf(ns, d.metadata.name);
      const updated = pods.filter((p) => p.templateHash === hash);
      const ready = pods.filter((p) => p.ready).length;
      const available = updated.filter((p) => p.ready).length >= replicas;
      const status = {
        observedGeneration: d.metadata.generation,
        replicas: pods.length,
        updatedReplicas: updated.length,
        readyReplicas: ready,
        availableReplicas: ready,
        ...(pods.length - ready > 0 ? { unavailableReplicas: pods.length - ready } : {}),
        conditions: [
          { type: "Available", status: available ? "True" : "False" },
          {
            type: "Progressing",
            status: "True",
            reason: available && updated.length === pods.length ? "NewReplicaSetAvailable" : "ReplicaSetUpdated",
          },
        ],
      };
      if (JSON.stringify(d.status) !== JSON.stringify(status)) {
        d.status = status;
        this.changed = true;
      }
    }
  }

  /** Syncs until the Deployment has a ready pod of its current template; throws with the pods' logs. */
  async waitReady(namespace: string, deployment: string, timeoutMs = 60_000): Promise<RunningPod> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      await this.sync();
      this.check();
      const d = this.mc.get("apps/v1", "Deployment", deployment, namespace);
      if (d) {
        const spec = d.spec as unknown as DeploymentSpec;
        const hash = createHash("sha256").update(JSON.stringify(spec.template)).digest("hex").slice(0, 10);
        const pod = this.podsOf(namespace, deployment).find((p) => p.templateHash === hash && p.ready);
        if (pod) return pod;
      }
      if (Date.now() > deadline) {
        const pods = this.podsOf(namespace, deployment);
        const why = pods.length
          ? pods.map((p) => `${p.name}: ${JSON.stringify(p.containers.map((c) => c.state()))}\n${p.logs()}`).join("\n")
          : d
            ? "no pod was started"
            : "no such Deployment";
        throw new Error(`Deployment ${namespace}/${deployment} not ready within ${timeoutMs} ms: ${why}`);
      }
      await sleep(250);
    }
  }

  /** Stops every pod and the DNS stub. Safe to call twice. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await Promise.all(this.pods.map((p) => p.stop().catch(() => undefined)));
    await this.dns?.close();
  }
}
