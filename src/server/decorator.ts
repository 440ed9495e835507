/**
 * The DecoratorController hooks (Metacontroller v2, pkg/controller/decorator/api/v2/hooks.go):
 * request `{controller, object, attachments, related, finalizing}` (customize: `{controller, parent}`),
 * answer `{labels, annotations, status, attachments, resyncAfterSeconds, finalized}`. A malformed
 * request is a 400 naming the field. The answer goes through its own closed schema: v2 hooks are
 * decoded strictly, so a stray key would fail the call; `status` is sent only by a kind that owns
 * (part of) the object's status (an Ingress or a LoadBalancer Service of our class), and absent/null
 * leaves the object's status alone.
 */
import { isRecord, type K8sObject } from "../k8s/objects.js";
import type { DecoratorModule, DecoratorRequest } from "../kinds/decorators/module.js";
import { observedIn } from "../pipeline/status.js";
import type { HookDeps, RelatedRule } from "../pipeline/types.js";
import { checkBody, checkMaps, EnvelopeError } from "./envelope.js";

const stringMap = { type: "object", additionalProperties: { type: ["string", "null"] } } as const;
const syncSchema = {
  type: "object",
  additionalProperties: false,
  required: ["labels", "annotations", "attachments"],
  properties: {
    labels: stringMap,
    annotations: stringMap,
    attachments: { type: "array", items: { type: "object", additionalProperties: true } },
    resyncAfterSeconds: { type: "number" },
    status: { type: ["object", "null"], additionalProperties: true },
  },
} as const;

export const DECORATOR_RESPONSE_SCHEMAS: Record<"sync" | "finalize", Record<string, unknown>> = {
  sync: syncSchema,
  finalize: { ...syncSchema, properties: { ...syncSchema.properties, finalized: { type: "boolean" } } },
};

function checkObject(value: unknown, field: "object" | "parent", module: DecoratorModule): K8sObject {
  if (value === undefined || value === null) throw new EnvelopeError(`${field}: required`);
  if (!isRecord(value)) throw new EnvelopeError(`${field}: must be an object`);
  const want = module.object;
  if (value.apiVersion !== want.apiVersion) {
    throw new EnvelopeError(`${field}.apiVersion: must be ${want.apiVersion}, got ${JSON.stringify(value.apiVersion)}`);
  }
  if (value.kind !== want.kind) {
    throw new EnvelopeError(
      `${field}.kind: this path decorates ${want.kind}, got ${JSON.stringify(value.kind)}`.slice(0, 200),
    );
  }
  const meta = value.metadata;
  if (!isRecord(meta)) throw new EnvelopeError(`${field}.metadata: required object`);
  if (typeof meta.name !== "string" || meta.name === "")
    throw new EnvelopeError(`${field}.metadata.name: required string`);
  if (want.clusterScoped) {
    if (meta.namespace !== undefined && meta.namespace !== "")
      throw new EnvelopeError(`${field}.metadata.namespace: ${want.kind} is cluster-scoped`);
  } else if (typeof meta.namespace !== "string" || meta.namespace === "") {
    throw new EnvelopeError(`${field}.metadata.namespace: required string (${want.kind} is namespaced)`);
  }
  for (const f of ["uid", "creationTimestamp", "deletionTimestamp"] as const) {
    if (meta[f] !== undefined && meta[f] !== null && typeof meta[f] !== "string") {
      throw new EnvelopeError(`${field}.metadata.${f}: must be a string`);
    }
  }
  for (const f of ["labels", "annotations"] as const) {
    const m = meta[f];
    if (m !== undefined && m !== null && (!isRecord(m) || Object.values(m).some((v) => typeof v !== "string"))) {
      throw new EnvelopeError(`${field}.metadata.${f}: must be a map of strings`);
    }
  }
  const spec = value.spec;
  if (spec !== undefined && spec !== null) {
    if (!isRecord(spec)) throw new EnvelopeError(`${field}.spec: must be an object`);
    if (spec.ports !== undefined && spec.ports !== null) {
      if (!Array.isArray(spec.ports)) throw new EnvelopeError(`${field}.spec.ports: must be an array`);
      spec.ports.forEach((p, i) => {
        const at = `${field}.spec.ports[${i}]`;
        if (!isRecord(p)) throw new EnvelopeError(`${at}: must be an object`);
        if (!Number.isInteger(p.port) || (p.port as number) < 1 || (p.port as number) > 65535) {
          throw new EnvelopeError(`${at}.port: must be an integer 1-65535`);
        }
        for (const f of ["name", "protocol"] as const) {
          if (p[f] !== undefined && p[f] !== null && typeof p[f] !== "string") {
            throw new EnvelopeError(`${at}.${f}: must be a string`);
          }
        }
      });
    }
    for (const f of ["type", "externalName", "loadBalancerClass"] as const) {
      if (spec[f] !== undefined && spec[f] !== null && typeof spec[f] !== "string") {
        throw new EnvelopeError(`${field}.spec.${f}: must be a string`);
      }
    }
  }
  return value as unknown as K8sObject;
}

export function parseDecoratorRequest(
  body: unknown,
  module: DecoratorModule,
  hook: "sync" | "finalize",
): DecoratorRequest {
  const b = checkBody(body);
  if (b.parent !== undefined && b.object === undefined) {
    throw new EnvelopeError(
      "object: required (a DecoratorController sends the decorated object as object, not parent)",
    );
  }
  const object = checkObject(b.object, "object", module);
  if (b.finalizing !== undefined && b.finalizing !== null && typeof b.finalizing !== "boolean") {
    throw new EnvelopeError("finalizing: must be a boolean");
  }
  return {
    controller: (b.controller as Record<string, unknown>) ?? {},
    object,
    attachments: checkMaps(b.attachments, "attachments"),
    related: checkMaps(b.related, "related"),
    finalizing: typeof b.finalizing === "boolean" ? b.finalizing : hook === "finalize",
  };
}

export async function answerDecoratorHook(
  hook: "customize" | "sync" | "finalize",
  module: DecoratorModule,
  body: unknown,
  deps: HookDeps,
): Promise<Record<string, unknown>> {
  if (hook === "customize") {
    const b = checkBody(body);
    const object = checkObject(b.parent, "parent", module);
    const rules: RelatedRule[] = module.customize(
      { controller: (b.controller as Record<string, unknown>) ?? {}, object },
      deps,
    );
    return { relatedResources: rules };
  }
  if (hook === "finalize" && !module.finalize) {
    throw new EnvelopeError(`${module.name} has no finalize hook (its DecoratorController declares none)`, 404);
  }
  const req = parseDecoratorRequest(body, module, hook);
  if (hook === "finalize" && module.finalize) {
    const r = await module.finalize(req, deps);
    return {
      labels: r.labels,
      annotations: r.annotations,
      // a finalize creates nothing (common.ts observedOnly): only attachments that exist are kept
      attachments: observedIn(r.attachments, req.attachments, req.object.metadata.namespace),
      resyncAfterSeconds: r.resyncAfterSeconds,
      finalized: r.finalized,
    };
  }
  const r = await module.sync(req, deps);
  return {
    labels: r.labels,
    annotations: r.annotations,
    attachments: r.attachments,
    resyncAfterSeconds: r.resyncAfterSeconds,
    // only a kind that owns the object's status answers one (null leaves it alone)
    ...(r.status !== undefined ? { status: r.status } : {}),
  };
}
