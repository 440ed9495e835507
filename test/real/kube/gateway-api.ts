/**
 * The Gateway API CRDs of the standard channel at the pin (src/real-versions.json "gatewayApi"), read from the
 * published Go module sigs.k8s.io/gateway-api (config/crd/standard/) in the Go module cache: scripts/real-deps.sh
 * downloads it, goModuleDir finds it (and downloads it when a test runs first).
 */
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { goModuleDir } from "../../helpers/upstream.js";
import { REPO } from "../bins.js";

export const GATEWAY_API_MODULE = "sigs.k8s.io/gateway-api";

export function gatewayApiPin(): string {
  const pin = (JSON.parse(readFileSync(join(REPO, "src", "real-versions.json"), "utf8")) as { gatewayApi?: unknown })
    .gatewayApi;
  if (typeof pin !== "string" || !/^v\d+\.\d+\.\d+$/.test(pin)) {
    throw new Error(`src/real-versions.json: "gatewayApi" must be a release tag like "v1.4.1", got ${String(pin)}`);
  }
  return pin;
}

/** The standard channel's CRD files (YAML text), sorted by name. */
export function gatewayApiCrds(): { file: string; yaml: string }[] {
  const dir = join(goModuleDir(GATEWAY_API_MODULE, gatewayApiPin()), "config", "crd", "standard");
  return readdirSync(dir)
    .filter((f) => f.endsWith(".yaml"))
    .sort()
    .map((file) => ({ file, yaml: readFileSync(join(dir, file), "utf8") }));
}
