/**
 * A model of how the official tailscale image boots one of our pod specs: containerboot reading the
 * `tailscale` container's environment and mounts, then `tailscale up` registering with Headscale.
 * Read from tailscale v1.102.5 `cmd/containerboot` (main.go, settings.go, tailscaled.go) and
 * `kube/kubeclient/client.go`; older images from the same files at their release tags. The tests hand it
 * the Deployment or StatefulSet the operator returned and the objects the cluster holds, and get what the
 * pod does: the registration it makes (so the fake Headscale can refuse it the way the real one would), or
 * why containerboot exits. With `TS_KUBE_SECRET` set, the state Secret's RBAC is checked here
 * (containerboot-kube.ts) and the pod's life with that state is in pod-lifecycle.ts. Nothing here runs a
 * process.
 */
import type { K8sObject } from "../../src/k8s/objects.js";
import { secretValue } from "../../src/kinds/shared/secrets.js";
import { checkKubeState, type KubeStateAccess } from "./containerboot-kube.js";
import type { FakeHeadscale, FakeNode } from "./headscale/index.js";

/** Where the kubelet mounts the service-account files (kube/kubeclient/client.go saPath). */
export const SA_DIR = "/var/run/secrets/kubernetes.io/serviceaccount";

interface EnvVar {
  name: string;
  value?: string;
  valueFrom?: { secretKeyRef?: { name: string; key: string; optional?: boolean } };
}
interface Mount {
  name: string;
  mountPath: string;
}
interface Container {
  name: string;
  image?: string;
  env?: EnvVar[];
  volumeMounts?: Mount[];
}
interface Volume {
  name: string;
  emptyDir?: Record<string, unknown>;
  secret?: { secretName: string; items?: { key: string; path: string }[] };
  configMap?: { name: string; items?: { key: string; path: string }[] };
  projected?: {
    sources: {
      downwardAPI?: { items: { path: string; fieldRef?: { fieldPath: string } }[] };
      configMap?: { name: string; items?: { key: string; path: string }[] };
      secret?: { name: string; items?: { key: string; path: string }[] };
      serviceAccountToken?: { path: string };
    }[];
  };
}
interface PodSpec {
  automountServiceAccountToken?: boolean;
  serviceAccountName?: string;
  containers: Container[];
  volumes?: Volume[];
}

export interface TailscaleBoot {
  image: string;
  /** The pre-auth key TS_AUTHKEY resolved to (from the Secret it references). */
  authKey: string;
  hostname: string;
  loginServer: string;
  /** `--advertise-tags` of TS_EXTRA_ARGS, sent to Headscale as Hostinfo.RequestTags. */
  requestTags: string[];
  acceptRoutes: boolean;
  /** TS_ROUTES, advertised with --advertise-routes. */
  routes: string[];
  noLogsNoSupport: boolean;
  /** The PEM text of SSL_CERT_FILE as the container would read it ("" when unset or not mounted). */
  caPem: string;
  /** tailscaled state survives a container restart (TS_STATE_DIR on an emptyDir or a Secret store). */
  persistentState: boolean;
  /** TS_KUBE_SECRET non-empty: the state Secret and what RBAC lets the pod do with it. */
  kubeState?: KubeStateAccess;
  /** TS_AUTH_ONCE: log in with TS_AUTHKEY only when tailscaled needs a login (main.go authLoop). */
  authOnce: boolean;
  env: Record<string, string>;
}

export type BootResult = { ok: true; boot: TailscaleBoot } | { ok: false; error: string };

export interface BootOptions {
  /** Pretend the image is this version (e.g. "1.90.6"), to check the spec boots on older images. */
  imageVersion?: string;
  /** The login server's certificate chains to this private CA (HTTPS assumed): SSL_CERT_FILE must hold it. */
  serverCa?: string;
}

/** The `tailscale` container of a Deployment or StatefulSet (or its pod template). */
export function tailscaleContainer(deployment: K8sObject): { pod: PodSpec; container: Container } {
  const pod = (deployment.spec as { template: { spec: PodSpec } }).template.spec;
  const container = pod.containers.find((c) => c.name === "tailscale");
  if (!container) throw new Error(`${deployment.metadata.name} has no tailscale container`);
  return { pod, container };
}

function parseVersion(image: string): number[] | undefined {
  const m = /:v?(\d+)\.(\d+)\.(\d+)/.exec(image);
  return m ? [Number(m[1]), Number(m[2]), Number(m[3])] : undefined;
}

const older = (v: number[] | undefined, than: number[]) =>
  !!v && (v[0] - than[0] || v[1] - than[1] || v[2] - than[2]) < 0;

const find = (objects: readonly K8sObject[], kind: string, name: string, namespace: string) =>
  objects.find((o) => o.kind === kind && o.metadata.name === name && o.metadata.namespace === namespace);

/** Files a volume puts into its mount directory: relative path → content ("" when unknown). */
function volumeFiles(volume: Volume, objects: readonly K8sObject[], namespace: string): Map<string, string> {
  const files = new Map<string, string>();
  const fromData = (o: K8sObject | undefined, items: { key: string; path: string }[] | undefined, secret: boolean) => {
    if (!o) return;
    const data = { ...((o.data as Record<string, string>) ?? {}), ...((o.stringData as Record<string, string>) ?? {}) };
    const value = (k: string) => (secret ? (secretValue(o, k) ?? "") : (data[k] ?? ""));
    if (items) for (const i of items) files.set(i.path, value(i.key));
    else for (const k of Object.keys(data)) files.set(k, value(k));
  };
  if (volume.secret) fromData(find(objects, "Secret", volume.secret.secretName, namespace), volume.secret.items, true);
  if (volume.configMap)
    fromData(find(objects, "ConfigMap", volume.configMap.name, namespace), volume.configMap.items, false);
  for (const s of volume.projected?.sources ?? []) {
    for (const i of s.downwardAPI?.items ?? [])
      files.set(i.path, i.fieldRef?.fieldPath === "metadata.namespace" ? namespace : "");
    if (s.configMap) {
      // kube-controller-manager publishes kube-root-ca.crt into every namespace
      const cm =
        s.configMap.name === "kube-root-ca.crt"
          ? {
              kind: "ConfigMap",
              apiVersion: "v1",
              metadata: { name: "kube-root-ca.crt", namespace },
              data: { "ca.crt": "CLUSTER CA" },
            }
          : find(objects, "ConfigMap", s.configMap.name, namespace);
      fromData(cm as K8sObject | undefined, s.configMap.items, false);
    }
    if (s.secret) fromData(find(objects, "Secret", s.secret.name, namespace), s.secret.items, true);
    if (s.serviceAccountToken) files.set(s.serviceAccountToken.path, "TOKEN");
  }
  return files;
}

/** Reads a file as the container sees it; undefined when nothing provides it. */
function readFile(
  path: string,
  pod: PodSpec,
  container: Container,
  objects: readonly K8sObject[],
  namespace: string,
): string | undefined {
  if (path.startsWith(`${SA_DIR}/`) && pod.automountServiceAccountToken !== false) {
    const mounted = (container.volumeMounts ?? []).some((m) => m.mountPath === SA_DIR);
    if (!mounted) return { namespace, "ca.crt": "CLUSTER CA", token: "TOKEN" }[path.slice(SA_DIR.length + 1)];
  }
  for (const m of container.volumeMounts ?? []) {
    if (!path.startsWith(`${m.mountPath.replace(/\/$/, "")}/`)) continue;
    const volume = (pod.volumes ?? []).find((v) => v.name === m.name);
    if (!volume) continue;
    const rel = path.slice(m.mountPath.replace(/\/$/, "").length + 1);
    const files = volumeFiles(volume, objects, namespace);
    if (files.has(rel)) return files.get(rel);
  }
  return undefined;
}

function flag(args: readonly string[], name: string): string | undefined {
  for (let i = 0; i < args.length; i++) {
    const a = args[i];
    if (a === `--${name}`) return args[i + 1]?.startsWith("--") || args[i + 1] === undefined ? "true" : args[i + 1];
    if (a.startsWith(`--${name}=`)) return a.slice(name.length + 3);
  }
  return undefined;
}

/** Boots the tailscale container of `deployment` against the cluster `objects` (Secrets, ConfigMaps). */
export function bootTailscale(
  deployment: K8sObject,
  objects: readonly K8sObject[],
  opts: BootOptions = {},
): BootResult {
  const namespace = deployment.metadata.namespace ?? "";
  const { pod, container } = tailscaleContainer(deployment);
  const image = container.image ?? "";
  const version = opts.imageVersion ? parseVersion(`:${opts.imageVersion}`) : parseVersion(image);
  const env: Record<string, string> = { KUBERNETES_SERVICE_HOST: "10.96.0.1" };
  for (const e of container.env ?? []) {
    if (e.value !== undefined) env[e.name] = e.value;
    else if (e.valueFrom?.secretKeyRef) {
      const ref = e.valueFrom.secretKeyRef;
      const secret = find(objects, "Secret", ref.name, namespace);
      const value = secretValue(secret, ref.key);
      if (value === undefined) {
        if (ref.optional) continue;
        return { ok: false, error: `CreateContainerConfigError: secret "${ref.name}" not found (key ${ref.key})` };
      }
      env[e.name] = value;
    } else env[e.name] = "";
  }
  const file = (p: string) => readFile(p, pod, container, objects, namespace);

  // settings.go: in Kubernetes an unset TS_KUBE_SECRET means "tailscale"; an explicit "" disables it.
  const kubeSecret = "TS_KUBE_SECRET" in env ? env.TS_KUBE_SECRET : "tailscale";
  // main.go builds the kube client when a state Secret is used; images before v1.96.0 built it
  // whenever KUBERNETES_SERVICE_HOST was set (tailscale issue 8188), reading namespace and ca.crt.
  if (kubeSecret !== "" || older(version, [1, 96, 0])) {
    for (const name of ["namespace", "ca.crt"]) {
      if (file(`${SA_DIR}/${name}`) === undefined) {
        return {
          ok: false,
          error: `boot: error initializing kube client: open ${SA_DIR}/${name}: no such file or directory`,
        };
      }
    }
  }
  if (kubeSecret !== "" && file(`${SA_DIR}/token`) === undefined) {
    return {
      ok: false,
      error: `boot: error setting up for running on Kubernetes: no service-account token for Secret ${kubeSecret}`,
    };
  }
  let kubeState: KubeStateAccess | undefined;
  if (kubeSecret !== "") {
    const checked = checkKubeState(objects, namespace, pod.serviceAccountName ?? "default", kubeSecret);
    if (!checked.ok) return checked;
    kubeState = checked.access;
  }

  const args = (env.TS_EXTRA_ARGS ?? "").split(/\s+/).filter(Boolean);
  const loginServer = flag(args, "login-server") ?? "";
  const caPem = env.SSL_CERT_FILE ? (file(env.SSL_CERT_FILE) ?? "") : "";
  if (opts.serverCa && !caPem.includes(opts.serverCa.trim())) {
    return {
      ok: false,
      error: `tailscale up: fetch control key: tls: failed to verify certificate: x509: certificate signed by unknown authority`,
    };
  }
  // Without a key, `tailscale up` starts an interactive login and logs a URL (then the boot times out).
  if (!env.TS_AUTHKEY) {
    return {
      ok: false,
      error: "tailscale up: no TS_AUTHKEY: interactive login, 'To authenticate, visit: …' (boot timeout)",
    };
  }
  const stateDir = env.TS_STATE_DIR ?? "";
  const stateMount = stateDir
    ? (container.volumeMounts ?? []).find((m) => stateDir === m.mountPath || stateDir.startsWith(`${m.mountPath}/`))
    : undefined;
  const stateVolume = stateMount ? (pod.volumes ?? []).find((v) => v.name === stateMount.name) : undefined;
  const acceptRoutes = flag(args, "accept-routes");
  return {
    ok: true,
    boot: {
      image,
      authKey: env.TS_AUTHKEY,
      hostname: env.TS_HOSTNAME ?? "",
      loginServer,
      requestTags: (flag(args, "advertise-tags") ?? "").split(",").filter(Boolean),
      acceptRoutes: acceptRoutes === "true",
      routes: (env.TS_ROUTES ?? "").split(",").filter(Boolean),
      noLogsNoSupport: /^(1|true)$/i.test(env.TS_NO_LOGS_NO_SUPPORT ?? ""),
      caPem,
      persistentState: kubeSecret !== "" || !!stateVolume?.emptyDir,
      kubeState,
      // util/def Bool: strconv.ParseBool, anything else is the default (false)
      authOnce: /^(1|t|T|TRUE|true|True)$/.test(env.TS_AUTH_ONCE ?? ""),
      env,
    },
  };
}

/** Boots the pod and registers its node with the fake Headscale; throws what the pod would log. */
export function registerPod(
  fake: FakeHeadscale,
  deployment: K8sObject,
  objects: readonly K8sObject[],
  opts: BootOptions & { name?: string } = {},
): { node: FakeNode; boot: TailscaleBoot } {
  const result = bootTailscale(deployment, objects, opts);
  if (!result.ok) throw new Error(result.error);
  const { boot } = result;
  const node = fake.registerWithKey(boot.authKey, {
    name: opts.name ?? boot.hostname,
    availableRoutes: boot.routes,
    requestTags: boot.requestTags,
  });
  return { node, boot };
}

/**
 * The tailscale container restarts inside the same pod (a crash, an OOM kill, a liveness failure):
 * with persistent state tailscaled comes back as the same node without logging in
 * (TS_AUTH_ONCE: `tailscale up` only runs in NeedsLogin, main.go authLoop); with memory state it
 * logs in again with TS_AUTHKEY, which a used single-use key refuses.
 */
export function restartTailscale(
  fake: FakeHeadscale,
  boot: TailscaleBoot,
  node: FakeNode,
): { node: FakeNode; sameNode: boolean } {
  if (boot.persistentState && fake.state.nodes.get(node.id) === node) {
    node.online = true;
    return { node, sameNode: true };
  }
  node.online = false;
  const fresh = fake.registerWithKey(boot.authKey, {
    name: boot.hostname,
    availableRoutes: boot.routes,
    requestTags: boot.requestTags,
  });
  return { node: fresh, sameNode: false };
}
