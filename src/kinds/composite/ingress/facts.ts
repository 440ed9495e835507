/**
 * What a TailnetIngress sync saw, in the words plan and decide share: the Tailnet as resolved (or why not),
 * the Headscale reads, the agent scrapes and the related objects; and the key ids the ingress minted.
 */
import type { OperatorConfig } from "../../../config.js";
import type { Obs } from "../../../headscale/errors.js";
import type { HsNode, HsPolicy, HsPreAuthKey } from "../../../headscale/types.js";
import type { K8sObject } from "../../../k8s/objects.js";
import type { ScrapeResult } from "../../../pipeline/types.js";
import type { ReplicaObservation } from "../../shared/agent-replicas.js";
import { observedKeys } from "../../shared/authkey.js";
import type { ProxyClassSpec } from "../../shared/proxy-class.js";
import { ownKeyIds, type TenancyReason } from "../../shared/tenancy.js";
import type { TailnetSettings } from "../../shared/workload.js";
import type { GrantsSeen } from "./permitted.js";

/**
 * The Tailnet as decide sees it: resolved (with the login server), or why not. Without credentials
 * (NoAPIKey) the Tailnet itself was found, so its settings (tag prefix, baseDomain, allowed sources)
 * are known; without the Tailnet (NoTailnet) nothing is.
 */
export type TailnetView =
  | { ok: true; settings: TailnetSettings; loginServer: string; ca?: string; proxyClass?: ProxyClassSpec }
  | { ok: false; reason: "NoAPIKey" | "ProxyClassMissing" | TenancyReason; message: string; settings: TailnetSettings }
  | { ok: false; reason: "NoTailnet"; message: string };

export const settingsOf = (t: TailnetView): TailnetSettings | undefined =>
  t.ok || t.reason !== "NoTailnet" ? t.settings : undefined;

/** What observe saw (I/O done; failures are values). */
export interface IngressFacts {
  parent: K8sObject;
  config: OperatorConfig;
  /** Observed children, reused as they are when they may not be rebuilt. */
  children: K8sObject[];
  tailnet: TailnetView;
  /** Headscale reads; undefined when Headscale was not queried (no Tailnet or no credentials). */
  policy?: Obs<HsPolicy | null>;
  nodes?: Obs<HsNode[]>;
  /** Headscale's key list (masked): the older keys are expired once the stable Secret is proven newer. */
  keys?: Obs<HsPreAuthKey[]>;
  /** Its replicas: state Secrets' device_id, StatefulSets, pods, the status record, the legacy Deployment. */
  replicas: ReplicaObservation;
  scrapes: ScrapeResult[];
  /** The related Secrets of the ingress's namespace by name (its TLS Secrets and its Certificates' Secrets). */
  tlsSecrets: ReadonlyMap<string, K8sObject>;
  /**
   * Whether Metacontroller watches cert-manager Certificates as children (the sync request carries their type,
   * shared/certificates.ts CERTIFICATE_CHILD_KEY); without it, an issuerRef is refused with CertManagerMissing.
   */
  certificatesWatched?: boolean;
  /** Names of the related backend Services that exist. */
  services: ReadonlySet<string>;
  /** Every TailnetIngress (name conflicts). */
  ingresses: K8sObject[];
  /** ReferenceGrants and routes that may give a backend in another namespace (permitted.ts). */
  backendGrants: GrantsSeen;
  /** The key ids the ingress minted, when observe read Headscale's key list (adoption, ownKeyIds). */
  ownKeys?: ReadonlySet<string>;
  /** LeftOutOfPolicy's message: the Tailnet left this ingress's grant out of the policy. */
  leftOut?: string;
  now: Date;
}

/** The key ids this ingress minted: status.preAuthKeyIds and its key Secrets (tenancy.ts ownKeyIds). */
export function ingressOwnKeys(parent: K8sObject, children: readonly K8sObject[], tag: string): Set<string> {
  const secretIds = observedKeys(children).map((k) => k.keyId);
  return ownKeyIds(parent, tag, secretIds, undefined);
}
