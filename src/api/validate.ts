/**
 * Hook-time validation of a parent: the same JSON Schema the CRD carries (ajv), then the checks
 * OpenAPI cannot express (unique names, CIDR host bits, prefixes overlapping inside one object).
 * A failure becomes an InvalidSpec condition naming the field, never a 4xx or a 5xx.
 */
import type { ErrorObject, ValidateFunction } from "ajv";
import { cidrsOverlap, parseCidr } from "../net/cidr.js";
import { newAjv } from "./ajv.js";
import { type HookKind, KINDS } from "./schemas.js";

const ajv = newAjv({ allErrors: false, strict: false });
const specValidators = new Map<HookKind, ValidateFunction>(KINDS.map((k) => [k.hookKind, ajv.compile(k.spec)]));

/** `/targets/1/name` → `spec.targets[1].name`. */
export function fieldPath(root: string, instancePath: string): string {
  let out = root;
  for (const part of instancePath.split("/").slice(1)) {
    const p = part.replaceAll("~1", "/").replaceAll("~0", "~");
    out += /^\d+$/.test(p) ? `[${p}]` : `.${p}`;
  }
  return out;
}

export function describeAjvError(root: string, e: ErrorObject): string {
  if (e.keyword === "required") {
    return `${fieldPath(root, e.instancePath)}.${(e.params as { missingProperty: string }).missingProperty}: required`;
  }
  if (e.keyword === "additionalProperties") {
    return `${fieldPath(root, e.instancePath)}.${(e.params as { additionalProperty: string }).additionalProperty}: unknown field`;
  }
  if (e.keyword === "x-kubernetes-validations") {
    const field = (e.params as { field?: string }).field;
    return `${fieldPath(root, e.instancePath)}${field ? `.${field}` : ""}: ${e.message}`;
  }
  if (e.keyword === "enum") {
    return `${fieldPath(root, e.instancePath)}: must be one of ${(e.params as { allowedValues: unknown[] }).allowedValues.join(", ")}`;
  }
  return `${fieldPath(root, e.instancePath)}: ${e.message ?? "invalid"}`;
}

type Spec = Record<string, unknown>;
const list = (v: unknown): Spec[] => (Array.isArray(v) ? (v.filter((x) => x && typeof x === "object") as Spec[]) : []);

function duplicateName(items: Spec[], field: string): string | undefined {
  const seen = new Set<string>();
  for (const [i, item] of items.entries()) {
    const name = String(item.name);
    if (seen.has(name)) return `spec.${field}[${i}].name: duplicate name "${name}"`;
    seen.add(name);
  }
  return undefined;
}

/** The first entry of a CIDR list that does not parse or overlaps an earlier one, naming the field. */
export function cidrList(values: unknown, field: string): string | undefined {
  if (!Array.isArray(values)) return undefined;
  const parsed: { text: string; i: number }[] = [];
  for (const [i, v] of values.entries()) {
    const r = parseCidr(String(v));
    if (!r.ok) return `spec.${field}[${i}]: ${r.message}`;
    for (const other of parsed) {
      if (cidrsOverlap(other.text, String(v))) {
        return `spec.${field}[${i}]: ${String(v)} overlaps spec.${field}[${other.i}] ${other.text}`;
      }
    }
    parsed.push({ text: String(v), i });
  }
  return undefined;
}

function semanticErrors(kind: HookKind, spec: Spec): string | undefined {
  switch (kind) {
    case "egress":
      return undefined; // the kind's own specProblem (src/kinds/composite/egress/spec.ts)
    case "ingress":
      return duplicateName(list(spec.exposes), "exposes");
    case "gateway":
      return cidrList(spec.routes, "routes");
    case "tailnet": {
      const reserved = Array.isArray(spec.reservedNetworks) ? spec.reservedNetworks : [];
      for (const [i, v] of reserved.entries()) {
        const r = parseCidr(String(v));
        if (!r.ok) return `spec.reservedNetworks[${i}]: ${r.message}`;
      }
      return undefined;
    }
  }
  // Other kinds (TailnetSite) judge the rest in their module's specProblem (hooks.ts calls it next).
  return undefined;
}

/** undefined when valid, otherwise one message naming the first bad field. */
export function validateSpec(kind: HookKind, spec: unknown): string | undefined {
  const validate = specValidators.get(kind);
  if (!validate) return `unknown kind ${kind}`;
  if (spec === undefined || spec === null || typeof spec !== "object" || Array.isArray(spec)) {
    return "spec: required object";
  }
  if (!validate(spec)) return describeAjvError("spec", (validate.errors ?? [])[0] as ErrorObject);
  return semanticErrors(kind, spec as Spec);
}
