/**
 * `render` as a CI gate: what `kubectl apply --validate=strict` would refuse, found before a cluster
 * sees it, every problem at once, each naming file, document index and field:
 *  - a tailnet.internal object of an unknown kind or apiVersion (the cluster has no such resource);
 *  - a kind render does not know in any other group (a typo, or a CRD it cannot check);
 *  - a built-in kind under the wrong apiVersion (`apiVersion: v1, kind: Deployment`);
 *  - fields the CRD schema does not declare (`spec.replica:`), which the apiserver's strict field
 *    validation refuses, and values the schema refuses (types, patterns, enums, required fields);
 *  - the same object in two documents (kubectl would apply one over the other).
 * The schemas are the CRDs' own (src/api/crd.ts), made strict: every object schema with declared
 * properties refuses undeclared ones, as the apiserver does for a structural schema with
 * `fieldValidation=Strict`.
 */
import type { ErrorObject, ValidateFunction } from "ajv";
import { newAjv } from "../api/ajv.js";
import { CRD_KINDS, crdFor } from "../api/crd.js";
import { API_VERSION, DNS1123_LABEL_PATTERN, DNS1123_SUBDOMAIN_PATTERN, GROUP, type Schema } from "../api/schemas.js";
import { fieldPath } from "../api/validate.js";
import type { InputDoc, Problem } from "./input.js";

const where = (index: number, item?: number) => `document ${index}${item === undefined ? "" : ` items[${item}]`}`;

export const formatProblem = (p: Problem): string =>
  p.index === undefined ? `${p.file}: ${p.message}` : `${p.file}: ${where(p.index, p.item)}: ${p.message}`;

const stringMap: Schema = { type: "object", additionalProperties: { type: "string" } };

/** ObjectMeta as a manifest may carry it (the fields kubectl would accept on apply). */
const objectMeta: Schema = {
  type: "object",
  required: ["name"],
  properties: {
    name: { type: "string", maxLength: 253, pattern: DNS1123_SUBDOMAIN_PATTERN },
    namespace: { type: "string", maxLength: 63, pattern: DNS1123_LABEL_PATTERN },
    generateName: { type: "string" },
    labels: stringMap,
    annotations: stringMap,
    finalizers: { type: "array", items: { type: "string" } },
    ownerReferences: { type: "array", items: { type: "object" } },
    uid: { type: "string" },
    resourceVersion: { type: "string" },
    generation: { type: "integer" },
    creationTimestamp: { type: ["string", "null"] },
    deletionTimestamp: { type: ["string", "null"] },
    deletionGracePeriodSeconds: { type: "integer" },
    managedFields: { type: "array", items: { type: "object" } },
    selfLink: { type: "string" },
  },
  additionalProperties: false,
};

/** Every object schema with declared properties refuses undeclared ones (strict field validation). */
function strict(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(strict);
  if (!schema || typeof schema !== "object") return schema;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(schema)) {
    out[k] =
      k === "properties" ? Object.fromEntries(Object.entries(v as Schema).map(([p, s]) => [p, strict(s)])) : strict(v);
  }
  if (out.properties && out.additionalProperties === undefined && !out["x-kubernetes-preserve-unknown-fields"]) {
    out.additionalProperties = false;
  }
  return out;
}

/** Built-in kinds render accepts: their apiVersion, and for those it reads, their top-level fields. */
const BUILTIN: Record<string, { apiVersion: string; fields?: string[] }> = {
  Secret: { apiVersion: "v1", fields: ["data", "stringData", "type", "immutable"] },
  ConfigMap: { apiVersion: "v1", fields: ["data", "binaryData", "immutable"] },
  Service: { apiVersion: "v1", fields: ["spec", "status"] },
  Pod: { apiVersion: "v1", fields: ["spec", "status"] },
  Namespace: { apiVersion: "v1" },
  ServiceAccount: { apiVersion: "v1" },
  PersistentVolumeClaim: { apiVersion: "v1" },
  Deployment: { apiVersion: "apps/v1" },
  StatefulSet: { apiVersion: "apps/v1" },
  DaemonSet: { apiVersion: "apps/v1" },
  ReplicaSet: { apiVersion: "apps/v1" },
  Job: { apiVersion: "batch/v1" },
  CronJob: { apiVersion: "batch/v1" },
  NetworkPolicy: { apiVersion: "networking.k8s.io/v1" },
  Ingress: { apiVersion: "networking.k8s.io/v1", fields: ["spec", "status"] },
  IngressClass: { apiVersion: "networking.k8s.io/v1", fields: ["spec"] },
  Role: { apiVersion: "rbac.authorization.k8s.io/v1" },
  RoleBinding: { apiVersion: "rbac.authorization.k8s.io/v1" },
  ClusterRole: { apiVersion: "rbac.authorization.k8s.io/v1" },
  ClusterRoleBinding: { apiVersion: "rbac.authorization.k8s.io/v1" },
  CustomResourceDefinition: { apiVersion: "apiextensions.k8s.io/v1" },
  CompositeController: { apiVersion: "metacontroller.k8s.io/v1alpha1" },
  // The Gateway API (docs/gateway-api.md): read by the class tailnet's decorators, their schema the CRDs' own.
  GatewayClass: { apiVersion: "gateway.networking.k8s.io/v1" },
  Gateway: { apiVersion: "gateway.networking.k8s.io/v1" },
  HTTPRoute: { apiVersion: "gateway.networking.k8s.io/v1" },
  GRPCRoute: { apiVersion: "gateway.networking.k8s.io/v1" },
  ReferenceGrant: { apiVersion: "gateway.networking.k8s.io/v1beta1" },
};

const builtinSchemas = new Map<string, ValidateFunction>();
const crSchemas = new Map<string, ValidateFunction>();
const ajv = newAjv({ strict: false, allErrors: true });

function crValidator(kind: string): ValidateFunction {
  let v = crSchemas.get(kind);
  if (!v) {
    const info = crdKindInfo(kind);
    if (!info) throw new Error(`no schema for ${kind}`);
    const crd = crdFor(info) as { spec: { versions: { schema: { openAPIV3Schema: Schema } }[] } };
    const root = structuredClone(crd.spec.versions[0].schema.openAPIV3Schema);
    (root.properties as Record<string, Schema>).metadata = {};
    const s = strict(root) as Schema;
    (s.properties as Record<string, Schema>).metadata = objectMeta;
    v = ajv.compile(s);
    crSchemas.set(kind, v);
  }
  return v;
}

function builtinValidator(kind: string, fields: string[]): ValidateFunction {
  let v = builtinSchemas.get(kind);
  if (!v) {
    const properties: Record<string, Schema> = {
      apiVersion: { type: "string" },
      kind: { type: "string" },
      metadata: objectMeta,
    };
    for (const f of fields) properties[f] = {};
    v = ajv.compile({ type: "object", properties, additionalProperties: false });
    builtinSchemas.set(kind, v);
  }
  return v;
}

function describe(e: ErrorObject): string {
  const at = fieldPath("", e.instancePath).replace(/^\./, "");
  const field = (child: string) => (at ? `${at}.${child}` : child);
  switch (e.keyword) {
    case "required":
      return `${field((e.params as { missingProperty: string }).missingProperty)}: required`;
    case "additionalProperties":
      return `${field((e.params as { additionalProperty: string }).additionalProperty)}: unknown field`;
    case "enum":
      return `${at}: must be one of ${(e.params as { allowedValues: unknown[] }).allowedValues.join(", ")}`;
    default:
      return `${at || "(object)"}: ${e.message ?? "invalid"}`;
  }
}

/** Levenshtein distance, for "did you mean" on kind names (short strings only). */
function distance(a: string, b: string): number {
  const d = Array.from({ length: a.length + 1 }, (_, i) => [i, ...Array<number>(b.length).fill(0)]);
  for (let j = 1; j <= b.length; j++) d[0][j] = j;
  for (let i = 1; i <= a.length; i++)
    for (let j = 1; j <= b.length; j++)
      d[i][j] = Math.min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1));
  return d[a.length][b.length];
}

function didYouMean(kind: string): string {
  const candidates = [...CRD_KINDS.map((k) => k.kind), ...Object.keys(BUILTIN)];
  const best = candidates
    .map((c) => ({ c, d: distance(kind.toLowerCase(), c.toLowerCase()) }))
    .sort((x, y) => x.d - y.d)[0];
  return best && best.d <= 3 ? ` (did you mean ${best.c}?)` : "";
}

const CR_KINDS = CRD_KINDS.map((k) => k.kind).join(", ");
const crdKindInfo = (kind: string) => CRD_KINDS.find((k) => k.kind === kind);

/** Problems of one document's object (kind, apiVersion, schema). */
export function objectProblems(doc: InputDoc): string[] {
  const { apiVersion, kind } = doc.object;
  const group = apiVersion.includes("/") ? apiVersion.slice(0, apiVersion.lastIndexOf("/")) : "";
  const info = crdKindInfo(kind);
  if (group === GROUP) {
    if (!info) return [`kind ${kind}: unknown kind in ${GROUP}${didYouMean(kind)}; this operator serves ${CR_KINDS}`];
    if (apiVersion !== API_VERSION)
      return [`apiVersion ${apiVersion}: unknown version of ${kind}; this operator serves ${API_VERSION}`];
  } else if (info) {
    return [`apiVersion ${apiVersion}: ${kind} is served as ${API_VERSION}`];
  }
  const namespaced = info
    ? info.scope === "Namespaced"
    : ["Secret", "ConfigMap", "Service", "Pod", "Gateway", "HTTPRoute", "GRPCRoute", "ReferenceGrant"].includes(kind);
  // kubectl would put it in the current context's namespace, which render cannot know.
  const noNamespace =
    namespaced && !doc.object.metadata.namespace
      ? [
          `${kind} ${doc.object.metadata.name}: metadata.namespace: required (kubectl would use the current context's namespace; render needs it written)`,
        ]
      : [];
  let validate: ValidateFunction;
  if (info) validate = crValidator(kind);
  else {
    const builtin = BUILTIN[kind];
    if (!builtin) {
      return [
        `kind ${kind}: unknown kind (${apiVersion})${didYouMean(kind)}; render reads ${CR_KINDS}, built-in Kubernetes kinds and the Gateway API's — point -f at the files holding your tailnet objects`,
      ];
    }
    if (apiVersion !== builtin.apiVersion)
      return [`apiVersion ${apiVersion}: ${kind} is served as ${builtin.apiVersion}`];
    if (!builtin.fields) return [];
    validate = builtinValidator(kind, builtin.fields);
  }
  const candidate: unknown = doc.object;
  if (validate(candidate)) return noNamespace;
  const name = doc.object.metadata.namespace
    ? `${doc.object.metadata.namespace}/${doc.object.metadata.name}`
    : doc.object.metadata.name;
  // One line per field: ajv may report the same field under several keywords (oneOf, type…).
  return [...noNamespace, ...[...new Set((validate.errors ?? []).map(describe))].map((m) => `${kind} ${name}: ${m}`)];
}

/** Every problem of every document, in input order, duplicates named on their second occurrence. */
export function validateDocs(docs: readonly InputDoc[]): Problem[] {
  const problems: Problem[] = [];
  const seen = new Map<string, InputDoc>();
  for (const doc of docs) {
    const own = objectProblems(doc);
    for (const message of own) problems.push({ file: doc.file, index: doc.index, item: doc.item, message });
    // An object of an unknown kind or version is not "the same object" as a valid one.
    if (own.some((m) => m.startsWith("kind ") || m.startsWith("apiVersion "))) continue;
    const { apiVersion, kind, metadata } = doc.object;
    const group = apiVersion.includes("/") ? apiVersion.slice(0, apiVersion.lastIndexOf("/")) : "";
    const key = `${group}|${kind}|${metadata.namespace ?? ""}|${metadata.name}`;
    const first = seen.get(key);
    if (first) {
      const name = metadata.namespace ? `${metadata.namespace}/${metadata.name}` : metadata.name;
      problems.push({
        file: doc.file,
        index: doc.index,
        item: doc.item,
        message: `${kind} ${name}: also defined in ${first.file} ${where(first.index, first.item)} (kubectl would apply one over the other)`,
      });
    } else seen.set(key, doc);
  }
  return problems;
}
