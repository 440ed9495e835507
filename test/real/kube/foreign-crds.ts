/**
 * Minimal CRDs for Metacontroller's CompositeController and DecoratorController, so our manifests
 * (compositecontrollers/, decoratorcontrollers/, the chart's templates) can be applied with strict
 * field validation to a real API server without installing Metacontroller. Written for these tests
 * from the field list of metacontroller/metacontroller v4.17.2
 * manifests/production/metacontroller-crds-v1.yaml (pkg/apis/metacontroller/v1alpha1/types.go): every
 * field we use is typed as upstream types it (names, types, enums, required), so a misspelt or
 * misplaced field fails here as it would against Metacontroller's own CRD. Sub-objects we never set
 * (TLS, auth, etag, status checks, selectors' insides) keep their unknown fields instead of copying
 * their whole upstream schema.
 */
type Schema = Record<string, unknown>;

const str: Schema = { type: "string" };
const open: Schema = { type: "object", "x-kubernetes-preserve-unknown-fields": true };
const obj = (properties: Record<string, Schema>, required?: string[]): Schema => ({
  type: "object",
  properties,
  ...(required ? { required } : {}),
});

const webhook = obj({
  url: str,
  path: str,
  timeout: str,
  responseUnMarshallMode: { type: "string", enum: ["loose", "strict"] },
  service: obj({ name: str, namespace: str, port: { type: "integer", format: "int32" }, protocol: str }, [
    "name",
    "namespace",
  ]),
  etag: open,
  caBundle: open,
  clientTLS: open,
  authorization: open,
  basicAuth: open,
});
const hook = obj({ version: { type: "string", enum: ["v1", "v2"] }, webhook });
const updateStrategy = obj({
  method: { type: "string", enum: ["OnDelete", "Recreate", "InPlace", "RollingRecreate", "RollingInPlace"] },
  statusChecks: open,
});
const resource = (extra: Record<string, Schema>): Schema => ({
  type: "array",
  items: obj({ apiVersion: str, resource: str, ...extra }, ["apiVersion", "resource"]),
});

function crd(kind: string, plural: string, spec: Schema) {
  return {
    apiVersion: "apiextensions.k8s.io/v1",
    kind: "CustomResourceDefinition",
    // *.k8s.io groups are protected: the API server wants this annotation, as upstream's CRD carries it.
    metadata: {
      name: `${plural}.metacontroller.k8s.io`,
      annotations: { "api-approved.kubernetes.io": "unapproved, request not yet submitted" },
    },
    spec: {
      group: "metacontroller.k8s.io",
      names: { kind, listKind: `${kind}List`, plural, singular: kind.toLowerCase() },
      scope: "Cluster",
      versions: [
        {
          name: "v1alpha1",
          served: true,
          storage: true,
          subresources: { status: {} },
          schema: { openAPIV3Schema: obj({ spec, status: open }, ["spec"]) },
        },
      ],
    },
  };
}

export const metacontrollerCrds = [
  crd(
    "CompositeController",
    "compositecontrollers",
    obj(
      {
        parentResource: obj(
          {
            apiVersion: str,
            resource: str,
            labelSelector: open,
            revisionHistory: obj({ fieldPaths: { type: "array", items: str } }),
            ignoreStatusChanges: { type: "boolean" },
          },
          ["apiVersion", "resource"],
        ),
        childResources: resource({ updateStrategy }),
        hooks: obj({ sync: hook, finalize: hook, customize: hook, preUpdateChild: hook, postUpdateChild: hook }),
        endpointConfigs: { type: "array", items: open },
        generateSelector: { type: "boolean" },
        resyncPeriodSeconds: { type: "integer", format: "int32" },
      },
      ["parentResource"],
    ),
  ),
  crd(
    "DecoratorController",
    "decoratorcontrollers",
    obj(
      {
        resources: resource({ labelSelector: open, annotationSelector: open }),
        attachments: resource({ updateStrategy }),
        hooks: obj({ sync: hook, finalize: hook, customize: hook }),
        endpointConfigs: { type: "array", items: open },
        resyncPeriodSeconds: { type: "integer", format: "int32" },
      },
      ["resources"],
    ),
  ),
];

/**
 * The monitoring kinds the monitoring component and the chart's monitoring values create: the
 * Prometheus Operator's PodMonitor, ServiceMonitor and PrometheusRule (monitoring.coreos.com/v1) and
 * the Grafana Operator's GrafanaDashboard (grafana.integreatly.org/v1beta1). Stand-ins only: their
 * spec keeps unknown fields, so these tests check that the objects are accepted (kind, version,
 * metadata), not those operators' schemas.
 */
export const monitoringCrds = (
  [
    ["monitoring.coreos.com", "v1", "PodMonitor", "podmonitors"],
    ["monitoring.coreos.com", "v1", "ServiceMonitor", "servicemonitors"],
    ["monitoring.coreos.com", "v1", "PrometheusRule", "prometheusrules"],
    ["grafana.integreatly.org", "v1beta1", "GrafanaDashboard", "grafanadashboards"],
  ] as const
).map(([group, version, kind, plural]) => ({
  apiVersion: "apiextensions.k8s.io/v1",
  kind: "CustomResourceDefinition",
  metadata: { name: `${plural}.${group}` },
  spec: {
    group,
    names: { kind, listKind: `${kind}List`, plural, singular: kind.toLowerCase() },
    scope: "Namespaced",
    versions: [{ name: version, served: true, storage: true, schema: { openAPIV3Schema: obj({ spec: open }) } }],
  },
}));
