/**
 * The real peers' binaries, built by scripts/real-deps.sh into .cache/real/ at the versions pinned in
 * src/real-versions.json (the same pins the operator's images follow).
 */
import { accessSync, constants, existsSync, readdirSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

export const REPO = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
export const versions = JSON.parse(readFileSync(join(REPO, "src", "real-versions.json"), "utf8")) as {
  headscale: string;
  tailscale: string;
  coredns: string;
  /** The oldest tailscale image docs/OPERATIONS.md claims to support (booted by oldest.test.ts). */
  tailscaleOldest: string;
  /** grpc-go's examples module (route_guide, test/real/grpc.test.ts): a pseudo-version, the examples have no tags. */
  grpcExamples: string;
  /** cert-manager's module; scripts/cert-manager/main.go runs its controllers (cert-manager.test.ts). */
  certManager: string;
};
const cache = join(REPO, ".cache", "real");

export const bins = {
  headscale: join(cache, `headscale-${versions.headscale}`, "headscale"),
  tailscaled: join(cache, `tailscale-${versions.tailscale}`, "tailscaled"),
  tailscale: join(cache, `tailscale-${versions.tailscale}`, "tailscale"),
  containerboot: join(cache, `tailscale-${versions.tailscale}`, "containerboot"),
  coredns: join(cache, `coredns-${versions.coredns}`, "coredns"),
  tailscaledOldest: join(cache, `tailscale-${versions.tailscaleOldest}`, "tailscaled"),
  tailscaleOldest: join(cache, `tailscale-${versions.tailscaleOldest}`, "tailscale"),
  containerbootOldest: join(cache, `tailscale-${versions.tailscaleOldest}`, "containerboot"),
  /** grpc-go's route_guide server and client (scripts/real-deps.sh builds them from the examples module). */
  routeGuideServer: join(cache, `grpc-examples-${versions.grpcExamples}`, "route_guide_server"),
  routeGuideClient: join(cache, `grpc-examples-${versions.grpcExamples}`, "route_guide_client"),
  /** Node 22 from the devDependency, for the small helper processes run inside a host (echo servers). */
  node: join(REPO, "node_modules", ".bin", "node"),
} as const;

/** The route_guide server's feature database (copied from the examples module's testdata by real-deps.sh). */
export const routeGuideDb = join(cache, `grpc-examples-${versions.grpcExamples}`, "route_guide_db.json");
/** cert-manager's controllers, built by scripts/real-deps.sh from the pinned module (cert-manager.test.ts only). */
export const certManagerController = join(cache, `cert-manager-${versions.certManager}`, "cert-manager-controller");

/** Debian's PostgreSQL binaries: /usr/lib/postgresql/<newest major>/bin. */
export const pgBin = (() => {
  const root = "/usr/lib/postgresql";
  const majors = existsSync(root) ? readdirSync(root).filter((d) => /^\d+$/.test(d)) : [];
  const newest = majors.map(Number).sort((a, b) => b - a)[0];
  return join(root, String(newest ?? 15), "bin");
})();

/** Tools from Debian the real world needs (scripts/ci-deps.sh installs them). */
const SYSTEM = ["/usr/sbin/ip", "/usr/bin/setpriv", join(pgBin, "postgres"), join(pgBin, "initdb")];

function executable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** Throws one line naming what is missing (of `only`, default all); never a skip. */
export function requireBins(only?: (keyof typeof bins)[]): void {
  const missing = Object.entries(bins)
    .filter(([name, p]) => (!only || only.includes(name as keyof typeof bins)) && !executable(p))
    .map(([name]) => name);
  const system = SYSTEM.filter((p) => !executable(p));
  if (missing.length) {
    throw new Error(
      `real-world tests: missing ${missing.join(", ")} in .cache/real: run: bash scripts/real-deps.sh (needs Go >= 1.26)`,
    );
  }
  if (process.getuid?.() !== 0) throw new Error("real-world tests: must run as root (they make network namespaces)");
  if (system.length) throw new Error(`real-world tests: missing ${system.join(", ")}: run: bash scripts/ci-deps.sh`);
}
