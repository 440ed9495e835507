/**
 * The Helm chart: `helm lint --strict` and `helm template` for each documented way to install
 * it, every rendered object validated, and the operator workload as the architecture asks
 * (non-root, read-only root filesystem, no capabilities, probes, resources, least privilege).
 */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import { operatorPodEnv } from "../../bench/pod-runtime.js";
import { HOOK_KINDS } from "../../src/api/schemas.js";
import { chartDir, find, helm, type K8sObject, renderChart, templateArgs } from "./helm.js";
import { SCENARIOS } from "./scenarios.js";
import { validateObject } from "./validate.js";

const BASE_OBJECTS = [
  "ClusterRole/tailnet-operator",
  "ClusterRole/tailnet-operator-metacontroller-identity",
  "ClusterRole/tailnet-operator-metacontroller-ingresses",
  "ClusterRole/tailnet-operator-metacontroller-services",
  "ClusterRole/tailnet-operator-authkeys-edit",
  "ClusterRole/tailnet-operator-authkeys-view",
  "ClusterRole/tailnet-operator-view",
  "ClusterRole/tailnet-operator-workloads-edit",
  "ClusterRoleBinding/tailnet-operator",
  "CompositeController/tailnet-operator-authkey",
  "CompositeController/tailnet-operator-egress",
  "CompositeController/tailnet-operator-gateway",
  "CompositeController/tailnet-operator-ingress",
  "CompositeController/tailnet-operator-site",
  "CompositeController/tailnet-operator-tailnet",
  "CompositeController/tailnet-operator-user",
  "ConfigMap/tailnet-operator-config",
  "DecoratorController/tailnet-operator-ingress-class",
  "DecoratorController/tailnet-operator-service-expose",
  "DecoratorController/tailnet-operator-service-loadbalancer",
  "DecoratorController/tailnet-operator-service-target",
  "Deployment/tailnet-operator",
  "IngressClass/tailnet",
  // on by default: operator isolation and the generated hook token
  "NetworkPolicy/tailnet-operator",
  "PodDisruptionBudget/tailnet-operator",
  "Secret/tailnet-operator-hook-token",
  "Service/tailnet-operator",
  "ServiceAccount/tailnet-operator",
];

const EXTRA_OBJECTS: Record<string, string[]> = {
  defaults: [],
  "everything enabled": [
    "GrafanaDashboard/tailnet-operator",
    "PodMonitor/tailnet-agents",
    "PrometheusRule/tailnet-operator",
    "ServiceMonitor/tailnet-operator",
  ],
  "ConfigMap dashboard": ["ConfigMap/tailnet-operator-dashboard"],
  "custom rule groups": ["PrometheusRule/tailnet-operator"],
  "scrapeFrom with namespace and pod selectors": ["PodMonitor/tailnet-agents"],
  "existing hook token Secret": [],
  "Gateway API class": [
    "ClusterRole/tailnet-operator-metacontroller-gateway-api",
    "DecoratorController/tailnet-operator-gatewayapi-class",
    "DecoratorController/tailnet-operator-gatewayapi-gateway",
    "DecoratorController/tailnet-operator-gatewayapi-grpcroute",
    "DecoratorController/tailnet-operator-gatewayapi-httproute",
    "GatewayClass/tailnet",
  ],
  "kube-api impersonation": [
    "ClusterRole/tailnet-operator-kube-api-impersonator",
    "ClusterRoleBinding/tailnet-operator-kube-api-impersonator",
  ],
  "records readers": [
    "Role/tailnet-operator-records-reader",
    "RoleBinding/tailnet-operator-records-reader",
    "Secret/tailnet-records-reader-token",
    "ServiceAccount/tailnet-records-reader",
  ],
};
// the existing Secret is the user's: the chart writes none
const MISSING_OBJECTS: Record<string, string[]> = {
  "existing hook token Secret": ["Secret/tailnet-operator-hook-token"],
};

const ids = (objects: K8sObject[]) => objects.map((o) => `${o.kind}/${o.metadata.name}`).sort();

describe("helm chart scenarios", () => {
  for (const [name, values] of Object.entries(SCENARIOS)) {
    describe(name, () => {
      it("passes helm lint --strict", () => {
        const args = templateArgs(values).slice(3); // drop "template <release> <chart>"
        const out = helm(["lint", chartDir, "--strict", ...args]);
        assert.match(out, /1 chart\(s\) linted, 0 chart\(s\) failed/);
      });

      it("renders exactly the expected objects, each one valid", () => {
        const objects = renderChart(values);
        const missing = MISSING_OBJECTS[name] ?? [];
        assert.deepEqual(
          ids(objects),
          [...BASE_OBJECTS.filter((o) => !missing.includes(o)), ...EXTRA_OBJECTS[name]].sort(),
        );
        for (const o of objects) validateObject(o);
        for (const o of objects) {
          const clusterScoped = [
            "ClusterRole",
            "ClusterRoleBinding",
            "CompositeController",
            "DecoratorController",
            "IngressClass",
            "GatewayClass",
          ].includes(o.kind);
          assert.equal(o.metadata.namespace, clusterScoped ? undefined : "tailnet-system", `${o.kind} namespace`);
        }
      });
    });
  }

  it("validates the CRDs it ships with --include-crds", () => {
    const crds = renderChart({}, { includeCrds: true }).filter((o) => o.kind === "CustomResourceDefinition");
    assert.deepEqual(crds.map((c) => c.metadata.name).sort(), [
      "tailnetauthkeys.tailnet.internal",
      "tailnetegresses.tailnet.internal",
      "tailnetgateways.tailnet.internal",
      "tailnetingresses.tailnet.internal",
      "tailnetproxyclasses.tailnet.internal",
      "tailnets.tailnet.internal",
      "tailnetsites.tailnet.internal",
      "tailnetusers.tailnet.internal",
    ]);
    for (const crd of crds) validateObject(crd);
  });

  it("validation rejects a broken object (it can fail)", () => {
    const service = find(renderChart(), "Service", "tailnet-operator");
    const broken = { ...service, spec: { ...(service.spec as object), ports: [{ name: "http", port: "eighty" }] } };
    assert.throws(() => validateObject(broken), /Service tailnet-system\/tailnet-operator/);
    const cc = find(renderChart(), "CompositeController", "tailnet-operator-site");
    const noHooks = { ...cc, spec: { ...(cc.spec as object), hooks: {} } };
    assert.throws(() => validateObject(noHooks), /CompositeController/);
  });

  it("rejects values the schema forbids, naming the field", () => {
    assert.throws(
      () => renderChart({ monitoring: { dashboard: { enabled: true, kind: "Grafana" } } }),
      /monitoring\/dashboard\/kind/,
    );
    assert.throws(() => renderChart({ monitoring: { serviceMonitor: { enable: true } } }), /enable/);
    assert.throws(() => renderChart({ hookToken: { value: "short" } }), /hookToken\/value/);
  });

  it("rejects a misspelt top-level value instead of installing without it", () => {
    // Before: `hookTokn:` installed with no token, `monitorng:` without alerts, both with exit 0.
    for (const typo of ["hookTokn", "monitorng", "replicas"]) {
      assert.throws(
        () => renderChart({ [typo]: { value: "0123456789abcdef" } }),
        new RegExp(`at '': additional properties '${typo}' not allowed`),
      );
    }
    // Every object in the schema that lists its properties refuses others (nested typos too).
    const schema = JSON.parse(readFileSync(join(chartDir, "values.schema.json"), "utf8")) as Record<string, unknown>;
    const open: string[] = [];
    const walk = (node: unknown, path: string) => {
      if (!node || typeof node !== "object") return;
      const n = node as { properties?: Record<string, unknown>; additionalProperties?: unknown; items?: unknown };
      if (n.properties) {
        if (n.additionalProperties !== false) open.push(path || "(top level)");
        for (const [k, v] of Object.entries(n.properties)) walk(v, `${path}.${k}`);
      }
      if (n.items) walk(n.items, `${path}[]`);
    };
    walk(schema, "");
    for (const [name, def] of Object.entries((schema.definitions ?? {}) as Record<string, unknown>))
      walk(def, `#${name}`);
    // A Prometheus rule group has fields of Prometheus's own (interval, limit, labels, query_offset…):
    // left open on purpose, it is passed through as written.
    assert.deepEqual(open, [".monitoring.rules.groups[]"]);
    // Helm's own `global` (set by a parent chart) stays allowed.
    assert.doesNotThrow(() => renderChart({ global: { imageRegistry: "registry.example.com" } }));
  });
});

type Container = {
  name: string;
  args: string[];
  env?: Array<{ name: string; valueFrom?: Record<string, Record<string, unknown>> }>;
  ports: Array<{ name: string; containerPort: number }>;
  livenessProbe: { httpGet: { path: string; port: string } };
  readinessProbe: { httpGet: { path: string; port: string } };
  resources: { requests?: Record<string, string>; limits?: Record<string, string> };
  securityContext: Record<string, unknown>;
};
type PodSpec = { serviceAccountName: string; securityContext: Record<string, unknown>; containers: Container[] };
const podSpec = (objects: K8sObject[]) =>
  (find(objects, "Deployment", "tailnet-operator").spec as { template: { spec: PodSpec } }).template.spec;

describe("operator workload", () => {
  const objects = renderChart();
  const pod = podSpec(objects);
  const [container] = pod.containers;

  it("runs non-root with a read-only root filesystem and no capabilities", () => {
    assert.equal(pod.securityContext.runAsNonRoot, true);
    assert.deepEqual(pod.securityContext.seccompProfile, { type: "RuntimeDefault" });
    assert.equal(container.securityContext.readOnlyRootFilesystem, true);
    assert.equal(container.securityContext.allowPrivilegeEscalation, false);
    assert.deepEqual(container.securityContext.capabilities, { drop: ["ALL"] });
  });

  it("serves hooks, probes and metrics on port http 8080 with resources set", () => {
    assert.deepEqual(container.args, ["serve", "--config", "/etc/tailnet-operator/config.yaml"]);
    assert.deepEqual(
      container.ports.map((p) => [p.name, p.containerPort]),
      [["http", 8080]],
    );
    assert.deepEqual(container.livenessProbe.httpGet, { path: "/healthz", port: "http" });
    assert.deepEqual(container.readinessProbe.httpGet, { path: "/readyz", port: "http" });
    assert.ok(container.resources.requests?.cpu && container.resources.requests.memory);
    assert.ok(container.resources.limits?.memory);
    const service = find(objects, "Service", "tailnet-operator").spec as {
      selector: Record<string, string>;
      ports: Array<{ name: string; port: number; targetPort: string }>;
    };
    assert.deepEqual(service.ports, [{ name: "http", port: 8080, targetPort: "http", protocol: "TCP" }]);
    assert.deepEqual(service.selector, {
      "app.kubernetes.io/name": "tailnet-operator",
      "app.kubernetes.io/component": "operator",
    });
  });

  it("gets its namespace from the pod and the hook token from the generated Secret unless told otherwise", () => {
    assert.deepEqual(container.env, [
      { name: "OPERATOR_NAMESPACE", valueFrom: { fieldRef: { fieldPath: "metadata.namespace" } } },
      { name: "HOOK_TOKEN", valueFrom: { secretKeyRef: { name: "tailnet-operator-hook-token", key: "token" } } },
      // the runtime the kustomize base sets and the benches measure (bench/pod-runtime.ts): the same values
      ...Object.entries(operatorPodEnv()).map(([name, value]) => ({ name, value })),
    ]);
    // the explicit opt-out: no Secret, no authorization, and the server told so (it logs a warning)
    const open = renderChart({ hookToken: { generate: false } });
    assert.equal(
      open.find((o) => o.kind === "Secret"),
      undefined,
    );
    assert.deepEqual(podSpec(open).containers[0].env?.[1], { name: "ALLOW_UNAUTHENTICATED_HOOKS", value: "true" });
    // webhook.authorization itself (a gateway's child types name rbac.authorization.k8s.io, which is no token)
    const hooks = (objects: K8sObject[]) =>
      objects
        .filter((o) => o.kind === "CompositeController" || o.kind === "DecoratorController")
        .flatMap((cc) =>
          Object.entries((cc.spec as { hooks: Record<string, { webhook: Record<string, unknown> }> }).hooks).map(
            ([hook, h]) => [`${cc.metadata.name} ${hook}`, h.webhook.authorization !== undefined] as const,
          ),
        );
    const opened = hooks(open);
    assert.ok(opened.length > 0);
    assert.deepEqual(
      opened.filter(([, has]) => has),
      [],
    );
    const guarded = hooks(renderChart());
    assert.deepEqual(
      guarded.filter(([, has]) => !has),
      [],
      "the default render names the token on every hook",
    );
    const withToken = podSpec(renderChart(SCENARIOS["existing hook token Secret"])).containers[0];
    assert.deepEqual(withToken.env?.[1], {
      name: "HOOK_TOKEN",
      valueFrom: { secretKeyRef: { name: "metacontroller-hook", key: "bearer" } },
    });
  });

  it("may only write Events; workloads are editable by namespace editors, the rest only viewable", () => {
    const rules = (name: string) =>
      (find(objects, "ClusterRole", name).rules as Array<{
        apiGroups: string[];
        resources: string[];
        verbs: string[];
      }>) ?? [];
    for (const rule of rules("tailnet-operator")) {
      assert.deepEqual(rule.resources, ["events"]);
      assert.deepEqual(rule.verbs, ["create", "patch"]);
    }
    const edit = find(objects, "ClusterRole", "tailnet-operator-workloads-edit");
    assert.equal(edit.metadata.labels?.["rbac.authorization.k8s.io/aggregate-to-edit"], "true");
    const writable = rules("tailnet-operator-workloads-edit").filter((r) => r.verbs.includes("create"));
    assert.deepEqual(
      writable.flatMap((r) => r.resources),
      ["tailnetegresses", "tailnetingresses"],
    );
    const view = find(objects, "ClusterRole", "tailnet-operator-view");
    assert.equal(view.metadata.labels?.["rbac.authorization.k8s.io/aggregate-to-view"], "true");
    assert.equal(view.metadata.labels?.["rbac.authorization.k8s.io/aggregate-to-edit"], undefined);
    for (const r of rules("tailnet-operator-view")) assert.deepEqual(r.verbs, ["get", "list", "watch"]);
    // Metacontroller writes a LoadBalancer Service's status: update on services/status, nothing more
    const mc = rules("tailnet-operator-metacontroller-services");
    assert.deepEqual(
      mc.filter((r) => r.resources.some((x) => x.endsWith("/status"))),
      [{ apiGroups: [""], resources: ["services/status"], verbs: ["update"] }],
    );
    // … and an Ingress's of class tailnet: update on ingresses/status, nothing more
    assert.deepEqual(
      rules("tailnet-operator-metacontroller-ingresses").filter((r) => r.resources.some((x) => x.endsWith("/status"))),
      [{ apiGroups: ["networking.k8s.io"], resources: ["ingresses/status"], verbs: ["update"] }],
    );
    assert.equal(
      objects.filter((o) => o.kind === "ClusterRoleBinding" && JSON.stringify(o).includes("metacontroller-ingresses"))
        .length,
      0,
      "not bound: the stock Metacontroller role covers it",
    );
    assert.equal(
      objects.filter((o) => o.kind === "ClusterRoleBinding" && JSON.stringify(o).includes("metacontroller-services"))
        .length,
      0,
      "not bound: the stock Metacontroller role covers it",
    );
    // issue 27: namespace editors write TailnetAuthKeys; TailnetUser is aggregated to no role at all
    const keysEdit = find(objects, "ClusterRole", "tailnet-operator-authkeys-edit");
    assert.equal(keysEdit.metadata.labels?.["rbac.authorization.k8s.io/aggregate-to-edit"], "true");
    assert.deepEqual(
      rules("tailnet-operator-authkeys-edit")
        .filter((r) => r.verbs.includes("create"))
        .flatMap((r) => r.resources),
      ["tailnetauthkeys"],
    );
    const aggregated = objects.filter(
      (o) => o.kind === "ClusterRole" && Object.keys(o.metadata.labels ?? {}).some((l) => l.includes("aggregate-to-")),
    );
    for (const role of aggregated) {
      for (const r of rules(role.metadata.name)) {
        assert.ok(!r.resources.some((x) => x.startsWith("tailnetusers")), `${role.metadata.name} grants tailnetusers`);
      }
    }
  });

  it("kubeApi.serviceAccounts: the listed accounts may impersonate users and groups, nothing else; none by default", () => {
    assert.ok(!objects.some((o) => o.metadata.name === "tailnet-operator-kube-api-impersonator"), "opt-in");
    const rendered = renderChart({
      kubeApi: {
        serviceAccounts: [
          { namespace: "tailnet-system", name: "kube-agent" },
          { namespace: "platform", name: "ops-agent" },
        ],
      },
    });
    assert.deepEqual(find(rendered, "ClusterRole", "tailnet-operator-kube-api-impersonator").rules, [
      { apiGroups: [""], resources: ["users", "groups"], verbs: ["impersonate"] },
    ]);
    const binding = find(rendered, "ClusterRoleBinding", "tailnet-operator-kube-api-impersonator");
    assert.deepEqual(binding.roleRef, {
      apiGroup: "rbac.authorization.k8s.io",
      kind: "ClusterRole",
      name: "tailnet-operator-kube-api-impersonator",
    });
    assert.deepEqual(binding.subjects, [
      { kind: "ServiceAccount", name: "kube-agent", namespace: "tailnet-system" },
      { kind: "ServiceAccount", name: "ops-agent", namespace: "platform" },
    ]);
  });

  it("generates a random hook token by default (48 characters), a new one per render without a cluster to look up", () => {
    const token = (objects: K8sObject[]) =>
      Buffer.from(
        (find(objects, "Secret", "tailnet-operator-hook-token").data as { token: string }).token,
        "base64",
      ).toString();
    const a = token(renderChart({}));
    const b = token(renderChart({}));
    assert.match(a, /^[A-Za-z0-9]{48}$/);
    assert.notEqual(a, b);
    // with a cluster, the template reads the Secret it wrote before (lookup) and keeps it
    const template = readFileSync(join(chartDir, "templates", "hook-token-secret.yaml"), "utf8");
    assert.match(template, /lookup "v1" "Secret" \.Release\.Namespace "tailnet-operator-hook-token"/);
  });

  it("writes the hook token Secret and points every CompositeController hook at it", () => {
    const all = renderChart(SCENARIOS["everything enabled"]);
    const secret = find(all, "Secret", "tailnet-operator-hook-token");
    assert.equal(
      Buffer.from((secret.data as { token: string }).token, "base64").toString(),
      "s3cr3t-hook-token-0123456789",
    );
    const ccs = all.filter((o) => o.kind === "CompositeController");
    assert.equal(ccs.length, HOOK_KINDS.length);
    for (const cc of ccs) {
      const hooks = (cc.spec as { hooks: Record<string, { webhook: { authorization?: unknown } }> }).hooks;
      for (const hook of Object.values(hooks)) {
        assert.deepEqual(hook.webhook.authorization, {
          type: "Bearer",
          secretRef: { name: "tailnet-operator-hook-token", namespace: "tailnet-system", key: "token" },
        });
      }
    }
    // The token itself only travels in the Secret.
    for (const o of all.filter((x) => x.kind !== "Secret")) {
      assert.doesNotMatch(JSON.stringify(o), /s3cr3t-hook-token/, `${o.kind}/${o.metadata.name}`);
    }
  });
});
