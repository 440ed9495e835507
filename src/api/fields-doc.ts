/** docs/reference/fields.md, generated from the same schemas as the CRDs (npm run manifests). */
import { CRD_KINDS } from "./crd.js";
import type { Schema } from "./schemas.js";

function typeOf(s: Schema): string {
  if (s.type === "array") return `[]${typeOf((s.items ?? {}) as Schema)}`;
  if (Array.isArray(s.enum)) return (s.enum as string[]).map((e) => `\`${e}\``).join(" \\| ");
  return String(s.type ?? "object");
}

function notesOf(s: Schema): string {
  const notes: string[] = [];
  if (s.description) notes.push(String(s.description).replace(/\.$/, ""));
  if (s.default !== undefined && typeof s.default !== "object") notes.push(`default \`${String(s.default)}\``);
  if (s.pattern) notes.push(`pattern \`${String(s.pattern)}\``);
  if (s.minItems !== undefined || s.maxItems !== undefined)
    notes.push(`${s.minItems ?? 0}..${s.maxItems ?? "∞"} items`);
  if (s.minimum !== undefined || s.maximum !== undefined) notes.push(`${s.minimum ?? ""}..${s.maximum ?? ""}`);
  const keys = s["x-kubernetes-list-map-keys"] as string[] | undefined;
  if (keys) notes.push(`unique by ${keys.join(", ")}`);
  return notes.join("; ").replaceAll("|", "\\|");
}

/** One table row per field, depth first; array items appear as `field[].sub`. */
function rows(s: Schema, path: string, required: boolean, out: string[]): void {
  if (path) out.push(`| \`${path}\` | ${typeOf(s)} | ${required ? "yes" : ""} | ${notesOf(s)} |`);
  const node = s.type === "array" ? ((s.items ?? {}) as Schema) : s;
  const prefix = s.type === "array" ? `${path}[]` : path;
  const req = new Set((node.required ?? []) as string[]);
  for (const [k, v] of Object.entries((node.properties ?? {}) as Record<string, Schema>)) {
    rows(v, prefix ? `${prefix}.${k}` : k, req.has(k), out);
  }
}

/** Every CEL rule of a schema with the field it sits on (array items as `field[]`). */
function rules(s: Schema, path: string, out: string[]): void {
  for (const r of (s["x-kubernetes-validations"] ?? []) as { message: string }[]) out.push(`\`${path}\`: ${r.message}`);
  if (s.type === "array") rules((s.items ?? {}) as Schema, `${path}[]`, out);
  for (const [k, v] of Object.entries((s.properties ?? {}) as Record<string, Schema>)) rules(v, `${path}.${k}`, out);
}

export function fieldsPage(): string {
  const parts = [
    "# Resource fields",
    "",
    "Generated from `src/api/schemas.ts` (the source of the CRDs) by `npm run manifests`; do not edit.",
    "Each note is the field's description in the CRD, so `kubectl explain <kind>.<field>` prints the same text.",
    "Group `tailnet.internal`, version `v1alpha1`. Conditions and reasons are in [reasons.md](reasons.md).",
  ];
  for (const k of CRD_KINDS) {
    const spec: string[] = [];
    rows(k.spec, "spec", false, spec);
    const status: string[] = [];
    if (k.status) rows(k.status, "status", false, status);
    const admission: string[] = [];
    rules(k.spec, "spec", admission);
    parts.push(
      "",
      `## ${k.kind}`,
      "",
      k.description,
      "",
      `${k.scope === "Cluster" ? "Cluster-scoped" : "Namespaced"}; short name \`${k.shortName}\`; \`kubectl get ${k.plural}\` shows ${k.printerColumns.map((c) => c.name).join(", ")}.`,
      ...(admission.length
        ? [
            "",
            "The API server refuses at admission (CEL rules, src/api/cel.ts):",
            "",
            ...admission.map((r) => `- ${r}`),
          ]
        : []),
      "",
      "| field | type | required | notes |",
      "|---|---|---|---|",
      ...spec.slice(1),
      ...status.slice(1),
    );
  }
  return `${parts.join("\n")}\n`;
}
