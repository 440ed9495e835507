/**
 * decide for a TailnetIngress (pure): observations in, children + conditions + status fields out.
 * Ready repeats the first blocker: NoTailnet / NoAPIKey, TagUnknown, InvalidDNSName,
 * DNSNameConflict, then Registered, PolicyGranted, TLSReady, BackendsReachable (reasons page order).
 */
import { type Blocker, blockerFrom, type ConditionInput, cond, deriveReady } from "../../conditions/condition.js";
import { IngressReason } from "../../conditions/reasons.js";
import type { OperatorConfig } from "../../config.js";
import type { HsNode, HsPolicy } from "../../headscale/types.js";
import type { Obs } from "../../headscale/view.js";
import { type K8sObject, reuseObserved } from "../../k8s/objects.js";
import { agentName, listNames, registeredCondition, tagKnownCondition } from "../shared/agent.js";
import { type AuthKeyOutcome, type AuthKeyPlan, decideAuthKey, observedKeys } from "../shared/authkey.js";
import { type IngressNames, ingressNames, nameConflicts } from "../shared/ingress-names.js";
import { effectiveTag, type TailnetSettings } from "../shared/workload.js";
import type { ScrapeResult } from "../types.js";
import { backendsCondition } from "./backends.js";
import { ingressChildren } from "./children.js";
import type { IngressSpec } from "./spec.js";
import { tlsCondition } from "./tls.js";

/** The Tailnet as decide sees it: resolved (with the login server), or why not (NoTailnet / NoAPIKey). */
export type TailnetView =
  | { ok: true; settings: TailnetSettings; loginServer: string; ca?: string }
  | {
      ok: false;
      reason: typeof IngressReason.NoTailnet | typeof IngressReason.NoAPIKey;
      message: string;
      settings?: TailnetSettings;
    };

export interface IngressInput {
  parent: K8sObject;
  config: OperatorConfig;
  spec: IngressSpec;
  /** Observed children, reused as they are when they may not be rebuilt. */
  children: K8sObject[];
  tailnet: TailnetView;
  /** Headscale reads; undefined when Headscale was not queried (no Tailnet or no credentials). */
  policy?: Obs<HsPolicy | null>;
  nodes?: Obs<HsNode[]>;
  scrapes: ScrapeResult[];
  /** The related Secrets of the ingress's namespace by name (its TLS Secrets). */
  tlsSecrets: ReadonlyMap<string, K8sObject>;
  /** Names of the related backend Services that exist. */
  services: ReadonlySet<string>;
  /** Every TailnetIngress (name conflicts). */
  ingresses: K8sObject[];
  /** The pre-auth key after act (see planAuthKey). */
  authKey: AuthKeyOutcome;
  now: Date;
}

export interface IngressStatusFields {
  tag?: string;
  dnsName?: string;
  exposes: { name: string; dnsName?: string; dnsAliases: string[]; reachable?: boolean }[];
}

export interface IngressDecision {
  children: K8sObject[];
  conditions: ConditionInput[];
  status: IngressStatusFields;
  /** Per expose (spec order): reachability as observed, for tailnet_ingress_expose_reachable. */
  exposes: { name: string; reachable: boolean | undefined }[];
  /** Expiry of the pre-auth key in use (tailnet_auth_key_expiry_timestamp_seconds). */
  authKeyExpiresAt?: Date;
  resyncAfterSeconds?: number;
}

/** While something outside the operator is awaited (registration, policy, agent, Headscale). */
export const WAIT_RESYNC_SECONDS = 30;
const MIN_RESYNC_SECONDS = 5;

/**
 * The pre-auth key plan and whether it may be carried out: Headscale is written only when the
 * Tailnet resolved and the reads of this sync succeeded (a failed observation never writes).
 */
export function planAuthKey(input: Pick<IngressInput, "children" | "tailnet" | "policy" | "nodes" | "now">): {
  plan: AuthKeyPlan;
  write: boolean;
} {
  const plan = decideAuthKey(input.children, input.now);
  const write = input.tailnet.ok && input.policy?.ok === true && input.nodes?.ok === true;
  return { plan, write };
}

const explicitTag = (parent: K8sObject): string | undefined => {
  const tag = (parent.spec as { tag?: unknown } | undefined)?.tag;
  return typeof tag === "string" && tag ? tag : undefined;
};

/** Unknown with the Ready reason that explains it (NoTailnet / NoAPIKey), as the egress kind does. */
const notEvaluated = (type: string, tailnet: TailnetView) =>
  tailnet.ok
    ? cond(type, "Unknown", IngressReason.Unknown, "not evaluated")
    : cond(type, "Unknown", tailnet.reason, `not evaluated: ${tailnet.message}`);

function policyGranted(spec: IngressSpec, tailnet: TailnetView, tag: string | undefined): ConditionInput {
  const settings = tailnet.settings;
  if (!settings || !tag) return notEvaluated("PolicyGranted", tailnet);
  const denied = spec.allowFrom.filter((a) => !settings.allowedIngressSources.includes(a));
  if (denied.length > 0) {
    return cond(
      "PolicyGranted",
      "False",
      IngressReason.PolicyDenied,
      `allowFrom ${denied.join(", ")} ${denied.length === 1 ? "is" : "are"} not in Tailnet ${settings.name}'s allowedIngressSources, so no grant to ${tag} is rendered`,
    );
  }
  if (spec.allowFrom.length === 0) {
    return cond(
      "PolicyGranted",
      "True",
      IngressReason.Granted,
      `allowFrom is empty: no grant to ${tag} is rendered; only the base policy gives access`,
    );
  }
  const ports = [...new Set(spec.exposes.map((e) => e.port))].sort((a, b) => a - b).map((p) => `tcp:${p}`);
  const dryRun = settings.policyMode === "DryRun" ? " (the Tailnet is in DryRun: rendered, not applied)" : "";
  return cond(
    "PolicyGranted",
    "True",
    IngressReason.Granted,
    `${spec.allowFrom.join(", ")} may connect to ${tag} on ${ports.join(", ")}${dryRun}`,
  );
}

function namesBlockers(names: IngressNames | undefined, conflicts: { name: string; claimedBy: string }[]): Blocker[] {
  const invalid = names?.invalidAt ?? [];
  return [
    {
      ok: invalid.length === 0,
      reason: IngressReason.InvalidDNSName,
      message: `not a DNS label: ${listNames(invalid.map((i) => `${i.field} "${i.label}"`))} (a host or alias is one lower-case label; the Tailnet's baseDomain is appended); nothing is published`,
    },
    {
      ok: conflicts.length === 0,
      reason: IngressReason.DNSNameConflict,
      message: `already claimed by an older TailnetIngress: ${listNames(conflicts.map((c) => `${c.name} (${c.claimedBy})`))}; these names are not published for this ingress`,
    },
  ];
}

/** Seconds until the next moment the answer would change by itself, or undefined. */
function resyncAfter(waiting: boolean, due: (Date | undefined)[], now: Date): number | undefined {
  const candidates = waiting ? [WAIT_RESYNC_SECONDS] : [];
  for (const d of due) {
    if (!d) continue;
    const s = Math.ceil((d.getTime() - now.getTime()) / 1000);
    candidates.push(s > 0 ? Math.max(s, MIN_RESYNC_SECONDS) : WAIT_RESYNC_SECONDS);
  }
  return candidates.length ? Math.min(...candidates) : undefined;
}

/** When the key in use reaches half its lifetime (rotation time). */
function rotationDue(authKey: AuthKeyOutcome): Date | undefined {
  const [key] = observedKeys(authKey.secret ? [authKey.secret] : []);
  if (!key) return undefined;
  return new Date(key.createdAt.getTime() + (key.expiresAt.getTime() - key.createdAt.getTime()) / 2);
}

export function decideIngress(input: IngressInput): IngressDecision {
  const { parent, spec, tailnet, now } = input;
  const namespace = parent.metadata.namespace ?? "";
  const settings = tailnet.settings;
  const tag = settings ? effectiveTag(parent, settings.tagPrefix) : explicitTag(parent);
  const names = settings ? ingressNames(parent, settings.baseDomain) : undefined;
  const conflicts = settings ? nameConflicts(parent, input.ingresses, settings.baseDomain) : [];
  const why = tailnet.ok ? "" : tailnet.message;

  const tagKnown =
    tailnet.ok && input.policy && tag ? tagKnownCondition(input.policy, tag) : notEvaluated("TagKnown", tailnet);
  const keyNote = input.authKey.error
    ? `no pre-auth key could be created (${input.authKey.error})`
    : input.authKey.secret
      ? undefined
      : "no pre-auth key yet";
  const registered =
    tailnet.ok && input.nodes && tag
      ? registeredCondition(input.nodes, tag, keyNote)
      : notEvaluated("Registered", tailnet);
  const granted = policyGranted(spec, tailnet, tag);
  // Without the Tailnet the names (its baseDomain) are unknown, so certificates cannot be checked.
  const tls =
    names || spec.mode === "tcp"
      ? tlsCondition(
          spec,
          namespace,
          input.tlsSecrets,
          names ? (i) => [names.exposes[i].dnsName, ...names.exposes[i].dnsAliases] : undefined,
          now,
        )
      : { condition: notEvaluated("TLSReady", tailnet), nextExpiry: undefined };
  const backends = backendsCondition(spec, namespace, agentName(parent), input.scrapes, input.services);

  const exposeNames = spec.exposes.map((e) => e.name);
  const ready = deriveReady(
    [
      { ok: tailnet.ok, reason: tailnet.ok ? "" : tailnet.reason, message: why },
      { ok: tagKnown.status === "True", reason: IngressReason.TagUnknown, message: tagKnown.message },
      ...namesBlockers(names, conflicts),
      blockerFrom(registered),
      blockerFrom(granted),
      blockerFrom(tls.condition),
      blockerFrom(backends.condition),
    ],
    IngressReason.Ready,
    `serving ${listNames(exposeNames)} on ${names?.dnsName ?? spec.hostname}`,
  );

  const children =
    tailnet.ok && tag && names
      ? ingressChildren(parent, input.config, spec, {
          tag,
          loginServer: tailnet.loginServer,
          names: names.exposes,
          authKeySecret: input.authKey.secret,
          ca: tailnet.ca,
          observedDeployment: input.children.find(
            (c) => c.kind === "Deployment" && c.metadata.name === agentName(parent) && !c.metadata.deletionTimestamp,
          ),
        })
      : input.children.filter((c) => !c.metadata.deletionTimestamp).map(reuseObserved);

  const lost = new Set(conflicts.map((c) => c.name));
  const published = (n: string) => !!names && names.invalid.length === 0 && !lost.has(n);
  const status: IngressStatusFields = {
    ...(tag ? { tag } : {}),
    ...(names && published(names.dnsName) ? { dnsName: names.dnsName } : {}),
    exposes: spec.exposes
      .map((e, i) => {
        const n = names?.exposes[i];
        const reachable = backends.reachable.get(e.name);
        return {
          name: e.name,
          ...(n && published(n.dnsName) ? { dnsName: n.dnsName } : {}),
          dnsAliases: (n?.dnsAliases ?? []).filter(published),
          ...(reachable === undefined ? {} : { reachable }),
        };
      })
      .sort((a, b) => a.name.localeCompare(b.name)),
  };

  const waiting = tagKnown.status !== "True" || registered.status !== "True" || backends.condition.status !== "True";
  return {
    children,
    conditions: [tagKnown, granted, registered, backends.condition, tls.condition, ready],
    status,
    exposes: spec.exposes.map((e) => ({ name: e.name, reachable: backends.reachable.get(e.name) })),
    authKeyExpiresAt: input.authKey.expiresAt,
    // Without a Tailnet there is nothing to poll: Metacontroller syncs again when it appears.
    resyncAfterSeconds: resyncAfter(waiting && tailnet.ok, [rotationDue(input.authKey), tls.nextExpiry], now),
  };
}
