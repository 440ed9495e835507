/** What every kind module implements, and what the server hands it. */
import type { FastifyBaseLogger } from "fastify";
import type { HookKind } from "../api/schemas.js";
import type { OperatorConfig } from "../config.js";
import type { AgentStatus } from "../contract/agent-status.js";
import type { HeadscaleViews } from "../headscale/view.js";
import type { K8sObject, ObjectMaps } from "../k8s/objects.js";
import type { ComposeMemo } from "../kinds/composite/tailnet/compose-memo.js";
import type { OperatorMetrics } from "../metrics/registry.js";

/** A Metacontroller sync/finalize request (v2 keys; v1 tolerated by reading metadata). */
export interface HookRequest {
  controller: Record<string, unknown>;
  parent: K8sObject;
  children: ObjectMaps;
  related: ObjectMaps;
  finalizing: boolean;
}

export interface CustomizeRequest {
  controller: Record<string, unknown>;
  parent: K8sObject;
}

/** A related-resources rule of the customize answer (names XOR selectors; namespace XOR namespaceSelector). */
export interface RelatedRule {
  apiVersion: string;
  resource: string;
  names?: string[];
  namespace?: string;
  labelSelector?: { matchLabels?: Record<string, string> };
  namespaceSelector?: { matchLabels?: Record<string, string> };
}

export interface SyncResult {
  status: Record<string, unknown>;
  children: K8sObject[];
  resyncAfterSeconds?: number;
}

export interface FinalizeResult extends SyncResult {
  finalized: boolean;
}

/** A Kubernetes Event the operator wants recorded (best effort). */
export interface OperatorEvent {
  regarding: K8sObject;
  reason: string;
  message: string;
  type: "Normal" | "Warning";
  /** The condition whose change this Event records (src/pipeline/condition-events.ts); unset for the others. */
  condition?: string;
}

export interface EventRecorder {
  record(event: OperatorEvent): Promise<void>;
}

export type ScrapeResult = { ok: true; pod: string; status: AgentStatus } | { ok: false; pod: string; error: string };

export interface AgentScraper {
  /**
   * GETs /status of each Pod (port named "metrics"), in parallel, with a short timeout; never throws. With
   * `names`, each agent also reports what its node's resolver answers for them (`status.names`).
   */
  scrape(pods: K8sObject[], names?: readonly string[]): Promise<ScrapeResult[]>;
}

/** Everything impure a kind may use, injected so tests and `render` swap them. */
export interface HookDeps {
  config: OperatorConfig;
  views: HeadscaleViews;
  now: () => Date;
  log: FastifyBaseLogger;
  metrics: OperatorMetrics;
  events: EventRecorder;
  scraper: AgentScraper;
  /** The Tailnet's compose memo, one per server (src/kinds/composite/tailnet/compose-memo.ts). */
  composeMemo: ComposeMemo;
}

export interface KindModule {
  hookKind: HookKind;
  customize(req: CustomizeRequest, deps: HookDeps): RelatedRule[];
  sync(req: HookRequest, deps: HookDeps): Promise<SyncResult>;
  finalize(req: HookRequest, deps: HookDeps): Promise<FinalizeResult>;
  /**
   * What the CRD schema cannot catch (duplicate names, host bits, overlaps), naming the field; the hook calls
   * it after schema validation and answers `invalid` when it returns a message, so `sync` sees valid specs only.
   */
  specProblem?(parent: K8sObject): string | undefined;
  /** The answer for a parent whose spec is invalid: observed children unchanged, InvalidSpec condition. */
  invalid(req: HookRequest, message: string, deps: HookDeps): SyncResult;
  /**
   * Of related groups (type keys), the only `status` members this kind reads (an empty list: none):
   * the hook body parser drops the others before JSON.parse (src/server/body.ts). A Tailnet sync
   * carries every workload object of the cluster; their conditions are most of what is left after
   * managedFields. Groups not named keep their statuses whole.
   */
  relatedStatusReads?: Readonly<Record<string, readonly string[]>>;
}
