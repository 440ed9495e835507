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
              required: ["spec"],
              properties: {
                apiVersion: { type: "string" },
                kind: { type: "string" },
                metadata: { type: "object" },
                spec: structural(info.spec),
                ...(info.status ? { status: structural(info.status) } : {}),
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
