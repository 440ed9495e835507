/**
 * The API server's refusals of duplicate list entries (kubernetes pkg/apis/core/validation:
 * ValidateService's port names and port/protocol pairs, validateContainers' names,
 * validateContainerPorts' names, validateVolumes' names, validateVolumeMounts' mount paths), and of
 * updates to immutable fields (pkg/apis/apps/validation ValidateStatefulSetUpdate, pkg/apis/rbac/validation
 * ValidateRoleBindingUpdate, pkg/apis/core/validation ValidateSecretUpdate, kubernetes v1.35). The loop runs it
 * on every create and update, so a list Metacontroller's apply collapses into duplicates, or a changed
 * immutable field, is refused in tests as a real cluster refuses it.
 */
import { jsonEqual } from "../../k8s/json-equal.js";
import { isRecord } from "../../k8s/objects.js";

type Rec = Record<string, unknown>;
const list = (v: unknown): Rec[] => (Array.isArray(v) ? v.filter(isRecord) : []);

function duplicates(path: string, items: Rec[], field: (i: Rec) => unknown, what = "name"): string[] {
  const seen = new Set<string>();
  const out: string[] = [];
  items.forEach((item, i) => {
    const v = field(item);
    if (v === undefined || v === "") return;
    const k = JSON.stringify(v);
    if (seen.has(k)) out.push(`${path}[${i}].${what}: Duplicate value: ${k}`);
    seen.add(k);
  });
  return out;
}

function podSpecErrors(path: string, spec: Rec): string[] {
  const errs: string[] = [];
  errs.push(...duplicates(`${path}.volumes`, list(spec.volumes), (v) => v.name));
  for (const field of ["initContainers", "containers"]) {
    const containers = list(spec[field]);
    errs.push(...duplicates(`${path}.${field}`, containers, (c) => c.name));
    containers.forEach((c, i) => {
      const at = `${path}.${field}[${i}]`;
      errs.push(...duplicates(`${at}.ports`, list(c.ports), (p) => p.name));
      errs.push(...duplicates(`${at}.volumeMounts`, list(c.volumeMounts), (m) => m.mountPath, "mountPath"));
    });
  }
  return errs;
}

/** An object as the checks read it: kind, spec and the top-level fields some kinds keep outside spec. */
type Checked = { kind: string; spec?: unknown; type?: unknown; roleRef?: unknown; [field: string]: unknown };

/** The refusals of one object (an update when `existing` is given), each as the API server words the field error. */
export function apiServerErrors(o: Checked, existing?: Checked): string[] {
  return [...(existing ? immutableErrors(o, existing) : []), ...selectorErrors(o), ...listErrors(o)];
}

/** Go's json.Marshal of a map: keys sorted. */
const goMapJson = (m: Record<string, unknown>) =>
  JSON.stringify(Object.fromEntries(Object.entries(m).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))));

/**
 * ValidateStatefulSetSpec's selector rules (pkg/apis/apps/validation): a selector is required and not empty, and
 * it must match the template's labels (ValidatePodTemplateSpecForStatefulSet). matchLabels only: the operator
 * renders no matchExpressions.
 */
function selectorErrors(o: Checked): string[] {
  if (o.kind !== "StatefulSet") return [];
  const spec = isRecord(o.spec) ? o.spec : {};
  if (!isRecord(spec.selector)) return ["spec.selector: Required value"];
  const matchLabels = isRecord(spec.selector.matchLabels) ? spec.selector.matchLabels : {};
  const expressions = Array.isArray(spec.selector.matchExpressions) ? spec.selector.matchExpressions : [];
  if (Object.keys(matchLabels).length + expressions.length === 0) {
    return [`spec.selector: Invalid value: ${goMapJson(spec.selector)}: empty selector is invalid for statefulset`];
  }
  const template = isRecord(spec.template) ? spec.template : {};
  const labels = isRecord(template.metadata) && isRecord(template.metadata.labels) ? template.metadata.labels : {};
  if (Object.entries(matchLabels).every(([k, v]) => labels[k] === v)) return [];
  return [
    `spec.template.metadata.labels: Invalid value: ${goMapJson(labels)}: \`selector\` does not match template \`labels\``,
  ];
}

/**
 * The StatefulSet spec fields an update may change (ValidateStatefulSetUpdate): anything else, selector,
 * serviceName, podManagementPolicy and volumeClaimTemplates included, is one Forbidden error on `spec`.
 */
const STATEFULSET_MUTABLE = [
  "replicas",
  "ordinals",
  "template",
  "updateStrategy",
  "revisionHistoryLimit",
  "persistentVolumeClaimRetentionPolicy",
  "minReadySeconds",
];

function immutableErrors(o: Checked, existing: Checked): string[] {
  if (o.kind === "StatefulSet") {
    const fixed = (spec: unknown) =>
      Object.fromEntries(Object.entries(isRecord(spec) ? spec : {}).filter(([k]) => !STATEFULSET_MUTABLE.includes(k)));
    if (jsonEqual(fixed(o.spec), fixed(existing.spec))) return [];
    return [
      "spec: Forbidden: updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', 'updateStrategy', 'revisionHistoryLimit', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden",
    ];
  }
  if (o.kind === "RoleBinding") {
    const ref = (r: unknown) => {
      const v = isRecord(r) ? r : {};
      return { APIGroup: v.apiGroup ?? "", Kind: v.kind ?? "", Name: v.name ?? "" };
    };
    // field.Invalid renders the internal rbac.RoleRef as JSON (apimachinery field/errors.go ErrorBody)
    const now = ref(o.roleRef);
    if (jsonEqual(now, ref(existing.roleRef))) return [];
    return [`roleRef: Invalid value: ${JSON.stringify(now)}: cannot change roleRef`];
  }
  if (o.kind === "Secret") {
    // the API server defaults an unset type to Opaque (pkg/apis/core/v1/defaults.go SetDefaults_Secret)
    const type = (t: unknown) => (typeof t === "string" && t ? t : "Opaque");
    if (type(o.type) === type(existing.type)) return [];
    return [`type: Invalid value: ${JSON.stringify(type(o.type))}: field is immutable`];
  }
  return [];
}

function listErrors(o: Checked): string[] {
  const spec = isRecord(o.spec) ? o.spec : {};
  if (o.kind === "Service") {
    const ports = list(spec.ports);
    return [
      ...duplicates("spec.ports", ports, (p) => p.name),
      ...duplicates("spec.ports", ports, (p) => ({ port: p.port, protocol: p.protocol ?? "TCP" }), "port"),
    ];
  }
  if (o.kind === "Pod") return podSpecErrors("spec", spec);
  const template = isRecord(spec.template) ? spec.template : undefined;
  if (template && isRecord(template.spec)) return podSpecErrors("spec.template.spec", template.spec);
  return [];
}
