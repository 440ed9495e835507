/**
 * What a Tailnet sync reads from `related` (pure), by what its spec (spec.ts) names: the Headscale connection
 * from the Secrets the spec names, the base policy from its ConfigMap, every workload object that
 * references this Tailnet, and the DNS Service IPs of its gateways (for the split-DNS advice).
 */
import { API_VERSION } from "../../../api/schemas.js";
import type { HsNode } from "../../../headscale/types.js";
import type { HeadscaleConnection } from "../../../headscale/view.js";
import { findObject, type K8sObject, type ObjectMaps, typeKey } from "../../../k8s/objects.js";
import { isIp } from "../../../net/cidr.js";
import { keptTagIndex } from "../../shared/kept-tags.js";
import { sourcesOutside } from "../../shared/routes.js";
import { secretValue } from "../../shared/secrets.js";
import { tailnetRefName } from "../../shared/tailnet-ref.js";
import { admitExitNode, admitObject, tagTakenFromTailnet } from "../../shared/tenancy.js";
import { effectiveTag } from "../../shared/workload.js";
import { readTailnetSpec, type TailnetSpec } from "./spec.js";

/** The base policy: none configured, configured but not readable, or its HuJSON text. */
export type BaseInput =
  | { kind: "none" }
  | { kind: "missing"; message: string }
  | { kind: "text"; text: string; source: string };

/** The connection, or why there is none (then no Headscale call is made). */
export type ConnectionInput =
  | { ok: true; conn: HeadscaleConnection; caMissing?: string }
  | { ok: false; message: string };

export interface TailnetInputs extends TailnetSpec {
  connection: ConnectionInput;
  base: BaseInput;
  egresses: K8sObject[];
  ingresses: K8sObject[];
  sites: K8sObject[];
  gateways: K8sObject[];
  /** "namespace/name" of the gateways whose spec.exitNode the tenancy admits (tenancy.ts admitExitNode). */
  exitNodeGateways: ReadonlySet<string>;
  /** status.dnsServiceIP of this Tailnet's gateways, sorted and unique. */
  dnsServiceIPs: string[];
  /** The legacy tags its objects kept (kept-tags.ts keptTagIndex), published so twins' own syncs refuse them. */
  keptLegacyTags: string[];
}

const record = (v: unknown): Record<string, unknown> =>
  v && typeof v === "object" && !Array.isArray(v) ? (v as Record<string, unknown>) : {};

function readConnection(spec: TailnetSpec, related: ObjectMaps): ConnectionInput {
  const keyRef = spec.apiKeyRef;
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
  return connectionFor(spec, related, apiKey);
}

/** The connection with `apiKey` (the spec's, or the operator's renewed one) and the CA the spec names. */
export function connectionFor(spec: TailnetSpec, related: ObjectMaps, apiKey: string): ConnectionInput {
  const url = spec.settings.url;
  const caRef = spec.caRef;
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

function readBase(spec: TailnetSpec, related: ObjectMaps): BaseInput {
  const ref = spec.baseRef;
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
 * The Tailnet's objects of one kind that its tenancy admits (tenancy.ts admitObject): a refused namespace
 * or an ungranted tag renders nothing into the policy — no tagOwners entry, no grant. Sorted by
 * namespace/name in code-unit order (not `localeCompare`, which costs milliseconds over thousands of objects).
 */
function workloadsOf(related: ObjectMaps, kind: string, spec: TailnetSpec): K8sObject[] {
  const group = related[typeKey(API_VERSION, kind)] ?? {};
  const keyed: [string, K8sObject][] = [];
  for (const o of Object.values(group)) {
    if (!o?.metadata?.name || tailnetRefName(o) !== spec.name) continue;
    if (admitObject(o, spec.settings.tenancy, related)) continue;
    keyed.push([qualified(o), o]);
  }
  keyed.sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
  return keyed.map(([, o]) => o);
}

/**
 * What the spec names in `related`, read once per sync. An object whose fresh derived tag another object kept
 * from before the upgrade (kept-tags.ts keptTagTwins) renders nothing: the tag stays the keeper's.
 */
export function inputsOf(spec: TailnetSpec, related: ObjectMaps): TailnetInputs {
  const lists = {
    egresses: workloadsOf(related, "TailnetEgress", spec),
    ingresses: workloadsOf(related, "TailnetIngress", spec),
    sites: workloadsOf(related, "TailnetSite", spec),
    gateways: workloadsOf(related, "TailnetGateway", spec),
  };
  // one pass: the twins render nothing, the kept tags go to status.keptLegacyTags (kept-tags.ts keptTagRefusal)
  const { twins, tags: keptLegacyTags } = keptTagIndex(Object.values(lists).flat(), spec.settings.tagPrefix);
  const kept = (list: K8sObject[]) => (twins.size ? list.filter((o) => !twins.has(`${o.kind}/${qualified(o)}`)) : list);
  const gateways = kept(lists.gateways);
  const dnsServiceIPs = [
    ...new Set(
      gateways.flatMap((g) => {
        const ip = record(g.status).dnsServiceIP;
        return typeof ip === "string" && isIp(ip) ? [ip] : [];
      }),
    ),
  ].sort();
  // the rules the gateway's own sync applies (gateway/exit.ts exitNodeState): the tenancy admits it, and
  // its allowFrom lies within allowedIngressSources (shared/routes.ts)
  const exitNodeGateways = new Set(
    gateways
      .filter((g) => {
        const exit = record(g.spec).exitNode;
        if (exit === undefined || admitExitNode(g, spec.settings.tenancy, related)) return false;
        const allowFrom = record(exit).allowFrom;
        const list = Array.isArray(allowFrom) ? allowFrom.filter((a): a is string => typeof a === "string" && !!a) : [];
        return sourcesOutside(list, spec.settings.allowedIngressSources).length === 0;
      })
      .map(qualified),
  );
  return {
    ...spec,
    connection: readConnection(spec, related),
    base: readBase(spec, related),
    egresses: kept(lists.egresses),
    ingresses: kept(lists.ingresses),
    sites: kept(lists.sites),
    gateways,
    exitNodeGateways,
    dnsServiceIPs,
    keptLegacyTags,
  };
}

/**
 * The inputs without the objects their own sync refuses as TagInUse (tenancy.ts tagTakenFromTailnet: an
 * explicit tag a node they did not register carries), judged on Headscale's node list: a refused object
 * renders nothing, so a tenant's allowFrom never opens an admin's node carrying the tenant's granted tag.
 */
export function ownedInputs(inputs: TailnetInputs, nodes: readonly HsNode[]): TailnetInputs {
  const { tagPrefix, authKeyTTLSeconds } = inputs.settings;
  const owned = (list: K8sObject[]) =>
    list.filter((o) => tagTakenFromTailnet(o, effectiveTag(o, tagPrefix), nodes, authKeyTTLSeconds).length === 0);
  const egresses = owned(inputs.egresses);
  const ingresses = owned(inputs.ingresses);
  const gateways = owned(inputs.gateways);
  const same = egresses.length === inputs.egresses.length && ingresses.length === inputs.ingresses.length;
  if (same && gateways.length === inputs.gateways.length) return inputs;
  return { ...inputs, egresses, ingresses, gateways };
}

/** The spec and what it names in `related` (tests, benches). */
export function readInputs(parent: K8sObject, related: ObjectMaps): TailnetInputs {
  return inputsOf(readTailnetSpec(parent), related);
}
