/**
 * The records sidecar's config file (YAML), checked whole before anything starts: every error names its
 * field, and the process exits 1 with them (nothing half-configured runs next to Headscale).
 *
 *   output: /var/lib/headscale/records/records.json   # Headscale's dns.extra_records_path
 *   baseDomain: ts.example.com                        # Headscale's dns.base_domain
 *   prefixes: [100.64.0.0/10, fd7a:115c:a1e0::/48]    # Headscale's prefixes (the default)
 *   sources:
 *     - name: cluster-a                               # metric label and log field
 *       names: ["*.a.ts.example.com"]                 # the claim (default: every name below baseDomain)
 *       kubernetes: { kubeconfig: /etc/records/a/kubeconfig, namespace: tailnet-system, tailnet: home }
 *     - name: vm-hosts
 *       file: /etc/records/vm-hosts.json
 */
import { readFileSync } from "node:fs";
import { dirname } from "node:path";
import { parse as parseYaml } from "yaml";
import { dnsRecordsConfigMapName } from "../k8s/labels.js";
import { type Cidr, parseCidr } from "../net/cidr.js";
import { type Claim, normalizeName, parseClaim } from "./validate.js";

export class RecordsConfigError extends Error {
  override name = "RecordsConfigError";
}

export type SourceSpec =
  | { kind: "kubernetes"; kubeconfig?: string; context?: string; namespace: string; configMap: string; key: string }
  | { kind: "file"; path: string };

export interface SourceConfig {
  name: string;
  claim: Claim;
  /** The claim as written, for logs and docs. */
  names: string[];
  spec: SourceSpec;
}

export interface RecordsConfig {
  output: string;
  /** Per-source last good records and name owners; default `<output dir>/.<output name>.state.json`. */
  statePath: string;
  baseDomain: string;
  prefixes: Cidr[];
  intervalMs: number;
  timeoutMs: number;
  /** A source with more records than this is a failed read (its last good records stay). */
  maxRecords: number;
  port: number;
  sources: SourceConfig[];
}

export const DEFAULT_PREFIXES = ["100.64.0.0/10", "fd7a:115c:a1e0::/48"];
const SOURCE_NAME = /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/;

/** "15s", "2m", "500ms" → milliseconds; null when not one of those. */
export function parseDuration(s: unknown): number | null {
  if (typeof s !== "string") return null;
  const m = /^(\d{1,6})(ms|s|m)$/.exec(s);
  if (!m) return null;
  return Number(m[1]) * (m[2] === "ms" ? 1 : m[2] === "s" ? 1000 : 60_000);
}

type Raw = Record<string, unknown>;
const isObj = (x: unknown): x is Raw => typeof x === "object" && x !== null && !Array.isArray(x);

function unknownKeys(obj: Raw, allowed: readonly string[], at: string, errors: string[]) {
  for (const k of Object.keys(obj)) if (!allowed.includes(k)) errors.push(`${at}${k}: unknown field`);
}

function sourceSpec(raw: Raw, at: string, errors: string[]): SourceSpec | undefined {
  if (raw.kubernetes !== undefined && raw.file !== undefined) {
    errors.push(`${at}: set one of kubernetes and file, not both`);
    return undefined;
  }
  if (typeof raw.file === "string" && raw.file.startsWith("/")) return { kind: "file", path: raw.file };
  if (raw.file !== undefined) return void errors.push(`${at}.file: an absolute path`);
  const k = raw.kubernetes;
  if (!isObj(k)) return void errors.push(`${at}: set kubernetes (a cluster's records ConfigMap) or file`);
  unknownKeys(k, ["kubeconfig", "context", "namespace", "tailnet", "configMap", "key"], `${at}.kubernetes.`, errors);
  const str = (f: string) => (k[f] === undefined || typeof k[f] === "string" ? (k[f] as string | undefined) : null);
  for (const f of ["kubeconfig", "context", "namespace", "tailnet", "configMap", "key"]) {
    if (str(f) === null || str(f) === "") errors.push(`${at}.kubernetes.${f}: a non-empty string`);
  }
  const tailnet = str("tailnet");
  const configMap = str("configMap") ?? (tailnet ? dnsRecordsConfigMapName(tailnet) : undefined);
  if (!configMap)
    errors.push(`${at}.kubernetes.tailnet: the Tailnet's name (its ConfigMap tailnet-<name>-dns-records)`);
  const kubeconfig = str("kubeconfig") ?? undefined;
  if (kubeconfig !== undefined && !kubeconfig.startsWith("/"))
    errors.push(`${at}.kubernetes.kubeconfig: an absolute path`);
  return {
    kind: "kubernetes",
    kubeconfig,
    context: str("context") ?? undefined,
    namespace: str("namespace") ?? "tailnet-system",
    configMap: configMap ?? "",
    key: str("key") ?? "records.json",
  };
}

function sources(raw: unknown, baseDomain: string, errors: string[]): SourceConfig[] {
  if (!Array.isArray(raw) || raw.length === 0) {
    errors.push("sources: a list of at least one source");
    return [];
  }
  const out: SourceConfig[] = [];
  const seen = new Set<string>();
  for (const [i, s] of raw.entries()) {
    const at = `sources[${i}]`;
    if (!isObj(s)) {
      errors.push(`${at}: an object`);
      continue;
    }
    unknownKeys(s, ["name", "names", "kubernetes", "file"], `${at}.`, errors);
    const name = typeof s.name === "string" && SOURCE_NAME.test(s.name) ? s.name : undefined;
    if (!name) errors.push(`${at}.name: a lower-case DNS label (it is a metric label)`);
    else if (seen.has(name)) errors.push(`${at}.name: ${name} is listed twice`);
    else seen.add(name);
    const names = s.names === undefined ? [`*.${baseDomain}`] : s.names;
    if (!Array.isArray(names) || names.length === 0 || !names.every((n) => typeof n === "string")) {
      errors.push(`${at}.names: a non-empty list of names or "*.<name>" patterns`);
      continue;
    }
    const claim = parseClaim(names, baseDomain);
    for (const e of claim.errors) errors.push(`${at}.names: ${e}`);
    const spec = sourceSpec(s, at, errors);
    if (name && spec) out.push({ name, claim: claim.claim, names, spec });
  }
  return out;
}

export function parseRecordsConfig(raw: unknown): RecordsConfig {
  const errors: string[] = [];
  if (!isObj(raw)) throw new RecordsConfigError("records config: a YAML mapping");
  const fields = ["output", "state", "baseDomain", "prefixes", "interval", "timeout", "maxRecords", "port", "sources"];
  unknownKeys(raw, fields, "", errors);
  const output = typeof raw.output === "string" && raw.output.startsWith("/") ? raw.output : "";
  if (!output) errors.push("output: an absolute path (Headscale's dns.extra_records_path)");
  const baseDomain = typeof raw.baseDomain === "string" ? normalizeName(raw.baseDomain) : null;
  if (!baseDomain) errors.push("baseDomain: Headscale's dns.base_domain, a DNS name");
  const prefixes: Cidr[] = [];
  const rawPrefixes = raw.prefixes ?? DEFAULT_PREFIXES;
  if (!Array.isArray(rawPrefixes) || rawPrefixes.length === 0)
    errors.push("prefixes: a non-empty list of CIDR prefixes");
  else {
    for (const p of rawPrefixes) {
      const r = parseCidr(String(p));
      if (r.ok) prefixes.push(r.cidr);
      else errors.push(`prefixes: ${r.message}`);
    }
  }
  const intervalMs = raw.interval === undefined ? 15_000 : parseDuration(raw.interval);
  if (intervalMs === null || intervalMs < 1000) errors.push('interval: a duration of at least 1s ("15s", "1m")');
  const timeoutMs = raw.timeout === undefined ? 10_000 : parseDuration(raw.timeout);
  if (timeoutMs === null || timeoutMs < 100) errors.push('timeout: a duration of at least 100ms ("10s")');
  const maxRecords = raw.maxRecords ?? 10_000;
  if (!Number.isInteger(maxRecords) || (maxRecords as number) < 1) errors.push("maxRecords: a positive integer");
  const port = raw.port ?? 9091;
  if (!Number.isInteger(port) || (port as number) < 0 || (port as number) > 65535) errors.push("port: 0..65535");
  const state = raw.state === undefined ? undefined : raw.state;
  if (state !== undefined && !(typeof state === "string" && state.startsWith("/")))
    errors.push("state: an absolute path");
  const list = sources(raw.sources, baseDomain ?? "invalid", errors);
  if (errors.length) throw new RecordsConfigError(`records config:\n  ${errors.join("\n  ")}`);
  const file = output.slice(output.lastIndexOf("/") + 1);
  return {
    output,
    statePath: (state as string | undefined) ?? `${dirname(output)}/.${file}.state.json`,
    baseDomain: baseDomain as string,
    prefixes,
    intervalMs: intervalMs as number,
    timeoutMs: timeoutMs as number,
    maxRecords: maxRecords as number,
    port: port as number,
    sources: list,
  };
}

export function loadRecordsConfig(path: string): RecordsConfig {
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (e) {
    throw new RecordsConfigError(
      `records config ${path}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`,
    );
  }
  let raw: unknown;
  try {
    raw = parseYaml(text);
  } catch (e) {
    throw new RecordsConfigError(`records config ${path}: not YAML: ${(e as Error).message.split("\n")[0]}`);
  }
  return parseRecordsConfig(raw);
}
