/**
 * Pure decisions of an annotated Service. plan: which attachment it should have (or why none) and the
 * `Exposed` condition; decide: the labels, annotations and attachments of the answer.
 *
 * A refusal the user can fix on the Service (conflicting or invalid annotations, ports) drops the
 * attachment: the annotations say "do not expose this". A refusal that comes from the rest of the
 * cluster (the Tailnet missing or ambiguous) keeps an existing attachment as it is — a failed or
 * changed observation never drops a child — and only stops a new one from being made.
 */

import { conditionsOf, type TypedCondition } from "../../../conditions/table.js";
import { SERVICE_REASONS } from "../../../conditions/tables/service.js";
import { isOlder, sortByAge } from "../../../k8s/age.js";
import { jsonEqual } from "../../../k8s/json-equal.js";
import type { K8sObject } from "../../../k8s/objects.js";
import { LAST_APPLIED, qualifiedName, reuseObserved } from "../../../k8s/objects.js";
import type { Decision } from "../../../pipeline/run.js";
import { resolveTailnet } from "../../shared/annotations.js";
import { flatNamespacesOf } from "../../shared/dns-tenancy.js";
import { nameConflicts } from "../../shared/ingress-names.js";
import { isTenancyReason } from "../../shared/tenancy.js";
import { Annotation, Written } from "./annotations.js";
import { attachmentKind, serviceAttachment, targetAddress } from "./attachments.js";
import { exposureOf, loadBalancerStatus, readLoadBalancerSpec } from "./loadbalancer.js";
import type { ServiceObservation } from "./observe.js";
import { type ReadSpec, readServiceSpec, type ServiceSpec } from "./spec.js";

export const { cond } = conditionsOf(SERVICE_REASONS);
export type ExposedCondition = TypedCondition<typeof SERVICE_REASONS>;

export interface ServicePlan {
  /** The attachments the answer lists. */
  attachments: K8sObject[];
  exposed: ExposedCondition;
  /** Where clients reach it: expose → the ingress's DNS name once published, target → the egress Service. */
  address?: string;
}

/**
 * The pipeline's Decision: `children` are the attachments. `status` only for a LoadBalancer of our
 * class (its `loadBalancer` is ours then); an annotated Service's status is not ours.
 */
export interface ServiceDecision extends Decision {
  labels: Record<string, string | null>;
  annotations: Record<string, string | null>;
  conditions: readonly ExposedCondition[];
  status?: Record<string, unknown>;
}

const FAR_FUTURE = "9999-12-31T23:59:59Z";

function tailnetFor(
  named: string | undefined,
  tailnets: readonly K8sObject[],
): { tailnet: K8sObject } | { refusal: ExposedCondition } {
  const r = resolveTailnet(named, tailnets);
  return "tailnet" in r ? r : { refusal: cond("Exposed", "False", r.reason, r.message) };
}

const ownedBy = (o: K8sObject, service: K8sObject) =>
  !!service.metadata.uid && !!o.metadata.ownerReferences?.some((r) => r.uid === service.metadata.uid);

const readyOf = (o: K8sObject) =>
  (
    (o.status as { conditions?: { type: string; status: string; reason?: string; message?: string }[] } | undefined)
      ?.conditions ?? []
  ).find((c) => c?.type === "Ready");

export function planService(read: ReadSpec, observed: ServiceObservation): ServicePlan {
  if (!read.ok) {
    return { attachments: [], exposed: cond("Exposed", "False", read.refusal.reason, read.refusal.message) };
  }
  const spec = read.spec;
  const kept = observed.attachments.filter((o) => !o.metadata.deletionTimestamp).map(reuseObserved);
  const resolved = tailnetFor(spec.tailnet, observed.tailnets);
  if ("refusal" in resolved) return { attachments: kept, exposed: resolved.refusal };
  const tailnetName = resolved.tailnet.metadata.name;
  const desired = serviceAttachment(spec, tailnetName);
  const kind = attachmentKind(spec);
  const id = `${spec.namespace}/${spec.name}`;
  const same = (spec.role === "expose" ? observed.ingresses : observed.egresses).find((o) => qualifiedName(o) === id);
  if (same && !ownedBy(same, observed.service)) {
    return {
      attachments: [],
      exposed: cond(
        "Exposed",
        "False",
        "NameTaken",
        `${kind} ${id} already exists and was not made for this Service; rename or delete it`,
      ),
    };
  }
  const mine = observed.attachments.find((o) => o.metadata.name === spec.name);
  // No attachment while another claim holds the hostname: the older claimant keeps it.
  const hostnameTaken = (claimed: string): ServicePlan => ({
    attachments: [],
    exposed: cond(
      "Exposed",
      "False",
      "HostnameTaken",
      `hostname ${spec.hostname} ${claimed} in Tailnet ${tailnetName}; set ${Annotation.hostname}`,
    ),
  });
  if (spec.role === "expose") {
    const baseDomain = (resolved.tailnet.spec as { dns?: { baseDomain?: string } } | undefined)?.dns?.baseDomain;
    // The candidate keeps its age once it exists; before that every existing ingress is older.
    const candidate = {
      ...desired,
      metadata: { ...desired.metadata, creationTimestamp: mine?.metadata.creationTimestamp ?? FAR_FUTURE },
    };
    const flat = flatNamespacesOf(resolved.tailnet.spec);
    const taken = nameConflicts(candidate, observed.ingresses, baseDomain, flat);
    if (taken.length) {
      return hostnameTaken(`(${taken[0].name}) is already claimed by TailnetIngress ${taken[0].claimedBy}`);
    }
  }
  if (spec.role === "expose" && !mine) {
    const rival = olderRival(spec, tailnetName, observed);
    if (rival) return hostnameTaken(`is already claimed by the older Service ${qualifiedName(rival)}`);
  }
  return { attachments: [desired], exposed: mirror(spec, desired, mine), ...addressOf(spec, mine) };
}

/**
 * The oldest other exposed Service (annotated, or a LoadBalancer of our class) claiming the same
 * hostname in the same Tailnet, judged from
 * the Services themselves: two Services annotated in one apply are synced concurrently, before
 * either attachment exists, so judging by attachments alone would create the newer one's and
 * delete it a sync later. Only before our attachment exists; after that the older ingress wins.
 */
function olderRival(spec: ServiceSpec, tailnetName: string, observed: ServiceObservation): K8sObject | undefined {
  const self = observed.service;
  const rivals = observed.services.filter((s) => {
    if (s.metadata.uid === self.metadata.uid || s.metadata.deletionTimestamp || !isOlder(s, self)) return false;
    const via = exposureOf(s, observed.defaultLoadBalancerClass ?? false);
    if (!via) return false;
    const read = via === "class" ? readLoadBalancerSpec(s) : readServiceSpec(s, "expose");
    if (!read.ok || read.spec.hostname !== spec.hostname) return false;
    const resolved = tailnetFor(read.spec.tailnet, observed.tailnets);
    return "tailnet" in resolved && resolved.tailnet.metadata.name === tailnetName;
  });
  return sortByAge(rivals)[0];
}

function addressOf(spec: ServiceSpec, mine: K8sObject | undefined): { address?: string } {
  if (spec.role === "target") return { address: targetAddress(spec) };
  const dnsName = (mine?.status as { dnsName?: string } | undefined)?.dnsName;
  return dnsName ? { address: dnsName } : {};
}

/** The attachment's own Ready, repeated on the Service: Pending until it reports on what we asked for. */
function mirror(spec: ServiceSpec, desired: K8sObject, mine: K8sObject | undefined): ExposedCondition {
  const kind = attachmentKind(spec);
  const id = `${kind} ${spec.namespace}/${spec.name}`;
  if (spec.role === "target" && spec.type === "ExternalName") {
    const want = targetAddress(spec);
    if ((spec.externalName ?? "").replace(/\.$/, "") !== want) {
      return cond(
        "Exposed",
        "False",
        "ExternalNameMismatch",
        `spec.externalName is "${(spec.externalName ?? "").slice(0, 100)}"; set it to ${want} so that this Service leads to ${spec.target}`,
      );
    }
  }
  if (!mine) return cond("Exposed", "Unknown", "Pending", `${id} is being created`);
  // What we asked for last time (Metacontroller's last-applied annotation; absent with server-side
  // apply, where the generation check below still catches an update once it is applied). Compared
  // as values: Metacontroller writes it with Go's sorted keys, never in the order we build it.
  if (mine.metadata.annotations?.[LAST_APPLIED] && !jsonEqual(reuseObserved(mine).spec, desired.spec)) {
    return cond("Exposed", "Unknown", "Pending", `${id} is being updated`);
  }
  const gen = mine.metadata.generation;
  const seen = (mine.status as { observedGeneration?: number } | undefined)?.observedGeneration;
  const ready = readyOf(mine);
  if (!ready || (gen !== undefined && seen !== gen)) {
    return cond("Exposed", "Unknown", "Pending", `waiting for ${id} to report on its current spec`);
  }
  const why = `${id}: ${ready.reason ?? ""}${ready.message ? `: ${ready.message}` : ""}`;
  if (ready.status === "True") {
    if (spec.role === "expose") {
      const dnsName = (mine.status as { dnsName?: string }).dnsName;
      return cond("Exposed", "True", "Ready", `reachable on the tailnet as ${dnsName ?? spec.hostname}`);
    }
    return cond("Exposed", "True", "Ready", `${spec.target} reachable from the cluster at ${targetAddress(spec)}`);
  }
  if (ready.status === "False" && ready.reason === "DNSNameReserved") return reserved(spec, id, ready.message);
  // a tenancy refusal (tenancy.ts) is the Service's own: its annotations asked for the tag or the Tailnet
  if (ready.status === "False" && isTenancyReason(ready.reason)) {
    return cond("Exposed", "False", ready.reason, `${id}: ${ready.message ?? ""}`);
  }
  if (ready.status === "False") return cond("Exposed", "False", "NotReady", why);
  return cond("Exposed", "Unknown", "Pending", why);
}

export function decideService(role: "expose" | "target", plan: ServicePlan): ServiceDecision {
  const keys = Written[role];
  return {
    labels: { [keys.state]: plan.exposed.reason },
    annotations: { [keys.message]: plan.exposed.message, [keys.address]: plan.address ?? null },
    children: plan.attachments,
    conditions: [plan.exposed],
    fields: {},
  };
}

/** The decision of a Service of our class: the exposure's labels, annotations and attachment, and its status. */
export function decideLoadBalancer(plan: ServicePlan, observed: ServiceObservation): ServiceDecision {
  const service = observed.service;
  const mine = observed.attachments.find((o) => o.metadata.name === service.metadata.name);
  // an attachment the plan drops (a refusal the user can fix) takes its addresses with it
  const kept = plan.attachments.length > 0 ? mine : undefined;
  return {
    ...decideService("expose", plan),
    status: loadBalancerStatus(service, plan.exposed.status === "True", kept),
  };
}

/** Finalize (the annotation removed, or the Service deleted): no attachment, nothing written back. */
export function decideServiceFinalize(role: "expose" | "target", observed: ServiceObservation) {
  const keys = Written[role];
  return {
    labels: { [keys.state]: null },
    annotations: { [keys.message]: null, [keys.address]: null },
    attachments: [],
    finalized: observed.attachments.length === 0,
  };
}

/**
 * The attachment refuses its name because a Headscale node holds it (shared/dns-owners.ts). Only the
 * attachment reads the node list, so it stays (publishing nothing under that name); the Service says
 * which annotation fixes it.
 */

function reserved(spec: ServiceSpec, id: string, message: string | undefined): ExposedCondition {
  return cond(
    "Exposed",
    "False",
    "HostnameReserved",
    `hostname ${spec.hostname} is the name of another machine (${id}: ${message ?? ""}); nothing is published under it: set ${Annotation.hostname}`,
  );
}
