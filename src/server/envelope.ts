/**
 * Validation of the Metacontroller request envelope. A malformed request is a 400 whose message
 * names the field; nothing behind it runs. The parent's spec is not checked here (that gives an
 * InvalidSpec condition, see src/api/validate.ts).
 */
import { API_VERSION, type KindInfo } from "../api/schemas.js";
import { isRecord, type K8sObject, type ObjectMaps } from "../k8s/objects.js";
import type { CustomizeRequest, HookRequest } from "../pipeline/types.js";

export class EnvelopeError extends Error {
  constructor(
    message: string,
    readonly statusCode = 400,
  ) {
    super(message);
  }
}

function checkParent(body: Record<string, unknown>, info: KindInfo): K8sObject {
  const parent = body.parent;
  if (parent === undefined || parent === null) throw new EnvelopeError("parent: required");
  if (!isRecord(parent)) throw new EnvelopeError("parent: must be an object");
  if (parent.apiVersion !== API_VERSION) {
    throw new EnvelopeError(`parent.apiVersion: must be ${API_VERSION}, got ${JSON.stringify(parent.apiVersion)}`);
  }
  if (parent.kind !== info.kind) {
    throw new EnvelopeError(
      `parent.kind: this path serves ${info.kind}, got ${JSON.stringify(parent.kind)} (use /hooks/<kind>/… of that kind)`,
    );
  }
  const meta = parent.metadata;
  if (!isRecord(meta)) throw new EnvelopeError("parent.metadata: required object");
  if (typeof meta.name !== "string" || meta.name === "")
    throw new EnvelopeError("parent.metadata.name: required string");
  if (info.scope === "Namespaced" && (typeof meta.namespace !== "string" || meta.namespace === "")) {
    throw new EnvelopeError("parent.metadata.namespace: required string for a namespaced kind");
  }
  if (meta.generation !== undefined && (typeof meta.generation !== "number" || !Number.isInteger(meta.generation))) {
    throw new EnvelopeError("parent.metadata.generation: must be an integer");
  }
  for (const f of ["uid", "creationTimestamp", "deletionTimestamp", "namespace"] as const) {
    if (meta[f] !== undefined && meta[f] !== null && typeof meta[f] !== "string") {
      throw new EnvelopeError(`parent.metadata.${f}: must be a string`);
    }
  }
  for (const f of ["labels", "annotations"] as const) {
    if (meta[f] !== undefined && meta[f] !== null) {
      if (!isRecord(meta[f]) || Object.values(meta[f]).some((v) => typeof v !== "string")) {
        throw new EnvelopeError(`parent.metadata.${f}: must be a map of strings`);
      }
    }
  }
  if (parent.status !== undefined && parent.status !== null && !isRecord(parent.status)) {
    throw new EnvelopeError("parent.status: must be an object");
  }
  return parent as unknown as K8sObject;
}

export function checkMaps(value: unknown, field: "children" | "related" | "attachments"): ObjectMaps {
  if (value === undefined || value === null) return {};
  if (!isRecord(value)) throw new EnvelopeError(`${field}: must be an object keyed by Kind.group/version`);
  const out: ObjectMaps = {};
  for (const [typeKey, group] of Object.entries(value)) {
    if (!/^[A-Za-z][A-Za-z0-9]*\.([a-z0-9.-]+\/)?v[0-9][a-z0-9]*$/.test(typeKey)) {
      throw new EnvelopeError(`${field}: key ${JSON.stringify(typeKey.slice(0, 100))} is not Kind.group/version`);
    }
    if (group === null) {
      out[typeKey] = {};
      continue;
    }
    if (!isRecord(group)) throw new EnvelopeError(`${field}[${JSON.stringify(typeKey)}]: must be an object`);
    const objects: Record<string, K8sObject> = {};
    for (const [key, obj] of Object.entries(group)) {
      const where = `${field}[${JSON.stringify(typeKey)}][${JSON.stringify(key.slice(0, 100))}]`;
      if (!isRecord(obj)) throw new EnvelopeError(`${where}: must be an object`);
      if (!isRecord(obj.metadata) || typeof obj.metadata.name !== "string") {
        throw new EnvelopeError(`${where}.metadata.name: required string`);
      }
      if (obj.metadata.namespace !== undefined && typeof obj.metadata.namespace !== "string") {
        throw new EnvelopeError(`${where}.metadata.namespace: must be a string`);
      }
      for (const f of ["labels", "annotations"] as const) {
        const v = obj.metadata[f];
        if (v !== undefined && v !== null && (!isRecord(v) || Object.values(v).some((s) => typeof s !== "string"))) {
          throw new EnvelopeError(`${where}.metadata.${f}: must be a map of strings`);
        }
      }
      // The parsed body is ours: set apiVersion and kind in place (no copy of 20,000 objects on a
      // big Tailnet sync).
      if (typeof obj.apiVersion !== "string") obj.apiVersion = typeKey.slice(typeKey.indexOf(".") + 1);
      obj.kind = typeKey.slice(0, typeKey.indexOf("."));
      objects[key] = obj as unknown as K8sObject;
    }
    out[typeKey] = objects;
  }
  return out;
}

export function checkBody(body: unknown): Record<string, unknown> {
  if (!isRecord(body)) throw new EnvelopeError("body: must be a JSON object");
  if (body.controller !== undefined && body.controller !== null && !isRecord(body.controller)) {
    throw new EnvelopeError("controller: must be an object");
  }
  return body;
}

export function parseSyncRequest(body: unknown, info: KindInfo, hook: "sync" | "finalize"): HookRequest {
  const b = checkBody(body);
  const parent = checkParent(b, info);
  if (b.finalizing !== undefined && b.finalizing !== null && typeof b.finalizing !== "boolean") {
    throw new EnvelopeError("finalizing: must be a boolean");
  }
  return {
    controller: (b.controller as Record<string, unknown>) ?? {},
    parent,
    children: checkMaps(b.children, "children"),
    related: checkMaps(b.related, "related"),
    finalizing: typeof b.finalizing === "boolean" ? b.finalizing : hook === "finalize",
  };
}

export function parseCustomizeRequest(body: unknown, info: KindInfo): CustomizeRequest {
  const b = checkBody(body);
  return { controller: (b.controller as Record<string, unknown>) ?? {}, parent: checkParent(b, info) };
}
