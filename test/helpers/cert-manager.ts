/**
 * cert-manager as the tests know it: its pinned release (src/real-versions.json "certManager") and its CRDs, read
 * from the Go module `github.com/cert-manager/cert-manager` (deploy/crds/*.yaml) in the Go module cache — the
 * same download scripts/real-deps.sh builds the controller from. Children of kind Certificate are validated
 * against the CRD's own schema (test/helpers/validate.ts); the real tests apply the CRDs as they are.
 */
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { Ajv } from "ajv";
import { parseAllDocuments } from "yaml";
import type { K8sObject } from "../../src/k8s/objects.js";
import { goModuleDir } from "./upstream.js";

export const CERT_MANAGER_MODULE = "github.com/cert-manager/cert-manager";

export function certManagerPin(): string {
  const versions = JSON.parse(readFileSync(new URL("../../src/real-versions.json", import.meta.url), "utf8"));
  const pin = (versions as { certManager?: unknown }).certManager;
  if (typeof pin !== "string" || !/^v\d+\.\d+\.\d+$/.test(pin)) {
    throw new Error(`src/real-versions.json: "certManager" must be a release tag like "v1.21.2", got ${String(pin)}`);
  }
  return pin;
}

/** cert-manager's CRDs (Certificate, CertificateRequest, Issuer, ClusterIssuer, Order, Challenge), as shipped. */
export function certManagerCrds(): K8sObject[] {
  const dir = join(goModuleDir(CERT_MANAGER_MODULE, certManagerPin()), "deploy", "crds");
  return readdirSync(dir)
    .filter((f) => f.endsWith(".yaml"))
    .sort()
    .flatMap((f) => parseAllDocuments(readFileSync(join(dir, f), "utf8")).map((d) => d.toJSON() as K8sObject))
    .filter((o) => o?.kind === "CustomResourceDefinition");
}

let certificateCheck: ((o: unknown) => boolean) & { errors?: unknown } = Object.assign(() => true, {});
let compiled = false;

/** A problem of a Certificate against cert-manager's CRD schema (the API server's structural check), or undefined. */
export function certificateProblem(obj: K8sObject): string | undefined {
  if (!compiled) {
    const crd = certManagerCrds().find((c) => c.metadata.name === "certificates.cert-manager.io");
    const spec = (crd?.spec ?? { versions: [] }) as {
      versions: { name: string; schema: { openAPIV3Schema: object } }[];
    };
    const schema = spec.versions.find((v) => v.name === "v1")?.schema.openAPIV3Schema;
    if (!schema) throw new Error("cert-manager's Certificate CRD has no v1 schema");
    // plain ajv: the CRD's x-kubernetes-* keywords (and its CEL rules, which have no twins here) are the API server's
    certificateCheck = new Ajv({ strict: false, logger: false }).compile(schema);
    compiled = true;
  }
  if (certificateCheck(obj)) return undefined;
  return JSON.stringify(certificateCheck.errors);
}
