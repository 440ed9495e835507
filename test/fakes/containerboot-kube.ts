/**
 * containerboot's Kubernetes state store (`TS_KUBE_SECRET=<secret>`), modelled on tailscale v1.102.5:
 * cmd/containerboot/settings.go `setupKube` and `hasKubeStateStore`, kube/kubeclient/client.go
 * `CheckSecretPermissions` (one SelfSubjectAccessReview per verb on the named Secret), ipn/store/kubestore/
 * store_kube.go (tailscaled's own keys, sanitised: `_machinekey`, `_current-profile`, `_profiles`,
 * `profile-<id>`), cmd/containerboot/kube.go (`storeDeviceID`, `storeDeviceEndpoints`, `resetContainerbootState`,
 * `deleteAuthKey`) and main.go `authLoop` (TS_AUTH_ONCE: `tailscale up --authkey` only in NeedsLogin).
 *
 * RBAC is read from the Roles, ClusterRoles and RoleBindings in the store, as the API server's authorizer would
 * answer the review for the pod's ServiceAccount. Nothing here runs a process.
 */
import { createHash, randomBytes } from "node:crypto";
import type { K8sObject } from "../../src/k8s/objects.js";
import { secretValue } from "../../src/kinds/shared/secrets.js";

/** Where the pod's state lives: the cluster's objects, and the direct writes the pod's own client makes. */
export interface PodStore {
  objects(): readonly K8sObject[];
  /** Create or replace an object as the pod's API client does (not through Metacontroller). */
  write(o: K8sObject): void;
}

/** What the permission check found (settings.go setupKube). */
export interface KubeStateAccess {
  secret: string;
  canPatch: boolean;
  canCreate: boolean;
  /** The Secret exists (else tailscaled's kubestore creates it on the first write, needing canCreate). */
  exists: boolean;
}

interface PolicyRule {
  apiGroups?: string[];
  resources?: string[];
  verbs?: string[];
  resourceNames?: string[];
}

const of = (objects: readonly K8sObject[], kind: string, name: string, namespace?: string) =>
  objects.find((o) => o.kind === kind && o.metadata.name === name && o.metadata.namespace === namespace);

/** Whether `sa` may `verb` the Secret `name` in `namespace`: RBAC's rule matching over the store's bindings. */
export function allowed(
  objects: readonly K8sObject[],
  namespace: string,
  sa: string,
  verb: string,
  name: string,
): boolean {
  const bindings = objects.filter((o) => o.kind === "RoleBinding" && o.metadata.namespace === namespace);
  for (const b of bindings) {
    const subjects = (b.subjects as { kind: string; name: string; namespace?: string }[] | undefined) ?? [];
    const bound = subjects.some(
      (s) => s.kind === "ServiceAccount" && s.name === sa && (s.namespace ?? namespace) === namespace,
    );
    if (!bound) continue;
    const ref = b.roleRef as { kind: string; name: string } | undefined;
    const role =
      ref?.kind === "ClusterRole"
        ? of(objects, "ClusterRole", ref.name)
        : of(objects, "Role", ref?.name ?? "", namespace);
    const rules = (role?.rules as PolicyRule[] | undefined) ?? [];
    if (rules.some((r) => matches(r, verb, name))) return true;
  }
  return false;
}

function matches(rule: PolicyRule, verb: string, name: string): boolean {
  const has = (list: string[] | undefined, v: string) => !!list && (list.includes(v) || list.includes("*"));
  if (!has(rule.apiGroups, "")) return false;
  if (!has(rule.resources, "secrets")) return false;
  if (!has(rule.verbs, verb)) return false;
  return !rule.resourceNames?.length || rule.resourceNames.includes(name);
}

/**
 * settings.go setupKube: get and update are required (each missing one named, errors.Join'ed with a newline),
 * patch and create optional; a missing Secret without create is fatal. The error is what `boot:` logs.
 */
export function checkKubeState(
  objects: readonly K8sObject[],
  namespace: string,
  serviceAccount: string,
  secret: string,
): { ok: true; access: KubeStateAccess } | { ok: false; error: string } {
  const can = (verb: string) => allowed(objects, namespace, serviceAccount, verb, secret);
  const missing = ["get", "update"].filter((v) => !can(v)).map((v) => `missing ${v} permission on secret "${secret}"`);
  const prefix = "boot: error setting up for running on Kubernetes: ";
  if (missing.length) {
    return {
      ok: false,
      error: `${prefix}some Kubernetes permissions are missing, please check your RBAC configuration: ${missing.join("\n")}`,
    };
  }
  const access = { secret, canPatch: can("patch"), canCreate: can("create"), exists: false };
  access.exists = !!of(objects, "Secret", secret, namespace);
  if (!access.exists && !access.canCreate) {
    return {
      ok: false,
      error:
        `${prefix}tailscale state Secret ${secret} does not exist and we don't have permissions to create it. ` +
        "If you intend to store tailscale state elsewhere than a Kubernetes Secret, " +
        "you can explicitly set TS_KUBE_SECRET env var to an empty string. " +
        "Else ensure that RBAC is set up that allows the service account associated with this installation to create Secrets.",
    };
  }
  return { ok: true, access };
}

/** tailcfg.CurrentCapabilityVersion of v1.102.5 (tailcfg/tailcfg.go), written as `tailscale_capver`. */
export const CAPVER = "142";

/** A private key as tailscaled keeps it (`privkey:<hex>`, key.MachinePrivate/NodePrivate MarshalText). */
export const newPrivateKey = () => `privkey:${randomBytes(32).toString("hex")}`;

/** The public half the fake Headscale sees (`mkey:…` / `nodekey:…`), derived from the private marker. */
export function publicKey(kind: "mkey" | "nodekey", privateKey: string): string {
  return `${kind}:${createHash("sha256").update(privateKey).digest("hex")}`;
}

/** The identity tailscaled finds in its state: machine key and the current profile's node key. */
export interface StoredIdentity {
  machineKey: string;
  nodeKey: string;
  profile: string;
}

/** What tailscaled reads back from the state Secret (kubestore loadState); undefined: no (complete) state. */
export function readIdentity(secret: K8sObject | undefined): StoredIdentity | undefined {
  const machineKey = secretValue(secret, "_machinekey");
  const current = secretValue(secret, "_current-profile");
  if (!machineKey || !current) return undefined;
  const profile = secretValue(secret, current);
  if (!profile) return undefined;
  const nodeKey = (JSON.parse(profile) as { Persist?: { PrivateNodeKey?: string } }).Persist?.PrivateNodeKey;
  return nodeKey ? { machineKey, nodeKey, profile: current.slice("profile-".length) } : undefined;
}

export interface StateWrite {
  identity: StoredIdentity;
  loginServer: string;
  node: { id: string; givenName: string; ipv4: string; ipv6: string };
  baseDomain: string;
  /** hasKubeStateStore: containerboot's own keys are written only with patch (settings.go l.456). */
  containerbootKeys: boolean;
  /** TS_AUTH_ONCE with a kube store: `deleteAuthKey` removes a Secret-bound `authkey`. */
  deleteAuthKey: boolean;
}

const b64 = (s: string) => Buffer.from(s, "utf8").toString("base64");

/** The keys a booted pod leaves in its state Secret, written straight into the store. */
export function writeState(store: PodStore, namespace: string, secret: string, w: StateWrite): void {
  const live = of(store.objects(), "Secret", secret, namespace);
  const o: K8sObject = live
    ? structuredClone(live)
    : { apiVersion: "v1", kind: "Secret", metadata: { name: secret, namespace }, type: "Opaque" };
  const data: Record<string, string> = { ...((o.data as Record<string, string> | undefined) ?? {}) };
  const { identity, node } = w;
  const fqdn = `${node.givenName}.${w.baseDomain}.`;
  const profileKey = `profile-${identity.profile}`;
  data._machinekey = b64(identity.machineKey);
  data["_current-profile"] = b64(profileKey);
  data._profiles = b64(
    JSON.stringify({
      [identity.profile]: { ID: identity.profile, Name: fqdn.slice(0, -1), NodeID: node.id, ControlURL: w.loginServer },
    }),
  );
  data[profileKey] = b64(
    JSON.stringify({ ControlURL: w.loginServer, Persist: { PrivateNodeKey: identity.nodeKey, NodeID: node.id } }),
  );
  if (w.containerbootKeys) {
    data.tailscale_capver = b64(CAPVER);
    // Headscale's StableID is the decimal node id (hscontrol/types/node.go NodeID.StableID)
    data.device_id = b64(node.id);
    data.device_fqdn = b64(fqdn);
    data.device_ips = b64(JSON.stringify([node.ipv4, node.ipv6]));
  }
  if (w.deleteAuthKey) delete data.authkey;
  o.data = data;
  store.write(o);
}

/** `kubectl edit`: every key of the state Secret gone, the Secret itself kept. */
export function wipeStateSecret(store: PodStore, name: string, namespace: string): void {
  const live = of(store.objects(), "Secret", name, namespace);
  if (!live) throw new Error(`no Secret ${namespace}/${name}`);
  const o = structuredClone(live);
  delete o.data;
  delete o.stringData;
  store.write(o);
}
