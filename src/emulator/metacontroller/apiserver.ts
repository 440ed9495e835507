/**
 * The API server's refusals of duplicate list entries (kubernetes pkg/apis/core/validation:
 * ValidateService's port names and port/protocol pairs, validateContainers' names,
 * validateContainerPorts' names, validateVolumes' names, validateVolumeMounts' mount paths).
 * The loop runs it on every create and update, so a list Metacontroller's apply collapses into
 * duplicates is refused in tests as a real cluster refuses it.
 */
import { isRecord } from "../../k8s/objects.js";

type Rec = Record<string, unknown>;
const list = (v: unknown): Rec[] => (Array.isArray(v) ? v.filter(isRecord) : []);

function duplicates(path: string, items: Rec[], field: (i: Rec) => unknown, what = "name"): string[] {
  const seen = new Set<string>();
  const out: string[] = [];
  items.forEach((item, i) => {
    const v = field(item);
    if (v === undefined || v === "") return;
    const k = JSON.stringify(v);
    if (seen.has(k)) out.push(`${path}[${i}].${what}: Duplicate value: ${k}`);
    seen.add(k);
  });
  return out;
}

function podSpecErrors(path: string, spec: Rec): string[] {
  const errs: string[] = [];
  errs.push(...duplicates(`${path}.volumes`, list(spec.volumes), (v) => v.name));
  for (const field of ["initContainers", "containers"]) {
    const containers = list(spec[field]);
    errs.push(...duplicates(`${path}.${field}`, containers, (c) => c.name));
    containers.forEach((c, i) => {
      const at = `${path}.${field}[${i}]`;
      errs.push(...duplicates(`${at}.ports`, list(c.ports), (p) => p.name));
      errs.push(...duplicates(`${at}.volumeMounts`, list(c.volumeMounts), (m) => m.mountPath, "mountPath"));
    });
  }
  return errs;
}

/** The refusals of one object, each as the API server words the field error. */
export function apiServerErrors(o: { kind: string; spec?: unknown }): string[] {
  const spec = isRecord(o.spec) ? o.spec : {};
  if (o.kind === "Service") {
    const ports = list(spec.ports);
    return [
      ...duplicates("spec.ports", ports, (p) => p.name),
      ...duplicates("spec.ports", ports, (p) => ({ port: p.port, protocol: p.protocol ?? "TCP" }), "port"),
    ];
  }
  if (o.kind === "Pod") return podSpecErrors("spec", spec);
  const template = isRecord(spec.template) ? spec.template : undefined;
  if (template && isRecord(template.spec)) return podSpecErrors("spec.template.spec", template.spec);
  return [];
}
