/**
 * Every child any kind returns goes through validateChild in tests: the official schemas
 * (kubernetes-models) plus what they do not check — DNS names, label syntax, selector ⊆ template.
 */

import { Deployment, StatefulSet } from "kubernetes-models/apps/v1";
import { NetworkPolicy } from "kubernetes-models/networking.k8s.io/v1";
import { PodDisruptionBudget } from "kubernetes-models/policy/v1";
import { Role, RoleBinding } from "kubernetes-models/rbac.authorization.k8s.io/v1";
import { ConfigMap, Pod, Secret, Service, ServiceAccount } from "kubernetes-models/v1";
import { API_VERSION, kindInfoByKind } from "../../src/api/schemas.js";
import { validateSpec } from "../../src/api/validate.js";
import type { K8sObject } from "../../src/k8s/objects.js";
import { certificateProblem } from "./cert-manager.js";

const DNS1123_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const DNS1035_LABEL = /^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$/;
const LABEL_VALUE = /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/;
const LABEL_KEY =
  /^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$/;

type Model = { validate(): void };
const MODELS: Record<string, new (o: never) => Model> = {
  "apps/v1/Deployment": Deployment as never,
  "apps/v1/StatefulSet": StatefulSet as never,
  "rbac.authorization.k8s.io/v1/Role": Role as never,
  "rbac.authorization.k8s.io/v1/RoleBinding": RoleBinding as never,
  "v1/ConfigMap": ConfigMap as never,
  "v1/Secret": Secret as never,
  "v1/Service": Service as never,
  "v1/ServiceAccount": ServiceAccount as never,
  "v1/Pod": Pod as never,
  "networking.k8s.io/v1/NetworkPolicy": NetworkPolicy as never,
  "policy/v1/PodDisruptionBudget": PodDisruptionBudget as never,
};

function checkLabels(where: string, labels: Record<string, string> | undefined) {
  for (const [k, v] of Object.entries(labels ?? {})) {
    if (!LABEL_KEY.test(k) || k.length > 316) throw new Error(`${where}: invalid label key ${k}`);
    if (typeof v !== "string" || v.length > 63 || !LABEL_VALUE.test(v))
      throw new Error(`${where}: invalid label value ${k}=${v}`);
  }
}

export function validateChild(obj: K8sObject): void {
  const id = `${obj.kind} ${obj.metadata?.namespace ?? ""}/${obj.metadata?.name}`;
  // Our own kinds (a DecoratorController's attachments): the CRD schema the API server applies.
  const ours = obj.apiVersion === API_VERSION ? kindInfoByKind(obj.kind) : undefined;
  if (ours) {
    const problem = validateSpec(ours.hookKind, obj.spec);
    if (problem) throw new Error(`${id}: the CRD schema refuses it: ${problem}`);
    if (!DNS1123_SUBDOMAIN.test(obj.metadata.name)) throw new Error(`${id}: name is not a DNS-1123 subdomain`);
    checkLabels(id, obj.metadata.labels);
    return;
  }
  // cert-manager's Certificate (the cert-manager component): its CRD's own schema, from the pinned module
  if (obj.apiVersion === "cert-manager.io/v1" && obj.kind === "Certificate") {
    const problem = certificateProblem(obj);
    if (problem) throw new Error(`${id}: cert-manager's CRD schema refuses it: ${problem}`);
    if (!DNS1123_SUBDOMAIN.test(obj.metadata.name)) throw new Error(`${id}: name is not a DNS-1123 subdomain`);
    checkLabels(id, obj.metadata.labels);
    return;
  }
  const Model = MODELS[`${obj.apiVersion}/${obj.kind}`];
  if (!Model) throw new Error(`${id}: no model for ${obj.apiVersion} ${obj.kind}`);
  new Model(JSON.parse(JSON.stringify(obj)) as never).validate();
  const name = obj.metadata.name;
  if (!DNS1123_SUBDOMAIN.test(name) || name.length > 253) throw new Error(`${id}: name is not a DNS-1123 subdomain`);
  if (obj.kind === "Service" && (!DNS1035_LABEL.test(name) || name.length > 63)) {
    throw new Error(`${id}: Service name is not a DNS-1035 label`);
  }
  checkLabels(id, obj.metadata.labels);
  if (obj.kind === "StatefulSet" && name.length > 52) {
    // the controller-revision-hash label is the name plus 10 characters and must stay a label value
    throw new Error(`${id}: StatefulSet name longer than 52`);
  }
  if (obj.kind === "Deployment" || obj.kind === "StatefulSet") {
    const spec = obj.spec as {
      selector: { matchLabels?: Record<string, string> };
      template: { metadata?: { labels?: Record<string, string> } };
    };
    const tpl = spec.template.metadata?.labels ?? {};
    checkLabels(`${id} template`, tpl);
    for (const [k, v] of Object.entries(spec.selector.matchLabels ?? {})) {
      if (tpl[k] !== v) throw new Error(`${id}: selector ${k}=${v} does not match the pod template labels`);
    }
  }
  if (obj.kind === "Secret" || obj.kind === "ConfigMap") {
    const data = obj.data as Record<string, string> | undefined;
    for (const k of Object.keys(data ?? {})) {
      if (!/^[-._a-zA-Z0-9]+$/.test(k)) throw new Error(`${id}: invalid data key ${k}`);
    }
  }
}

export function validateChildren(children: readonly K8sObject[]): void {
  const seen = new Set<string>();
  for (const c of children) {
    validateChild(c);
    const key = `${c.apiVersion}/${c.kind}/${c.metadata.namespace ?? ""}/${c.metadata.name}`;
    if (seen.has(key)) throw new Error(`duplicate child ${key}`);
    seen.add(key);
  }
}
