/**
 * One tailnet node per replica, for life (issue 32): the children that give replica i of an object its own
 * identity — a ServiceAccount, a Role naming only its state Secret, the RoleBinding, the state Secret itself and a
 * StatefulSet of one pod — and their names. RBAC subjects are ServiceAccounts and a StatefulSet cannot give each
 * ordinal its own, so each replica is its own StatefulSet (the Tailscale operator shares one SA and one Role across
 * replicas, cmd/k8s-operator/proxygroup_specs.go pgRole: any replica can read every replica's state; here none can).
 * A StatefulSet, not a Deployment, because it never runs two pods of one ordinal at once: two tailscaleds with one
 * machine key would flap the node.
 */

import { createHash } from "node:crypto";
import { OWNER_UID_LABEL } from "../../k8s/labels.js";
import type { K8sObject, ObjectMeta } from "../../k8s/objects.js";
import { dnsLabel } from "./node-names.js";

/** Pod and child label: the replica index ("0", "1", …). */
export const REPLICA_LABEL = "tailnet.internal/replica";
/** On state Secrets only: the one Secret kind whose data the operator never writes (tailscaled's kube store does). */
export const STATE_LABEL = "tailnet.internal/state";
/**
 * A StatefulSet name is at most 52 characters: the controller-revision-hash label is the name plus a 10-character
 * hash and must stay a 63-character label value (tailscale cmd/k8s-operator/sts.go, the same limit).
 */
export const MAX_STATEFULSET_NAME = 52;

const hash6 = (s: string) => createHash("sha256").update(s).digest("hex").slice(0, 6);

/**
 * Replica i's children's name: `<parent>-<kind>-<i>` when it fits in 52 characters, else the parent's name cut and
 * followed by a hash of the whole name, so two long names sharing a prefix in one namespace never collide.
 */
export function replicaName(parentName: string, kindSuffix: string, index: number): string {
  const plain = `${parentName}-${kindSuffix}-${index}`;
  if (plain.length <= MAX_STATEFULSET_NAME) return plain;
  const tail = `-${hash6(parentName)}-${kindSuffix}-${index}`;
  const head = parentName.slice(0, Math.max(0, MAX_STATEFULSET_NAME - tail.length)).replace(/[-.]+$/, "");
  return `${head}${tail}`;
}

/** The state Secret of a replica: `<replica name>-state` (at most 58 characters). */
export const stateSecretName = (replica: string) => `${replica}-state`;

/**
 * The MagicDNS label a replica's node should carry (its TS_HOSTNAME, sanitised as Headscale derives GivenName):
 * replica 0 keeps the object's host name, replica i ≥ 1 is `<host>-r<i>` — never `<host>-<i>`, which reads exactly
 * like Headscale's collision bump (hscontrol/state/node_store.go resolveGivenName) and would hide a real `-1`.
 */
export function wantedLabel(hostname: string, index: number): string {
  const base = dnsLabel(hostname);
  if (index === 0) return base;
  const suffix = `-r${index}`;
  return `${base.slice(0, 63 - suffix.length).replace(/-+$/, "")}${suffix}`;
}

export interface ReplicaRef {
  /** The parent object (its namespace and uid). */
  parent: K8sObject;
  index: number;
  /** replicaName(...) */
  name: string;
  /** The parent's common child labels (commonLabels), the replica label is added. */
  labels: Record<string, string>;
}

const meta = (r: ReplicaRef, extra: Record<string, string> = {}) => ({
  name: r.name,
  namespace: r.parent.metadata.namespace,
  labels: { ...r.labels, [OWNER_UID_LABEL]: r.parent.metadata.uid ?? "", [REPLICA_LABEL]: String(r.index), ...extra },
});

/** The replica's own ServiceAccount; the pod mounts no token by default (only the tailscale container gets one). */
export function replicaServiceAccount(r: ReplicaRef): K8sObject {
  return { apiVersion: "v1", kind: "ServiceAccount", metadata: meta(r), automountServiceAccountToken: false };
}

/**
 * What the replica may do: get, update and patch its own state Secret, by name. containerboot needs get and update
 * (fatal without), and patch for its own keys (device_id…) and the auth-key removal
 * (tailscale cmd/containerboot/settings.go setupKube, kube/kubeclient/client.go CheckSecretPermissions). No create
 * (RBAC cannot scope it by name, so the operator creates the Secret first), no list/watch, no events.
 */
export function replicaRole(r: ReplicaRef): K8sObject {
  return {
    apiVersion: "rbac.authorization.k8s.io/v1",
    kind: "Role",
    metadata: meta(r),
    rules: [
      {
        apiGroups: [""],
        resources: ["secrets"],
        resourceNames: [stateSecretName(r.name)],
        verbs: ["get", "update", "patch"],
      },
    ],
  };
}

/** Binds the replica's Role to its ServiceAccount (roleRef is immutable: both names are fixed by the replica). */
export function replicaRoleBinding(r: ReplicaRef): K8sObject {
  return {
    apiVersion: "rbac.authorization.k8s.io/v1",
    kind: "RoleBinding",
    metadata: meta(r),
    roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "Role", name: r.name },
    subjects: [{ kind: "ServiceAccount", name: r.name, namespace: r.parent.metadata.namespace }],
  };
}

/** A state Secret as the operator answers it: never any data (tailscaled owns the data; see stateSecret). */
export type StateSecret = {
  apiVersion: "v1";
  kind: "Secret";
  metadata: ObjectMeta;
  type: "Opaque";
  data?: never;
  stringData?: never;
};

/**
 * The replica's state Secret: metadata only. Metacontroller's apply is a 3-way merge against last-applied and
 * removes only keys that were in last-applied, so a desired Secret that never carries `data` never touches what the
 * kube store wrote (tailscale ipn/store/kubestore/store_kube.go). Stable metadata: no update after creation.
 */
export function stateSecret(r: ReplicaRef): StateSecret {
  return {
    apiVersion: "v1",
    kind: "Secret",
    metadata: { ...meta(r, { [STATE_LABEL]: "true" }), name: stateSecretName(r.name) },
    type: "Opaque",
  };
}

export const isStateSecret = (o: K8sObject) => o.kind === "Secret" && o.metadata.labels?.[STATE_LABEL] === "true";

/**
 * The answer for an observed state Secret wherever a path keeps a child "as observed" (a failed observation,
 * finalize): rebuilt from its metadata, never the observed object, so no observed state data travels back.
 */
export function keptStateSecret(observed: K8sObject): StateSecret {
  const { name, namespace, labels } = observed.metadata;
  return {
    apiVersion: "v1",
    kind: "Secret",
    metadata: { name, ...(namespace ? { namespace } : {}), ...(labels ? { labels: { ...labels } } : {}) },
    type: "Opaque",
  };
}

/** Every answer's last step: a state Secret among the children leaves as metadata only, whichever path built it. */
export function withoutStateData(children: readonly K8sObject[]): K8sObject[] {
  return children.map((c) => (isStateSecret(c) ? keptStateSecret(c) : c));
}

/** The replica index a child or pod carries (REPLICA_LABEL), undefined when absent or malformed. */
export function replicaIndexOf(o: K8sObject): number | undefined {
  const v = o.metadata.labels?.[REPLICA_LABEL];
  return v !== undefined && /^(0|[1-9][0-9]{0,3})$/.test(v) ? Number(v) : undefined;
}

export interface StatefulSetInputs {
  /** Labels of the StatefulSet object (the pod template keeps its own). */
  labels: Record<string, string>;
  /** The labels selecting the object's pods (every replica); the replica label is added. */
  selector: Record<string, string>;
  /** 1, or 0 while suspended. */
  replicas: number;
  /** The pod template; its labels gain the replica label. */
  template: { metadata: { labels?: Record<string, string>; annotations?: Record<string, string> }; spec: unknown };
}

/**
 * A StatefulSet of one pod over a pod template. serviceName is required and immutable: it names the replica, and no
 * Service of that name is created (the pod needs no stable DNS). Parallel: nothing orders a single pod.
 */
export function replicaStatefulSet(r: ReplicaRef, s: StatefulSetInputs): K8sObject {
  const replica = { [REPLICA_LABEL]: String(r.index) };
  return {
    apiVersion: "apps/v1",
    kind: "StatefulSet",
    metadata: { name: r.name, namespace: r.parent.metadata.namespace, labels: { ...s.labels, ...replica } },
    spec: {
      replicas: s.replicas,
      serviceName: r.name,
      podManagementPolicy: "Parallel",
      updateStrategy: { type: "RollingUpdate" },
      selector: { matchLabels: { ...s.selector, ...replica } },
      template: {
        ...s.template,
        metadata: { ...s.template.metadata, labels: { ...(s.template.metadata.labels ?? {}), ...replica } },
      },
    },
  };
}

/** The identity children of one replica, in creation order; the StatefulSet comes only once these are observed. */
export function replicaIdentityChildren(r: ReplicaRef): K8sObject[] {
  return [replicaServiceAccount(r), replicaRole(r), replicaRoleBinding(r), stateSecret(r)];
}

/**
 * Pure creation order: the StatefulSet of a replica is answered only once its ServiceAccount, Role, RoleBinding and
 * state Secret are all among the observed children; containerboot exits on a failed permission check at boot, so a
 * pod started before its RoleBinding would crash-loop (cmd/containerboot/settings.go setupKube).
 */
export function identityObserved(r: ReplicaRef, observed: readonly K8sObject[]): boolean {
  return replicaIdentityChildren(r).every((want) =>
    observed.some(
      (o) => o.kind === want.kind && o.metadata.name === want.metadata.name && !o.metadata.deletionTimestamp,
    ),
  );
}
