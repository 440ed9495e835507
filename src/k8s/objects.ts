/** Plain Kubernetes objects as Metacontroller sends them, and helpers to read its maps. */
export interface ObjectMeta {
  name: string;
  namespace?: string;
  uid?: string;
  generation?: number;
  resourceVersion?: string;
  creationTimestamp?: string;
  deletionTimestamp?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  ownerReferences?: { apiVersion: string; kind: string; name: string; uid: string; controller?: boolean }[];
}

export interface K8sObject {
  apiVersion: string;
  kind: string;
  metadata: ObjectMeta;
  [key: string]: unknown;
}

/** `<Kind>.<version>` or `<Kind>.<group>/<version>` → (`namespace/name` or `name`) → object. */
export type ObjectMaps = Record<string, Record<string, K8sObject>>;

/** The type key Metacontroller uses: `Pod.v1`, `Deployment.apps/v1`. */
export function typeKey(apiVersion: string, kind: string): string {
  return `${kind}.${apiVersion}`;
}

/** All objects of one type, sorted by namespace/name (keys may be v1 or v2 style; we read metadata). */
export function objectsOf(maps: ObjectMaps | undefined, apiVersion: string, kind: string): K8sObject[] {
  const group = maps?.[typeKey(apiVersion, kind)];
  if (!group) return [];
  return Object.values(group)
    .filter((o): o is K8sObject => !!o && typeof o === "object" && !!o.metadata)
    .sort((a, b) => qualifiedName(a).localeCompare(qualifiedName(b)));
}

export function qualifiedName(o: { metadata: ObjectMeta }): string {
  return o.metadata.namespace ? `${o.metadata.namespace}/${o.metadata.name}` : o.metadata.name;
}

/** One object by namespace and name (namespace undefined for cluster-scoped). */
export function findObject(
  maps: ObjectMaps | undefined,
  apiVersion: string,
  kind: string,
  name: string,
  namespace?: string,
): K8sObject | undefined {
  const group = maps?.[typeKey(apiVersion, kind)];
  if (!group) return undefined;
  const direct = group[namespace ? `${namespace}/${name}` : name] ?? group[name];
  if (
    direct &&
    direct.metadata?.name === name &&
    (namespace === undefined || direct.metadata.namespace === namespace)
  ) {
    return direct;
  }
  return Object.values(group).find(
    (o) => o?.metadata?.name === name && (namespace === undefined || o.metadata.namespace === namespace),
  );
}

export const LAST_APPLIED = "metacontroller.k8s.io/last-applied-configuration";

/**
 * The child as we last returned it, for when a failed observation means we must not rebuild it:
 * Metacontroller's last-applied annotation holds exactly that; without it we strip what the API
 * server owns (status, uid, resourceVersion, managedFields…).
 */
export function reuseObserved(child: K8sObject): K8sObject {
  const lastApplied = child.metadata.annotations?.[LAST_APPLIED];
  if (lastApplied) {
    try {
      const parsed = JSON.parse(lastApplied) as K8sObject;
      if (parsed && parsed.kind === child.kind && parsed.metadata?.name === child.metadata.name) {
        return { ...parsed, apiVersion: child.apiVersion, kind: child.kind };
      }
    } catch {
      // fall through to stripping
    }
  }
  const { status: _status, ...rest } = child;
  const meta = child.metadata;
  const annotations = { ...(meta.annotations ?? {}) };
  delete annotations[LAST_APPLIED];
  const metadata: ObjectMeta = { name: meta.name };
  if (meta.namespace) metadata.namespace = meta.namespace;
  if (meta.labels) metadata.labels = meta.labels;
  if (Object.keys(annotations).length) metadata.annotations = annotations;
  return { ...rest, metadata } as K8sObject;
}

/** Every observed child, reused unchanged (InvalidSpec and failed observations keep children). */
export function reuseAllChildren(children: ObjectMaps | undefined): K8sObject[] {
  const out: K8sObject[] = [];
  for (const key of Object.keys(children ?? {}).sort()) {
    for (const name of Object.keys(children?.[key] ?? {}).sort()) {
      const o = children?.[key]?.[name];
      if (o?.metadata?.name && !o.metadata.deletionTimestamp) out.push(reuseObserved(o));
    }
  }
  return out;
}

export function isRecord(v: unknown): v is Record<string, unknown> {
  return !!v && typeof v === "object" && !Array.isArray(v);
}

/** `v` when it is a plain object, else an empty one: for reading optional nested fields of untyped JSON. */
export function recordOf(v: unknown): Record<string, unknown> {
  return isRecord(v) ? v : {};
}
