/**
 * The operator container's runtime as the Deployment sets it (manifests/base/operator.yaml): the literal
 * environment of the `operator` container (NODE_OPTIONS and glibc's MALLOC_* tunables), read from the manifest so
 * a bench runs exactly what is deployed. SOAK_MANIFEST names another copy of that file (e.g. the starting commit's,
 * to compare a before and an after with each side's own settings).
 */
import { readFileSync } from "node:fs";
import { parse } from "yaml";

const MANIFEST = new URL("../manifests/base/operator.yaml", import.meta.url);

interface EnvVar {
  name: string;
  value?: string;
}

/** The literal env entries of the operator container (valueFrom entries, e.g. the hook token, are left out). */
export function operatorPodEnv(path: string | URL = process.env.SOAK_MANIFEST || MANIFEST): Record<string, string> {
  const docs = readFileSync(path, "utf8")
    .split(/^---$/m)
    .map((d) => parse(d) as { kind?: string; spec?: { template?: { spec?: { containers?: unknown[] } } } } | null);
  const deployment = docs.find((d) => d?.kind === "Deployment");
  const containers = (deployment?.spec?.template?.spec?.containers ?? []) as { name?: string; env?: EnvVar[] }[];
  const operator = containers.find((c) => c.name === "operator");
  if (!operator) throw new Error(`${String(path)}: no Deployment with an "operator" container`);
  return Object.fromEntries(
    (operator.env ?? []).filter((e) => typeof e.value === "string").map((e) => [e.name, e.value as string]),
  );
}
