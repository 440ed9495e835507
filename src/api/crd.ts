import { PROXY_CLASS } from "./proxy-class.js";
import { GROUP, KINDS, type ResourceInfo, type Schema, VERSION } from "./schemas.js";

/**
 * The one category of every CRD: `kubectl get tailnet-all` lists them all. It must equal no
 * kind's plural, singular or short name: kubectl expands a category before it looks up a
 * resource, so the old category `tailnet` turned `kubectl get tailnet home` into a request for
 * every kind ("you must specify only one resource").
 */
export const CATEGORY = "tailnet-all";

/** Every CRD the operator installs: the five kinds with hooks, then the classes they refer to. */
export const CRD_KINDS: readonly ResourceInfo[] = [...KINDS, PROXY_CLASS];

/** Strips what OpenAPI v3 in a CRD cannot carry (JSON Schema `format: date-time` is fine; `default` on required is not). */
function structural(schema: Schema): Schema {
  return JSON.parse(JSON.stringify(schema)) as Schema;
}

// The root fields' descriptions, as Kubernetes' own types word them (k8s.io/apimachinery pkg/apis/meta/v1 types.go).
const API_VERSION_TEXT =
  "APIVersion defines the versioned schema of this representation of an object: tailnet.internal/v1alpha1.";
const KIND_TEXT = "Kind is a string value representing the REST resource this object represents.";
const STATUS_TEXT =
  "What the operator observed and did, written from its hook's answer; every condition change is also an Event on the object.";

/** The CustomResourceDefinition of one kind, generated from its schema. */
export function crdFor(info: ResourceInfo): Record<string, unknown> {
  return {
    apiVersion: "apiextensions.k8s.io/v1",
    kind: "CustomResourceDefinition",
    metadata: {
      name: `${info.plural}.${GROUP}`,
      labels: { "app.kubernetes.io/name": "tailnet-operator", "app.kubernetes.io/part-of": "tailnet-operator" },
    },
    spec: {
      group: GROUP,
      names: {
        kind: info.kind,
        listKind: `${info.kind}List`,
        plural: info.plural,
        singular: info.singular,
        shortNames: [info.shortName],
        categories: [CATEGORY],
      },
      scope: info.scope,
      versions: [
        {
          name: VERSION,
          served: true,
          storage: true,
          ...(info.status ? { subresources: { status: {} } } : {}),
          additionalPrinterColumns: info.printerColumns,
          schema: {
            openAPIV3Schema: {
              type: "object",
              description: info.description,
              required: ["spec"],
              properties: {
                apiVersion: { type: "string", description: API_VERSION_TEXT },
                kind: { type: "string", description: KIND_TEXT },
                // no description: the API server refuses anything but type here and publishes ObjectMeta's own
                metadata: { type: "object" },
                spec: { description: `What the ${info.kind} asks for.`, ...structural(info.spec) },
                ...(info.status ? { status: { description: STATUS_TEXT, ...structural(info.status) } } : {}),
              },
            },
          },
        },
      ],
    },
  };
}

export function allCrds(): Record<string, unknown>[] {
  return CRD_KINDS.map(crdFor);
}
