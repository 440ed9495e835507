/**
 * Validation of everything the chart renders: built-in kinds against the official schemas
 * (kubernetes-models), the custom-resource kinds (Prometheus Operator, Grafana Operator,
 * Metacontroller) with structure checks of our own, since their schemas are not installed here.
 * Unknown kinds fail, so a new template cannot slip through unvalidated.
 */
import assert from "node:assert/strict";
import { CustomResourceDefinition } from "kubernetes-models/apiextensions.k8s.io/v1";
import { Deployment } from "kubernetes-models/apps/v1";
import { IngressClass, NetworkPolicy } from "kubernetes-models/networking.k8s.io/v1";
import { PodDisruptionBudget } from "kubernetes-models/policy/v1";
import { ClusterRole, ClusterRoleBinding, Role, RoleBinding } from "kubernetes-models/rbac.authorization.k8s.io/v1";
import { ConfigMap, Namespace, Secret, Service, ServiceAccount } from "kubernetes-models/v1";
import type { K8sObject } from "./helm.js";

type Model = { validate(): void };
const BUILT_IN: Record<string, new (o: never) => Model> = {
  "apps/v1/Deployment": Deployment as never,
  "v1/ConfigMap": ConfigMap as never,
  "v1/Namespace": Namespace as never,
  "v1/Secret": Secret as never,
  "v1/Service": Service as never,
  "v1/ServiceAccount": ServiceAccount as never,
  "networking.k8s.io/v1/NetworkPolicy": NetworkPolicy as never,
  "networking.k8s.io/v1/IngressClass": IngressClass as never,
  "policy/v1/PodDisruptionBudget": PodDisruptionBudget as never,
  "rbac.authorization.k8s.io/v1/ClusterRole": ClusterRole as never,
  "rbac.authorization.k8s.io/v1/ClusterRoleBinding": ClusterRoleBinding as never,
  "rbac.authorization.k8s.io/v1/Role": Role as never,
  "rbac.authorization.k8s.io/v1/RoleBinding": RoleBinding as never,
  "apiextensions.k8s.io/v1/CustomResourceDefinition": CustomResourceDefinition as never,
};

const DURATION = /^(\d+(ms|s|m|h))+$/;
const LABEL_KEY =
  /^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$/;
const LABEL_VALUE = /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/;

type Plain = Record<string, unknown>;
const obj = (v: unknown, where: string): Plain => {
  assert.ok(v && typeof v === "object" && !Array.isArray(v), `${where} must be an object`);
  return v as Plain;
};
const arr = (v: unknown, where: string): unknown[] => {
  assert.ok(Array.isArray(v), `${where} must be a list`);
  return v;
};
const str = (v: unknown, where: string): string => {
  assert.equal(typeof v, "string", `${where} must be a string`);
  assert.ok((v as string).length > 0, `${where} must not be empty`);
  return v as string;
};

function checkSelector(sel: unknown, where: string): void {
  const s = obj(sel, where);
  for (const [k, v] of Object.entries(obj(s.matchLabels ?? {}, `${where}.matchLabels`))) {
    assert.match(k, LABEL_KEY, `${where}: label key ${k}`);
    assert.match(String(v), LABEL_VALUE, `${where}: label value ${k}=${v}`);
  }
  for (const [i, e] of arr(s.matchExpressions ?? [], `${where}.matchExpressions`).entries()) {
    const m = obj(e, `${where}.matchExpressions[${i}]`);
    str(m.key, `${where}.matchExpressions[${i}].key`);
    assert.ok(["In", "NotIn", "Exists", "DoesNotExist"].includes(String(m.operator)), `${where}: operator`);
  }
  assert.ok(s.matchLabels || s.matchExpressions, `${where} selects nothing`);
}

function checkServiceMonitor(o: K8sObject): void {
  assert.equal(o.apiVersion, "monitoring.coreos.com/v1");
  const spec = obj(o.spec, "spec");
  checkSelector(spec.selector, "spec.selector");
  const endpoints = arr(spec.endpoints, "spec.endpoints");
  assert.ok(endpoints.length > 0, "spec.endpoints is empty");
  for (const [i, e] of endpoints.entries()) {
    const ep = obj(e, `spec.endpoints[${i}]`);
    str(ep.port, `spec.endpoints[${i}].port`);
    assert.match(str(ep.path, `spec.endpoints[${i}].path`), /^\//);
    assert.match(str(ep.interval, `spec.endpoints[${i}].interval`), DURATION);
  }
}

function checkPodMonitor(o: K8sObject): void {
  assert.equal(o.apiVersion, "monitoring.coreos.com/v1");
  const spec = obj(o.spec, "spec");
  checkSelector(spec.selector, "spec.selector");
  obj(spec.namespaceSelector, "spec.namespaceSelector");
  const endpoints = arr(spec.podMetricsEndpoints, "spec.podMetricsEndpoints");
  assert.ok(endpoints.length > 0, "spec.podMetricsEndpoints is empty");
  for (const [i, e] of endpoints.entries()) {
    const ep = obj(e, `spec.podMetricsEndpoints[${i}]`);
    assert.match(str(ep.port, `spec.podMetricsEndpoints[${i}].port`), /^[a-z0-9]([-a-z0-9]{0,13}[a-z0-9])?$/);
    assert.match(str(ep.path, `spec.podMetricsEndpoints[${i}].path`), /^\//);
    assert.match(str(ep.interval, `spec.podMetricsEndpoints[${i}].interval`), DURATION);
  }
}

function checkPrometheusRule(o: K8sObject): void {
  assert.equal(o.apiVersion, "monitoring.coreos.com/v1");
  const groups = arr(obj(o.spec, "spec").groups, "spec.groups");
  assert.ok(groups.length > 0, "spec.groups is empty");
  const groupNames = new Set<string>();
  for (const [i, g] of groups.entries()) {
    const group = obj(g, `spec.groups[${i}]`);
    const name = str(group.name, `spec.groups[${i}].name`);
    assert.ok(!groupNames.has(name), `duplicate group ${name}`);
    groupNames.add(name);
    for (const [j, r] of arr(group.rules, `spec.groups[${i}].rules`).entries()) {
      const rule = obj(r, `spec.groups[${i}].rules[${j}]`);
      assert.ok(Boolean(rule.alert) !== Boolean(rule.record), `${name}[${j}]: exactly one of alert and record`);
      str(rule.expr, `${name}[${j}].expr`);
      if (rule.for !== undefined) assert.match(String(rule.for), DURATION);
      for (const [k, v] of Object.entries(obj(rule.labels ?? {}, "labels"))) assert.equal(typeof v, "string", k);
      for (const [k, v] of Object.entries(obj(rule.annotations ?? {}, "annotations")))
        assert.equal(typeof v, "string", k);
    }
  }
}

function checkGrafanaDashboard(o: K8sObject): void {
  assert.equal(o.apiVersion, "grafana.integreatly.org/v1beta1");
  const spec = obj(o.spec, "spec");
  checkSelector(spec.instanceSelector, "spec.instanceSelector");
  const dashboard = obj(JSON.parse(str(spec.json, "spec.json")), "spec.json");
  str(dashboard.title, "dashboard title");
  arr(dashboard.panels, "dashboard panels");
}

const HOOKS = ["customize", "sync", "finalize"];
const METHODS = ["OnDelete", "Recreate", "InPlace", "RollingRecreate", "RollingInPlace"];

function checkCompositeController(o: K8sObject): void {
  assert.equal(o.apiVersion, "metacontroller.k8s.io/v1alpha1");
  assert.equal(o.metadata.namespace, undefined, "CompositeController is cluster-scoped");
  const spec = obj(o.spec, "spec");
  assert.equal(spec.generateSelector, true);
  assert.ok(Number.isInteger(spec.resyncPeriodSeconds) && (spec.resyncPeriodSeconds as number) > 0);
  const parent = obj(spec.parentResource, "spec.parentResource");
  assert.equal(parent.apiVersion, "tailnet.internal/v1alpha1");
  assert.match(str(parent.resource, "spec.parentResource.resource"), /^tailnet[a-z]*s$/);
  for (const [i, c] of arr(spec.childResources, "spec.childResources").entries()) {
    const child = obj(c, `spec.childResources[${i}]`);
    str(child.apiVersion, `spec.childResources[${i}].apiVersion`);
    assert.match(str(child.resource, `spec.childResources[${i}].resource`), /^[a-z]+$/);
    assert.ok(METHODS.includes(String(obj(child.updateStrategy, "updateStrategy").method)));
  }
  const hooks = obj(spec.hooks, "spec.hooks");
  assert.deepEqual(Object.keys(hooks).sort(), [...HOOKS].sort());
  for (const name of HOOKS) {
    const hook = obj(hooks[name], `spec.hooks.${name}`);
    assert.equal(hook.version, "v2");
    const webhook = obj(hook.webhook, `spec.hooks.${name}.webhook`);
    // url (the chart) or service + path (kustomize, so overlays can move it); Metacontroller calls
    // http://<name>.<namespace>:<port><path> for the latter (pkg/hooks/webhook.go webhookURL)
    let url: string;
    if (webhook.url !== undefined) {
      assert.equal(webhook.service, undefined, "webhook: url and service together");
      url = str(webhook.url, "webhook.url");
    } else {
      const service = obj(webhook.service, "webhook.service");
      assert.deepEqual(Object.keys(service).sort(), ["name", "namespace", "port"], "webhook.service");
      url = `http://${str(service.name, "webhook.service.name")}.${str(service.namespace, "webhook.service.namespace")}:${service.port}${str(webhook.path, "webhook.path")}`;
    }
    assert.match(url, /^http:\/\/tailnet-operator\.[a-z0-9-]+:8080\/hooks\/[a-z]+\/[a-z]+$/);
    assert.ok(url.endsWith(`/${name}`), `${name} hook calls ${url}`);
    assert.match(str(webhook.timeout, "webhook.timeout"), DURATION);
    if (webhook.authorization !== undefined) {
      const auth = obj(webhook.authorization, "webhook.authorization");
      assert.equal(auth.type, "Bearer");
      const ref = obj(auth.secretRef, "webhook.authorization.secretRef");
      for (const k of ["name", "namespace", "key"]) str(ref[k], `secretRef.${k}`);
    }
  }
}

/**
 * The annotated-Service controllers: core Services selected by annotation (all three hooks, a resync
 * period); the LoadBalancer-class controller (every Service) and the Ingress-class controller (every
 * Ingress): no finalize hook — else every object of the cluster would get Metacontroller's finalizer.
 * The LoadBalancer one has no resync period either, which would call the hook for every Service.
 * Our kinds attached in place.
 */
function checkDecoratorController(o: K8sObject): void {
  assert.equal(o.apiVersion, "metacontroller.k8s.io/v1alpha1");
  assert.equal(o.metadata.namespace, undefined, "DecoratorController is cluster-scoped");
  if (o.metadata.name.includes("-gatewayapi-")) {
    checkGatewayApiController(o);
    return;
  }
  const spec = obj(o.spec, "spec");
  const ingressClass = o.metadata.name.endsWith("-ingress-class");
  const resources = arr(spec.resources, "spec.resources");
  const selected = resources.some((r) => obj(r, "resource").annotationSelector !== undefined);
  if (selected || ingressClass)
    assert.ok(Number.isInteger(spec.resyncPeriodSeconds) && (spec.resyncPeriodSeconds as number) > 0);
  else assert.equal(spec.resyncPeriodSeconds, undefined, "no resync period over every Service");
  for (const [i, r] of resources.entries()) {
    const res = obj(r, `spec.resources[${i}]`);
    if (ingressClass) {
      // selects every Ingress (the class is a spec field): so it must have no finalize hook, which
      // would put Metacontroller's finalizer on Ingresses of every class
      assert.deepEqual(res, { apiVersion: "networking.k8s.io/v1", resource: "ingresses" });
      continue;
    }
    assert.deepEqual([res.apiVersion, res.resource], ["v1", "services"]);
    if (!selected) continue;
    const sel = obj(res.annotationSelector, `spec.resources[${i}].annotationSelector`);
    assert.ok(sel.matchAnnotations !== undefined || sel.matchExpressions !== undefined, "annotationSelector is empty");
  }
  for (const [i, a] of arr(spec.attachments, "spec.attachments").entries()) {
    const att = obj(a, `spec.attachments[${i}]`);
    assert.equal(att.apiVersion, "tailnet.internal/v1alpha1");
    assert.match(str(att.resource, `spec.attachments[${i}].resource`), /^tailnet(ingresses|egresses)$/);
    assert.equal(obj(att.updateStrategy, "updateStrategy").method, "InPlace");
  }
  const hooks = obj(spec.hooks, "spec.hooks");
  const want = selected ? HOOKS : HOOKS.filter((h) => h !== "finalize");
  assert.deepEqual(Object.keys(hooks).sort(), [...want].sort());
  for (const name of want) {
    const hook = obj(hooks[name], `spec.hooks.${name}`);
    assert.equal(hook.version, "v2");
    const webhook = obj(hook.webhook, `spec.hooks.${name}.webhook`);
    const url =
      webhook.url !== undefined
        ? str(webhook.url, "webhook.url")
        : `http://${str(obj(webhook.service, "webhook.service").name, "name")}.${str(obj(webhook.service, "webhook.service").namespace, "namespace")}:${obj(webhook.service, "webhook.service").port}${str(webhook.path, "webhook.path")}`;
    const role = ingressClass ? "ingress-class" : selected ? "service-(expose|target)" : "service-loadbalancer";
    assert.match(url, new RegExp(`^http://tailnet-operator\\.[a-z0-9-]+:8080/hooks/${role}/${name}$`));
    assert.match(str(webhook.timeout, "webhook.timeout"), DURATION);
  }
}

/**
 * The Gateway API class's controllers (docs/gateway-api.md): each over every object of one Gateway API resource,
 * a resync period, customize and sync only (a finalize hook would put Metacontroller's finalizer on every
 * Gateway and route of every class); only the Gateway's has an attachment, a TailnetIngress updated in place.
 */
const GATEWAY_API_RESOURCES: Record<string, string> = {
  class: "gatewayclasses",
  gateway: "gateways",
  httproute: "httproutes",
  grpcroute: "grpcroutes",
};
function checkGatewayApiController(o: K8sObject): void {
  const role = o.metadata.name.replace(/^.*-gatewayapi-/, "");
  const spec = obj(o.spec, "spec");
  assert.ok(Number.isInteger(spec.resyncPeriodSeconds) && (spec.resyncPeriodSeconds as number) > 0);
  assert.deepEqual(spec.resources, [
    { apiVersion: "gateway.networking.k8s.io/v1", resource: GATEWAY_API_RESOURCES[role] },
  ]);
  const attachments =
    role === "gateway"
      ? [
          {
            apiVersion: "tailnet.internal/v1alpha1",
            resource: "tailnetingresses",
            updateStrategy: { method: "InPlace" },
          },
        ]
      : undefined;
  assert.deepEqual(spec.attachments, attachments);
  const hooks = obj(spec.hooks, "spec.hooks");
  assert.deepEqual(Object.keys(hooks).sort(), ["customize", "sync"]);
  for (const name of ["customize", "sync"]) {
    const webhook = obj(obj(hooks[name], `spec.hooks.${name}`).webhook, "webhook");
    assert.match(
      str(webhook.url, "webhook.url"),
      new RegExp(`^http://tailnet-operator\\.[a-z0-9-]+:8080/hooks/gatewayapi-${role}/${name}$`),
    );
  }
}

function checkGatewayClass(o: K8sObject): void {
  assert.equal(o.apiVersion, "gateway.networking.k8s.io/v1");
  assert.equal(o.metadata.namespace, undefined, "GatewayClass is cluster-scoped");
  assert.equal(obj(o.spec, "spec").controllerName, "tailnet.internal/gateway-controller");
}

const CUSTOM: Record<string, (o: K8sObject) => void> = {
  GatewayClass: checkGatewayClass,
  ServiceMonitor: checkServiceMonitor,
  PodMonitor: checkPodMonitor,
  PrometheusRule: checkPrometheusRule,
  GrafanaDashboard: checkGrafanaDashboard,
  CompositeController: checkCompositeController,
  DecoratorController: checkDecoratorController,
};

/** Validates one rendered object; throws naming the object and the problem. */
export function validateObject(o: K8sObject): void {
  const id = `${o.kind} ${o.metadata?.namespace ?? ""}/${o.metadata?.name}`;
  try {
    assert.match(o.metadata.name, /^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/, "name is a DNS-1123 subdomain");
    for (const [k, v] of Object.entries(o.metadata.labels ?? {})) {
      assert.match(k, LABEL_KEY, `label key ${k}`);
      assert.match(String(v), LABEL_VALUE, `label value ${k}=${v}`);
    }
    const Model = BUILT_IN[`${o.apiVersion}/${o.kind}`];
    if (Model) new Model(JSON.parse(JSON.stringify(o)) as never).validate();
    else if (CUSTOM[o.kind]) CUSTOM[o.kind](o);
    else assert.fail(`no validation for ${o.apiVersion} ${o.kind}`);
  } catch (e) {
    throw new Error(`${id}: ${(e as Error).message}`);
  }
}
