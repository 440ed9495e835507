/**
 * Pure decisions of an Ingress. plan: is it ours, which attachment it should have (or why none), the
 * `Exposed` condition and the `status.loadBalancer` to write; decide: the labels, annotations,
 * attachments and status of the answer.
 *
 * An Ingress of another class that we never managed gets an empty answer and a null status:
 * Metacontroller then writes nothing to it (pkg/controller/decorator/controller.go syncParentObject
 * updates the object only when labels, annotations or status change). One we managed before (our
 * label is on it) is released: the label, annotation and attachment go, and the status is cleared
 * only while it still is the one we wrote.
 *
 * As for annotated Services: a refusal the user can fix on the Ingress drops the attachment; one that
 * comes from the rest of the cluster (the Tailnet missing or ambiguous, a Service not yet there to
 * resolve a named port) keeps an existing attachment as it is.
 */
import { conditionsOf, type TypedCondition } from "../../../conditions/table.js";
import { INGRESS_CLASS_REASONS } from "../../../conditions/tables/ingress-class.js";
import { jsonEqual } from "../../../k8s/json-equal.js";
import type { K8sObject } from "../../../k8s/objects.js";
import { LAST_APPLIED, qualifiedName, reuseObserved } from "../../../k8s/objects.js";
import type { Decision } from "../../../pipeline/run.js";
import { WorkloadAnnotation as Annotation, resolveTailnet } from "../../shared/annotations.js";
import { flatNamespacesOf, zoneOf } from "../../shared/dns-tenancy.js";
import { nameConflicts } from "../../shared/ingress-names.js";
import { isTenancyReason } from "../../shared/tenancy.js";
import { HTTPS_PORT, ingressAttachment } from "./attachment.js";
import type { IngressClassObservation } from "./observe.js";
import { ingressClassOf, ourClasses, readIngress } from "./spec.js";
import { Written } from "./written.js";

export const { cond } = conditionsOf(INGRESS_CLASS_REASONS);
export type ExposedCondition = TypedCondition<typeof INGRESS_CLASS_REASONS>;

/** Ingress.status as the answer sets it; null leaves the Ingress's status as it is. */
export type IngressStatus = { loadBalancer: { ingress?: Record<string, unknown>[] } } | null;

export interface IngressClassPlan {
  /** "ours": our class; "released": not ours but managed before; "foreign": never ours, nothing to write. */
  role: "ours" | "released" | "foreign";
  attachments: K8sObject[];
  exposed?: ExposedCondition;
  status: IngressStatus;
}

export interface IngressClassDecision extends Decision {
  labels: Record<string, string | null>;
  annotations: Record<string, string | null>;
  status: IngressStatus;
  conditions: readonly ExposedCondition[];
}

const FAR_FUTURE = "9999-12-31T23:59:59Z";

const ownedBy = (o: K8sObject, owner: K8sObject) =>
  !!owner.metadata.uid && !!o.metadata.ownerReferences?.some((r) => r.uid === owner.metadata.uid);

type IngressTiStatus = {
  dnsName?: string;
  exposes?: { dnsName?: string }[];
  observedGeneration?: number;
  conditions?: { type: string; status: string; reason?: string; message?: string }[];
};
const tiStatus = (o: K8sObject | undefined) => (o?.status ?? {}) as IngressTiStatus;

/**
 * `status.loadBalancer.ingress` from the attachment: each published name (the exposes' DNS names, in
 * spec order) with port 443, so `kubectl get ingress` shows the tailnet name under ADDRESS. Names
 * only, no node addresses: they change with every agent rollout and would rewrite the status.
 */
export function loadBalancerOf(attachment: K8sObject | undefined): NonNullable<IngressStatus> {
  const s = tiStatus(attachment);
  const names = [...new Set((s.exposes ?? []).map((e) => e.dnsName).filter((n): n is string => !!n))];
  if (names.length === 0 && s.dnsName) names.push(s.dnsName);
  if (names.length === 0) return { loadBalancer: {} };
  return {
    loadBalancer: {
      ingress: names.map((hostname) => ({ hostname, ports: [{ port: HTTPS_PORT, protocol: "TCP" }] })),
    },
  };
}

function tailnetFor(
  named: string | undefined,
  tailnets: readonly K8sObject[],
): { tailnet: K8sObject } | { refusal: ExposedCondition } {
  const r = resolveTailnet(named, tailnets);
  return "tailnet" in r ? r : { refusal: cond("Exposed", "False", r.reason, r.message) };
}

export function planIngressClass(observed: IngressClassObservation): IngressClassPlan {
  const ingress = observed.ingress;
  const cls = ingressClassOf(ingress);
  const ours = cls !== undefined && ourClasses(observed.ingressClasses).includes(cls);
  if (!ours) {
    if (observed.previousState === undefined && observed.attachments.length === 0) {
      return { role: "foreign", attachments: [], status: null };
    }
    // Released: clear the status only while it is still ours (the new class's controller may have written its own).
    const current = (ingress.status as { loadBalancer?: unknown } | undefined)?.loadBalancer ?? {};
    const mine = observed.attachments.map((a) => loadBalancerOf(a).loadBalancer);
    const stillOurs = mine.some((lb) => jsonEqual(lb, current)) && jsonEqual(Object.keys(current), ["ingress"]);
    return { role: "released", attachments: [], status: stillOurs ? { loadBalancer: {} } : null };
  }
  const read = readIngress(ingress);
  const none: NonNullable<IngressStatus> = { loadBalancer: {} };
  if (!read.ok) {
    return {
      role: "ours",
      attachments: [],
      exposed: cond("Exposed", "False", read.refusal.reason, read.refusal.message),
      status: none,
    };
  }
  const spec = read.spec;
  const kept = observed.attachments.filter((o) => !o.metadata.deletionTimestamp).map(reuseObserved);
  const mine = observed.attachments.find((o) => o.metadata.name === spec.name);
  const keptStatus = loadBalancerOf(mine);
  const resolved = tailnetFor(spec.tailnet, observed.tailnets);
  if ("refusal" in resolved) return { role: "ours", attachments: kept, exposed: resolved.refusal, status: keptStatus };
  const tailnet = resolved.tailnet;
  const id = `${spec.namespace}/${spec.name}`;
  const same = observed.tailnetIngresses.find((o) => qualifiedName(o) === id);
  if (same && !ownedBy(same, ingress)) {
    return {
      role: "ours",
      attachments: [],
      exposed: cond(
        "Exposed",
        "False",
        "NameTaken",
        `TailnetIngress ${id} already exists and was not made for this Ingress; rename or delete it`,
      ),
      status: none,
    };
  }
  const tspec = (tailnet.spec ?? {}) as { dns?: { baseDomain?: string } };
  const baseDomain = tspec.dns?.baseDomain;
  const flat = flatNamespacesOf(tailnet.spec);
  const built = ingressAttachment(
    spec,
    tailnet.metadata.name,
    zoneOf(spec.namespace, baseDomain, flat),
    observed.services,
  );
  if ("refusal" in built) {
    const { reason, message } = built.refusal;
    // A named port waits for its Service (a cluster observation): what works keeps working meanwhile.
    const keep = reason === "UnresolvedPort";
    return {
      role: "ours",
      attachments: keep ? kept : [],
      exposed: cond("Exposed", "False", reason, message),
      status: keep ? keptStatus : none,
    };
  }
  const desired = built.attachment;
  // The candidate keeps its age once it exists; before that every existing ingress is older.
  const candidate = {
    ...desired,
    metadata: { ...desired.metadata, creationTimestamp: mine?.metadata.creationTimestamp ?? FAR_FUTURE },
  };
  const taken = nameConflicts(candidate, observed.tailnetIngresses, baseDomain, flat);
  if (taken.length) {
    return {
      role: "ours",
      attachments: [],
      exposed: cond(
        "Exposed",
        "False",
        "HostnameTaken",
        `${taken[0].name} is already claimed by TailnetIngress ${taken[0].claimedBy} in Tailnet ${tailnet.metadata.name}; use another host or set ${Annotation.hostname}`,
      ),
      status: none,
    };
  }
  return { role: "ours", attachments: [desired], exposed: mirror(id, desired, mine), status: keptStatus };
}

/** The attachment's own Ready, repeated on the Ingress: Pending until it reports on what we asked for. */
function mirror(id: string, desired: K8sObject, mine: K8sObject | undefined): ExposedCondition {
  const what = `TailnetIngress ${id}`;
  if (!mine) return cond("Exposed", "Unknown", "Pending", `${what} is being created`);
  // Compared as values: Metacontroller writes last-applied with Go's sorted keys.
  if (mine.metadata.annotations?.[LAST_APPLIED] && !jsonEqual(reuseObserved(mine).spec, desired.spec)) {
    return cond("Exposed", "Unknown", "Pending", `${what} is being updated`);
  }
  const s = tiStatus(mine);
  const gen = mine.metadata.generation;
  const ready = (s.conditions ?? []).find((c) => c?.type === "Ready");
  if (!ready || (gen !== undefined && s.observedGeneration !== gen)) {
    return cond("Exposed", "Unknown", "Pending", `waiting for ${what} to report on its current spec`);
  }
  const why = `${what}: ${ready.reason ?? ""}${ready.message ? `: ${ready.message}` : ""}`;
  if (ready.status === "True") {
    const names = loadBalancerOf(mine).loadBalancer.ingress?.map((i) => i.hostname) ?? [];
    return cond("Exposed", "True", "Ready", `served on the tailnet over https as ${names.join(", ") || id}`);
  }
  if (ready.status === "False" && ready.reason === "DNSNameReserved") {
    return cond(
      "Exposed",
      "False",
      "HostnameReserved",
      `a name of this Ingress is the name of another machine (${why}); nothing is published under it: change the host or set ${Annotation.hostname}`,
    );
  }
  if (ready.status === "False" && isTenancyReason(ready.reason)) {
    return cond("Exposed", "False", ready.reason, `${what}: ${ready.message ?? ""}`);
  }
  if (ready.status === "False") return cond("Exposed", "False", "NotReady", why);
  return cond("Exposed", "Unknown", "Pending", why);
}

export function decideIngressClass(plan: IngressClassPlan): IngressClassDecision {
  if (plan.role !== "ours" || !plan.exposed) {
    const clear = plan.role === "released";
    return {
      labels: clear ? { [Written.state]: null } : {},
      annotations: clear ? { [Written.message]: null } : {},
      status: plan.status,
      children: [],
      conditions: [],
      fields: {},
    };
  }
  return {
    labels: { [Written.state]: plan.exposed.reason },
    annotations: { [Written.message]: plan.exposed.message },
    status: plan.status,
    children: plan.attachments,
    conditions: [plan.exposed],
    fields: {},
  };
}
