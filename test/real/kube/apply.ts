/**
 * Applying our YAML to the real API server the way a careful operator would: server-side apply with
 * strict field validation (an unknown or duplicate field is an error, not a dropped field), and
 * every warning the server sends back (deprecations, PodSecurity warn mode, unknown fields in
 * warn mode) collected so a test can insist on none.
 */
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { stringify } from "yaml";
import { type K8sObject, parseObjects } from "../../chart/helm.js";
import { REPO } from "../bins.js";
import type { Cluster } from "./cluster.js";

export type ApplyResult = { status: number; stdout: string; stderr: string; warnings: string[] };

export function apply(
  cluster: Cluster,
  objects: K8sObject[] | string,
  opts: { dryRun?: boolean; as?: "user"; namespace?: string } = {},
): ApplyResult {
  const input = typeof objects === "string" ? objects : objects.map((o) => `---\n${stringify(o)}`).join("");
  const args = ["apply", "--server-side", "--field-manager=real-kube-test", "--force-conflicts"];
  args.push("--validate=strict", "-f", "-");
  if (opts.dryRun) args.push("--dry-run=server");
  if (opts.namespace) args.push("-n", opts.namespace);
  const r = cluster.tryKubectl(args, { input, as: opts.as });
  const warnings = r.stderr.split("\n").filter((l) => l.startsWith("Warning:"));
  return { ...r, warnings };
}

/** Like apply, but throws with the server's words on an error or on any warning. */
export function applyClean(cluster: Cluster, objects: K8sObject[] | string, opts: { dryRun?: boolean } = {}): void {
  const r = apply(cluster, objects, opts);
  if (r.status !== 0 || r.warnings.length) {
    throw new Error(`apply ${r.status === 0 ? "warned" : "failed"}:\n${r.stderr.trim()}`);
  }
}

export function ensureNamespace(cluster: Cluster, name: string, labels: Record<string, string> = {}): void {
  applyClean(cluster, [{ apiVersion: "v1", kind: "Namespace", metadata: { name, labels } }]);
}

export type GoldenObject = {
  kind: string;
  namespace?: string;
  name: string;
  status?: Record<string, unknown>;
  children?: K8sObject[];
};

/** The examples: each folder's input objects and its golden render output (expected.yaml). */
export function examples(): { name: string; inputs: K8sObject[]; golden: GoldenObject[] }[] {
  const root = join(REPO, "examples");
  return readdirSync(root, { withFileTypes: true })
    .filter((d) => d.isDirectory())
    .map((d) => d.name)
    .sort()
    .map((name) => {
      const dir = join(root, name);
      const inputs = readdirSync(dir)
        .filter((f) => f.endsWith(".yaml") && f !== "expected.yaml")
        .sort()
        .flatMap((f) => parseObjects(readFileSync(join(dir, f), "utf8")));
      const expected = parseObjects(readFileSync(join(dir, "expected.yaml"), "utf8"))[0] as unknown as {
        objects: GoldenObject[];
      };
      return { name, inputs, golden: expected.objects };
    });
}

/** Every API object written out in README.md and docs/**.md (```yaml fences and heredocs). */
export function documentedObjects(): { file: string; object: K8sObject }[] {
  const files = [
    "README.md",
    ...readdirSync(join(REPO, "docs"), { recursive: true })
      .map(String)
      .filter((f) => f.endsWith(".md"))
      .sort()
      .map((f) => join("docs", f)),
  ];
  const out: { file: string; object: K8sObject }[] = [];
  for (const file of files) {
    const text = readFileSync(join(REPO, file), "utf8");
    const blocks = [
      ...[...text.matchAll(/```ya?ml\n([\s\S]*?)```/g)].map((m) => m[1]),
      ...[...text.matchAll(/<<-?'?(\w+)'?\n([\s\S]*?)\n\1\n/g)].map((m) => m[2]),
    ];
    for (const block of blocks) {
      for (const object of parseObjects(block)) {
        // Kustomizations are read by kustomize, not sent to the server.
        if (object?.apiVersion && object.kind && !object.apiVersion.startsWith("kustomize.config.k8s.io/")) {
          out.push({ file, object });
        }
      }
    }
  }
  return out;
}
