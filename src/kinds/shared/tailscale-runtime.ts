/**
 * The tailscale container every pod the operator runs shares (agents and gateways): its environment, its
 * state emptyDir and the token-less service-account files, so both kinds start tailscaled the same way.
 */

/** Where the state emptyDir is mounted; it lives as long as the pod. */
export const TAILSCALE_STATE_DIR = "/var/lib/tailscale";
/**
 * TS_STATE_DIR: a folder tailscaled makes inside the emptyDir. A state folder named "tailscale" must
 * be mode 0700 and tailscaled chmods it (paths/paths_unix.go ensureStateDirPermsUnix), which a
 * non-root container cannot do to the kubelet's root-owned emptyDir ("creating state directory:
 * chmod /var/lib/tailscale: operation not permitted", then no state store and no login — seen with
 * the real tailscaled in test/real); a folder it creates itself is its own.
 */
export const TAILSCALE_STATE_SUBDIR = `${TAILSCALE_STATE_DIR}/state`;
/** Where the kubelet would mount the service-account files (kube/kubeclient/client.go saPath). */
export const SERVICE_ACCOUNT_DIR = "/var/run/secrets/kubernetes.io/serviceaccount";
/** Key of the Headscale CA in the pod's ConfigMap (from the Tailnet's caSecretRef). */
export const CA_KEY = "ca.crt";

export interface TailscaleRuntimeInputs {
  /** OperatorConfig.tailscale.noLogsNoSupport: TS_NO_LOGS_NO_SUPPORT=true. */
  noLogsNoSupport: boolean;
  /** Path of the Headscale CA inside the tailscale container (SSL_CERT_FILE); none: system roots. */
  caFile?: string;
  /**
   * The replica's state Secret (replica.ts stateSecretName): tailscaled keeps its state there (kube store), so the
   * replica is one node for life. Absent: state on the emptyDir only (the gateway, until it moves to replicas).
   */
  stateSecret?: string;
}

/**
 * Environment every tailscale container gets. TS_KUBE_SECRET="" keeps state out of the API
 * (containerboot keeps an explicit empty value, settings.go); it is written without `value`, which
 * the kubelet sets as "" and is what the API server stores (`value` is omitempty): a `value: ""`
 * would differ from the stored object on every sync, so dynamic-apply would PUT the Deployment each
 * time. TS_STATE_DIR puts the state on an emptyDir, so a restarted container comes back as the
 * same node without logging in again
 * (TS_AUTH_ONCE: `tailscale up` runs only in NeedsLogin, containerboot main.go).
 */
export function tailscaleRuntimeEnv(r: TailscaleRuntimeInputs): Record<string, unknown>[] {
  const env: Record<string, unknown>[] = [
    { name: "TS_AUTH_ONCE", value: "true" },
    ...(r.stateSecret ? tailscaleKubeStoreEnv(r.stateSecret) : [{ name: "TS_KUBE_SECRET" }]),
    { name: "TS_STATE_DIR", value: TAILSCALE_STATE_SUBDIR },
  ];
  // tailscaled uploads its logs to log.tailscale.com unless told not to (envknob NoLogsNoSupport)
  if (r.noLogsNoSupport) env.push({ name: "TS_NO_LOGS_NO_SUPPORT", value: "true" });
  // Go reads SSL_CERT_FILE instead of the system bundle; tailscale still has its baked-in roots
  if (r.caFile) env.push({ name: "SSL_CERT_FILE", value: r.caFile });
  return env;
}

/**
 * The kube state store: tailscaled runs with --state=kube:<secret> (tailscale cmd/containerboot/tailscaled.go), and
 * TS_STATE_DIR stays its --statedir for the files that are not state. The API address is read from
 * KUBERNETES_SERVICE_HOST/PORT_HTTPS, which the kubelet always injects, instead of kubernetes.default.svc, so boot
 * needs no cluster DNS (kube/kubeclient/client.go defaultURL; the same switch exists in v1.96.0). With AUTH_ONCE a
 * node with state comes up Running and never uses TS_AUTHKEY again (containerboot main.go authLoop): the key is for
 * the first login only.
 */
export function tailscaleKubeStoreEnv(stateSecret: string): Record<string, unknown>[] {
  return [
    { name: "TS_KUBE_SECRET", value: stateSecret },
    { name: "TS_KUBERNETES_READ_API_SERVER_ADDRESS_FROM_ENV", value: "true" },
  ];
}

/** The token the tailscale container reads its state Secret with: an hour, re-read by the kube client (client.go). */
export const STATE_TOKEN_SOURCE = { serviceAccountToken: { path: "token", expirationSeconds: 3600 } } as const;

/**
 * Volumes of the tailscale container with a state Secret: the same, plus the projected token in the
 * serviceaccount volume. That volume is mounted in the tailscale container only, and the pod keeps
 * automountServiceAccountToken false, so the agent and CoreDNS containers hold no credential.
 */
export function tailscaleRuntimeVolumes(opts: { token: boolean }): Record<string, unknown>[] {
  if (!opts.token) return [...TAILSCALE_RUNTIME_VOLUMES];
  return TAILSCALE_RUNTIME_VOLUMES.map((v) => {
    if (v.name !== "serviceaccount") return v;
    const projected = v.projected as { sources: unknown[] };
    return { ...v, projected: { ...projected, sources: [STATE_TOKEN_SOURCE, ...projected.sources] } };
  });
}

/**
 * Volumes of the tailscale container: its state, and the service-account namespace and cluster
 * CA without a token. Images before v1.96.0 build a kube client whenever KUBERNETES_SERVICE_HOST
 * is set and exit without these two files (tailscale issue 8188); automountServiceAccountToken
 * stays false, so the pod holds no API credential.
 */
export const TAILSCALE_RUNTIME_VOLUMES: readonly Record<string, unknown>[] = [
  { name: "tailscale-state", emptyDir: { medium: "Memory", sizeLimit: "4Mi" } },
  {
    name: "serviceaccount",
    projected: {
      sources: [
        {
          downwardAPI: {
            items: [{ path: "namespace", fieldRef: { apiVersion: "v1", fieldPath: "metadata.namespace" } }],
          },
        },
        // optional: a cluster that publishes no kube-root-ca.crt still starts the pod (v1.96+ needs none)
        { configMap: { name: "kube-root-ca.crt", items: [{ key: "ca.crt", path: "ca.crt" }], optional: true } },
      ],
    },
  },
];

export const TAILSCALE_RUNTIME_MOUNTS: readonly Record<string, unknown>[] = [
  { name: "tailscale-state", mountPath: TAILSCALE_STATE_DIR },
  { name: "serviceaccount", mountPath: SERVICE_ACCOUNT_DIR, readOnly: true },
];
