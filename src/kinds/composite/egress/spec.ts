/**
 * The TailnetEgress spec as the kind reads it (CRD defaults applied): the only place the egress kind
 * reads `parent.spec`. Also what the CRD schema cannot express (`egressSpecProblem`, the kind module's
 * `specProblem`: InvalidSpec naming the field) and the agent's listen port of every target port.
 */
import { egressListenPorts } from "../../../contract/ports.js";
import type { K8sObject } from "../../../k8s/objects.js";

export interface EgressTarget {
  name: string;
  host: string;
  ports: { port: number; protocol: string }[];
}

export interface EgressSpec {
  /** spec.tag, when set (else the effective tag is derived from the Tailnet's tagPrefix). */
  tag?: string;
  /** spec.replicas, default 1. */
  replicas: number;
  /** spec.targets with defaults applied (protocol TCP). */
  targets: EgressTarget[];
  /** The agent's listen port per target port, index-aligned with `targets` (egressListenPorts). */
  listenPorts: number[][];
}

type Rec = Record<string, unknown>;
const records = (v: unknown): Rec[] =>
  Array.isArray(v) ? (v.filter((x) => x && typeof x === "object" && !Array.isArray(x)) as Rec[]) : [];

/** spec.targets with defaults applied (protocol TCP); the CRD schema has already checked the shape. */
export function egressTargets(parent: K8sObject): EgressTarget[] {
  return records((parent.spec as Rec | undefined)?.targets).map((t) => ({
    name: String(t.name),
    host: String(t.host),
    ports: records(t.ports).map((p) => ({
      port: Number(p.port),
      protocol: typeof p.protocol === "string" ? p.protocol : "TCP",
    })),
  }));
}

export function readEgressSpec(parent: K8sObject): EgressSpec {
  const spec = (parent.spec ?? {}) as Rec;
  const r = spec.replicas;
  const targets = egressTargets(parent);
  return {
    ...(typeof spec.tag === "string" && spec.tag ? { tag: spec.tag } : {}),
    replicas: typeof r === "number" && Number.isInteger(r) && r >= 0 ? r : 1,
    targets,
    listenPorts: egressListenPorts(targets),
  };
}

/**
 * What the schema cannot catch: a target name used twice (one Service per name), or a port listed twice
 * in one target (a Service cannot carry the same port twice). The first offending field, or undefined.
 */
export function egressSpecProblem(parent: K8sObject): string | undefined {
  const { targets } = readEgressSpec(parent);
  const names = new Set<string>();
  for (const [i, target] of targets.entries()) {
    if (names.has(target.name)) return `spec.targets[${i}].name: duplicate name "${target.name}"`;
    names.add(target.name);
  }
  for (const [t, target] of targets.entries()) {
    const seen = new Set<number>();
    for (const [i, p] of target.ports.entries()) {
      if (seen.has(p.port)) return `spec.targets[${t}].ports[${i}].port: duplicate port ${p.port}`;
      seen.add(p.port);
    }
  }
  return undefined;
}
