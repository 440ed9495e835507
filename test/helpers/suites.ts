/**
 * The three test suites `npm test` runs, and the one place that says which file belongs to which:
 *
 * - real (`npm run test:real`): everything under test/real/ — real Headscale, tailscaled and kube-apiserver,
 *   root and network namespaces (test/real/README.md).
 * - slow (`npm run test:slow`): the folders in SLOW_FOLDERS (the 1,000-connection agent stress, the fuzzer,
 *   the fault and rollout worlds, spawned `serve` replicas) and the files in SLOW_FILES, each with what it
 *   starts: helm, kustomize, promtool, openssl, named-checkzone, the CLI, the agent.
 * - pure (`npm run test:pure`): every other test file. It starts no process (the one exception is
 *   test/helpers/upstream.ts's cached `go mod download`), and `test:pure` preloads test/helpers/pure-guard.ts,
 *   which makes any other spawn throw — so a new test that shells out fails there until it is listed here.
 *
 * test/helpers/suites.test.ts fails when a test file is in none of the three (or in two), so nothing drops
 * out of CI unnoticed. `tsx test/helpers/suites.ts <suite>` prints a suite's files, one a line, for the
 * package.json scripts; it exits 1 on an empty suite, so a script can never run zero tests.
 */
import { readdirSync } from "node:fs";
import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";

export const repoRoot = fileURLToPath(new URL("../..", import.meta.url));

export const REAL_FOLDER = "test/real";

/** Whole folders of slow tests: processes, many sockets or many generated inputs by design. */
export const SLOW_FOLDERS: readonly string[] = ["test/hardening", "test/replicas"];

/** Single slow files elsewhere, each with what it starts (repository-relative paths). */
export const SLOW_FILES: Readonly<Record<string, string>> = {
  "test/agent/differential.test.ts": "the Go echo server (test/fixtures/goecho) and openssl",
  "test/agent/paths-differential.test.ts": "the Go router (test/fixtures/goroute), HAProxy and openssl",
  "test/agent/ingress-h2.test.ts": "openssl (test/fakes/agent/pki.ts)",
  "test/agent/h2-gateway.test.ts": "openssl (test/fakes/agent/pki.ts)",
  "test/agent/h2-limits.test.ts": "openssl (test/fakes/agent/pki.ts)",
  "test/agent/ingress-http.test.ts": "openssl (test/fakes/agent/pki.ts)",
  "test/agent/ingress-paths.test.ts": "openssl (test/fakes/agent/pki.ts)",
  "test/agent/ingress-tcp.test.ts": "openssl (test/fakes/agent/pki.ts)",
  "test/agent/kube-api.test.ts": "openssl (test/fakes/agent/pki.ts)",
  "test/agent/kube-api-tls.test.ts": "openssl (test/fakes/agent/pki.ts)",
  "test/agent/refuse.test.ts": "openssl (test/fakes/agent/pki.ts)",
  "test/chart/base.test.ts": "helm template (test/chart/helm.ts)",
  "test/chart/cert-manager.test.ts": "helm template (test/chart/helm.ts)",
  "test/chart/chart.test.ts": "helm template (test/chart/helm.ts)",
  "test/chart/config.test.ts": "helm template (test/chart/helm.ts)",
  "test/chart/decoratorcontrollers.test.ts": "helm template (test/chart/helm.ts)",
  "test/chart/monitoring.test.ts": "helm template (test/chart/helm.ts)",
  "test/chart/records.test.ts": "helm template (test/chart/helm.ts)",
  "test/cli/cli.test.ts": "the CLI, as a node process",
  "test/config.test.ts": "the CLI, as a node process",
  "test/agent/main.test.ts": "the agent, as a node process",
  "test/docs/kustomize-image.test.ts": "kubectl kustomize",
  "test/headscale/transport.test.ts": "openssl (test/fakes/agent/pki.ts)",
  "test/helpers/self-contained.test.ts": "git (a clone in an empty folder)",
  "test/helpers/tools.test.ts": "a missing system tool, on purpose",
  "test/helpers/upstream.test.ts": "node, to read the Go module cache in a fresh process",
  "test/kinds/composite/gateway/e2e.test.ts": "named-checkzone",
  "test/kinds/composite/gateway/zone.test.ts": "named-checkzone",
  "test/kinds/composite/ingress/decide-status.test.ts": "openssl (test/fakes/agent/pki.ts)",
  "test/kinds/composite/ingress/certificate.test.ts": "openssl (test/fakes/agent/pki.ts)",
  "test/kinds/composite/ingress/decide.test.ts": "openssl (test/fakes/agent/pki.ts)",
  "test/kinds/composite/ingress/grants.test.ts": "openssl (test/fakes/agent/pki.ts)",
  "test/kinds/composite/ingress/e2e-certificates.test.ts": "openssl (test/fakes/agent/pki.ts)",
  "test/kinds/composite/ingress/e2e-ha.test.ts": "openssl (test/fakes/agent/pki.ts)",
  "test/kinds/composite/ingress/e2e-https.test.ts": "openssl (test/fakes/agent/pki.ts)",
  "test/kinds/composite/ingress/e2e-rollout.test.ts": "openssl (test/fakes/agent/pki.ts)",
  "test/kinds/composite/ingress/e2e.test.ts": "openssl (test/fakes/agent/pki.ts)",
  "test/kinds/composite/ingress/reserved.test.ts": "openssl (test/fakes/agent/pki.ts)",
  "test/kinds/composite/ingress/tls.test.ts": "openssl (test/fakes/agent/pki.ts)",
  "test/manifests/install.test.ts": "kubectl kustomize",
  "test/monitoring/generated.test.ts": "helm template (test/chart/helm.ts)",
  "test/monitoring/kustomize.test.ts": "kubectl kustomize",
  "test/monitoring/metric-names.test.ts": "helm template (test/chart/helm.ts)",
  "test/monitoring/rules.test.ts": "helm template and promtool",
  "test/monitoring/runbooks.test.ts": "helm template (test/chart/helm.ts)",
  "test/readme/readme.test.ts": "git, helm and npm start",
  "test/records/sidecar.test.ts": "openssl (test/fakes/agent/pki.ts) and the CLI's records process",
};

/** The one spawn pure tests may make: `go mod download …` (test/helpers/upstream.ts), see pure-guard.ts. */
export function allowedInPure(command: unknown, args: unknown): boolean {
  return command === "go" && Array.isArray(args) && args[0] === "mod" && args[1] === "download";
}

export type Suite = "pure" | "slow" | "real";
export const SUITES: readonly Suite[] = ["pure", "slow", "real"];

/** How a test file is recognised (node --test's own default patterns, for TypeScript and JavaScript). */
export const TEST_FILE = /(\.|-|_|^)test\.[cm]?[jt]s$/;

/** Every test file under test/, repository-relative, sorted. */
export function allTestFiles(dir = join(repoRoot, "test")): string[] {
  const files: string[] = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) files.push(...allTestFiles(path));
    else if (TEST_FILE.test(entry.name)) files.push(relative(repoRoot, path));
  }
  return files.sort();
}

function under(file: string, folder: string): boolean {
  return file.startsWith(`${folder}/`);
}

export function suiteOf(file: string): Suite {
  if (under(file, REAL_FOLDER)) return "real";
  if (file in SLOW_FILES || SLOW_FOLDERS.some((folder) => under(file, folder))) return "slow";
  return "pure";
}

export function suiteFiles(suite: Suite, files: readonly string[] = allTestFiles()): string[] {
  return files.filter((file) => suiteOf(file) === suite);
}

function main(argv: string[]): number {
  const suite = argv[0] as Suite;
  if (argv.length !== 1 || !SUITES.includes(suite)) {
    process.stderr.write(`usage: tsx test/helpers/suites.ts ${SUITES.join("|")}\n`);
    return 2;
  }
  const files = suiteFiles(suite);
  if (files.length === 0) {
    process.stderr.write(`test/helpers/suites.ts: the ${suite} suite has no test files\n`);
    return 1;
  }
  process.stdout.write(`${files.join("\n")}\n`);
  return 0;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1])
  process.exitCode = main(process.argv.slice(2));
