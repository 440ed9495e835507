/**
 * What a Tailnet sync reads from its own spec and from `related` (pure): the Headscale connection
 * from the Secrets the spec names, the base policy from its ConfigMap, every workload object that
 * references this Tailnet, and the DNS Service IPs of its gateways (for the split-DNS advice).
 */
import { API_VERSION } from "../../api/schemas.js";
import type { HeadscaleConnection } from "../../headscale/view.js";
import { findObject, type K8sObject, type ObjectMaps, typeKey } from "../../k8s/objects.js";
import { isIp, parseCidr, parseCidrOrIp } from "../../net/cidr.js";
import { isValidTag } from "../../policy/generated.js";
import { tailnetRefName } from "../related.js";
import { secretValue } from "../shared/secrets.js";
import { type TailnetSettings, tailnetSettings } from "../shared/workload.js";

export interface ObjectRef {
  namespace: string;
  name: string;
  key: string;
}

/** The base policy: none configured, configured but not readable, or its HuJSON text. */
export type BaseInput =
  | { kind: "none" }
  | { kind: "missing"; message: string }
  | { kind: "text"; text: string; source: string };

/** The connection, or why there is none (then no Headscale call is made). */
export type ConnectionInput =
  | { ok: true; conn: HeadscaleConnection; caMissing?: string }
  | { ok: false; message: string };

export interface TailnetInputs {
  name: string;
  settings: TailnetSettings;
  /** Tailnet.spec.policy.tagOwners. */
  tagOwners: string[];
  /** Tailnet.spec.policy.replaceLivePolicy: without a base, a live policy the operator did not write may go. */
  replaceLivePolicy: boolean;
  /** Tailnet.spec.dns.splitDNS.domains; [] when split DNS is not requested. */
  splitDNSDomains: string[];
  connection: ConnectionInput;
  base: BaseInput;
  egresses: K8sObject[];
  ingresses: K8sObject[];
  sites: K8sObject[];
  gateways: K8sObject[];
  /** status.dnsServiceIP of this Tailnet's gateways, sorted and unique. */
  dnsServiceIPs: string[];
}

type Spec = Record<string, unknown>;
const record = (v: unknown): Spec => (v && typeof v === "object" && !Array.isArray(v) ? (v as Spec) : {});
const strings = (v: unknown): string[] => (Array.isArray(v) ? v.filter((x): x is string => typeof x === "string") : []);

/** A `{namespace, name, key}` reference with the key defaulted; undefined when namespace or name is missing. */
export function refOf(value: unknown, defaultKey: string): ObjectRef | undefined {
  const r = record(value);
  if (typeof r.namespace !== "string" || !r.namespace || typeof r.name !== "string" || !r.name) return undefined;
  return { namespace: r.namespace, name: r.name, key: typeof r.key === "string" && r.key ? r.key : defaultKey };
}

function readConnection(spec: Spec, related: ObjectMaps, url: string): ConnectionInput {
  const hs = record(spec.headscale);
  const keyRef = refOf(hs.apiKeySecretRef, "apiKey");
  if (!keyRef) return { ok: false, message: "spec.headscale.apiKeySecretRef names no Secret" };
  const keySecret = findObject(related, "v1", "Secret", keyRef.name, keyRef.namespace);
  if (!keySecret) {
    return {
      ok: false,
      message: `Secret ${keyRef.namespace}/${keyRef.name} (spec.headscale.apiKeySecretRef) not found; no Headscale call is made`,
    };
  }
  const apiKey = secretValue(keySecret, keyRef.key)?.trim();
  if (!apiKey) {
    return {
      ok: false,
      message: `Secret ${keyRef.namespace}/${keyRef.name} has no key "${keyRef.key}" (spec.headscale.apiKeySecretRef); no Headscale call is made`,
    };
  }
  const caRef = refOf(hs.caSecretRef, "ca.crt");
  if (!caRef) return { ok: true, conn: { url, apiKey } };
  const ca = secretValue(findObject(related, "v1", "Secret", caRef.name, caRef.namespace), caRef.key);
  if (ca) return { ok: true, conn: { url, apiKey, ca } };
  // Without its CA the connection falls back to the system trust store; say why if TLS then fails.
  return {
    ok: true,
    conn: { url, apiKey },
    caMissing: `CA Secret ${caRef.namespace}/${caRef.name} (key "${caRef.key}", spec.headscale.caSecretRef) not found`,
  };
}

function readBase(spec: Spec, related: ObjectMaps): BaseInput {
  const ref = refOf(record(spec.policy).baseConfigMapRef, "policy.hujson");
  if (!ref) return { kind: "none" };
  const cm = findObject(related, "v1", "ConfigMap", ref.name, ref.namespace);
  if (!cm) {
    return {
      kind: "missing",
      message: `ConfigMap ${ref.namespace}/${ref.name} (spec.policy.baseConfigMapRef) not found`,
    };
  }
  const text = record(cm.data)[ref.key];
  if (typeof text !== "string") {
    return {
      kind: "missing",
      message: `ConfigMap ${ref.namespace}/${ref.name} has no key "${ref.key}" (spec.policy.baseConfigMapRef)`,
    };
  }
  return { kind: "text", text, source: `${ref.namespace}/${ref.name}` };
}

const qualified = (o: K8sObject) => `${o.metadata.namespace ?? ""}/${o.metadata.name}`;

/**
 * Related objects of one workload kind that reference the Tailnet `name`, sorted by namespace/name
 * in code-unit order (not `localeCompare`, which costs milliseconds over thousands of objects).
 */
function workloadsOf(related: ObjectMaps, kind: string, name: string): K8sObject[] {
  const group = related[typeKey(API_VERSION, kind)] ?? {};
  const keyed: [string, K8sObject][] = [];
  for (const o of Object.values(group)) {
    if (o?.metadata?.name && tailnetRefName(o) === name) keyed.push([qualified(o), o]);
  }
  keyed.sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
  return keyed.map(([, o]) => o);
}

export function readInputs(parent: K8sObject, related: ObjectMaps): TailnetInputs {
  const spec = record(parent.spec);
  const settings = tailnetSettings(parent);
  const name = parent.metadata.name;
  const gateways = workloadsOf(related, "TailnetGateway", name);
  const dnsServiceIPs = [
    ...new Set(
      gateways.flatMap((g) => {
        const ip = record(g.status).dnsServiceIP;
        return typeof ip === "string" && isIp(ip) ? [ip] : [];
      }),
    ),
  ].sort();
  return {
    name,
    settings,
    tagOwners: strings(record(spec.policy).tagOwners),
    replaceLivePolicy: record(spec.policy).replaceLivePolicy === true,
    splitDNSDomains: [...new Set(strings(record(record(spec.dns).splitDNS).domains))].sort(),
    connection: readConnection(spec, related, settings.url),
    base: readBase(spec, related),
    egresses: workloadsOf(related, "TailnetEgress", name),
    ingresses: workloadsOf(related, "TailnetIngress", name),
    sites: workloadsOf(related, "TailnetSite", name),
    gateways,
    dnsServiceIPs,
  };
}

/**
 * A Tailnet spec problem the CRD schema cannot express (api.md "Invalid input"), naming the field;
 * undefined when none. The server already checks reservedNetworks; this adds allowedEgressTargets,
 * whose entries the policy collector would otherwise silently ignore.
 */
export function tailnetSpecProblem(parent: K8sObject): string | undefined {
  const targets = record(parent.spec).allowedEgressTargets;
  if (!Array.isArray(targets)) return undefined;
  for (const [i, raw] of targets.entries()) {
    const v = String(raw).trim();
    if (v.startsWith("tag:")) {
      if (!isValidTag(v)) return `spec.allowedEgressTargets[${i}]: ${JSON.stringify(v)} is not a valid tag`;
      continue;
    }
    if (v.includes("/")) {
      const r = parseCidr(v);
      if (!r.ok) return `spec.allowedEgressTargets[${i}]: ${r.message}`;
      continue;
    }
    if (!parseCidrOrIp(v)) {
      return `spec.allowedEgressTargets[${i}]: ${JSON.stringify(v)} is neither a CIDR, an IP address nor a tag`;
    }
  }
  return undefined;
}
