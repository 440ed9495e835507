/**
 * The pod template hash every replica StatefulSet carries (gateway and agents). The operator stamps the hash of
 * the template it rendered into the template itself (TEMPLATE_HASH_ANNOTATION), so a sync compares stamps, never
 * the observed template (which carries the API server's defaults): a stamp that differs from the rendered one is a
 * pending rollout (staged-rollout.ts). The gateway's fresh writer also hashes the live template again: if the
 * result differs from its stamp, someone edited the live StatefulSet (kubectl edit/patch, a mutating webhook…)
 * and the gateway is no longer running what the operator rendered. A legitimate new rendering is not drift: its
 * stamp matches its content, and WorkloadCurrent reports the pending rollout.
 *
 * The API server fills defaults into every pod template (imagePullPolicy, terminationMessagePath,
 * probe timings, defaultMode…). Those values are stripped before hashing, on both sides, so a
 * defaulted template hashes like the rendered one; a changed default (e.g. imagePullPolicy: Always
 * where IfNotPresent was defaulted) is still a change. `kubectl rollout restart` only stamps a
 * restartedAt annotation, which is not drift either. Empty strings and empty lists or objects are
 * dropped too: the server omits them (`omitempty`), so they can never show up in a live template.
 */
import { createHash } from "node:crypto";
import { isRecord, type K8sObject } from "../../k8s/objects.js";
import { canonicalJson } from "../../policy/canonical.js";

export const TEMPLATE_HASH_ANNOTATION = "tailnet.internal/template-hash";
const RESTARTED_AT_ANNOTATION = "kubectl.kubernetes.io/restartedAt";

/** Field name → the value the API server defaults it to (k8s.io/kubernetes pkg/apis/core/v1/defaults.go). */
const SERVER_DEFAULTS: Record<string, unknown> = {
  terminationMessagePath: "/dev/termination-log",
  terminationMessagePolicy: "File",
  imagePullPolicy: "IfNotPresent",
  restartPolicy: "Always",
  dnsPolicy: "ClusterFirst",
  schedulerName: "default-scheduler",
  terminationGracePeriodSeconds: 30,
  enableServiceLinks: true,
  timeoutSeconds: 1,
  periodSeconds: 10,
  successThreshold: 1,
  failureThreshold: 3,
  scheme: "HTTP",
  protocol: "TCP",
  defaultMode: 420,
  creationTimestamp: null,
};

function strip(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(strip);
  if (!isRecord(value)) return value;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) {
    if (k in SERVER_DEFAULTS && SERVER_DEFAULTS[k] === v) continue;
    // String fields are `omitempty`: the server drops `value: ""` (e.g. TS_KUBE_SECRET).
    if (v === "") continue;
    // `serviceAccount` is the deprecated alias the API server copies from serviceAccountName.
    if (k === "serviceAccount" && v === value.serviceAccountName) continue;
    const s = strip(v);
    // Empty structs the server materialises (`resources: {}`, `securityContext: {}`, `emptyDir: {}`)
    // and empty lists it drops (omitempty) say nothing either way.
    if (isRecord(s) && Object.keys(s).length === 0) continue;
    if (Array.isArray(s) && s.length === 0) continue;
    out[k] = s;
  }
  return out;
}

/** The template without our stamp and without kubectl's restart marker, defaults stripped. */
export function normalizeTemplate(template: unknown): unknown {
  if (!isRecord(template)) return template;
  const meta = isRecord(template.metadata) ? { ...template.metadata } : {};
  if (isRecord(meta.annotations)) {
    const annotations = { ...meta.annotations };
    delete annotations[TEMPLATE_HASH_ANNOTATION];
    delete annotations[RESTARTED_AT_ANNOTATION];
    meta.annotations = annotations;
  }
  return strip({ ...template, metadata: meta });
}

/** 16 hex characters of sha256 over the canonical JSON of the normalized template. */
export function templateHash(template: unknown): string {
  return createHash("sha256")
    .update(canonicalJson(normalizeTemplate(template)))
    .digest("hex")
    .slice(0, 16);
}

/** The template with its own hash stamped in (what the operator renders). */
export function stampTemplate<T extends { metadata?: { annotations?: Record<string, string> } }>(template: T): T {
  const hash = templateHash(template);
  return {
    ...template,
    metadata: {
      ...(template.metadata ?? {}),
      annotations: { ...(template.metadata?.annotations ?? {}), [TEMPLATE_HASH_ANNOTATION]: hash },
    },
  };
}

/**
 * A workload (StatefulSet, Deployment) with its pod template stamped, after every change to the template (a
 * TailnetProxyClass is applied last): a stamp taken earlier would not match what runs.
 */
export function stampWorkload(workload: K8sObject): K8sObject {
  const spec = isRecord(workload.spec) ? workload.spec : {};
  if (!isRecord(spec.template)) return workload;
  return { ...workload, spec: { ...spec, template: stampTemplate(spec.template) } };
}

export function stampOf(template: unknown): string | undefined {
  if (!isRecord(template) || !isRecord(template.metadata) || !isRecord(template.metadata.annotations)) return undefined;
  const v = template.metadata.annotations[TEMPLATE_HASH_ANNOTATION];
  return typeof v === "string" ? v : undefined;
}

export type TemplateDrift =
  | { drifted: false; stamp: string }
  | { drifted: true; stamp?: string; observed: string; message: string };

/** Whether a live workload's (StatefulSet, legacy Deployment) pod template still hashes to its stamp. */
export function liveTemplateDrift(deployment: {
  kind?: string;
  metadata: { namespace?: string; name: string };
  spec?: unknown;
}): TemplateDrift {
  const template = isRecord(deployment.spec) ? deployment.spec.template : undefined;
  const stamp = stampOf(template);
  const observed = templateHash(template);
  const where = `${deployment.kind ?? "Deployment"} ${deployment.metadata.namespace ?? ""}/${deployment.metadata.name}`;
  if (!stamp) {
    return {
      drifted: true,
      observed,
      message: `${where} has no ${TEMPLATE_HASH_ANNOTATION} annotation on its pod template`,
    };
  }
  if (stamp !== observed) {
    return {
      drifted: true,
      stamp,
      observed,
      message: `the live pod template of ${where} was changed outside the operator (rendered hash ${stamp}, live template hashes to ${observed})`,
    };
  }
  return { drifted: false, stamp };
}
