/**
 * The plan of an Ingress (pure): is it ours, which attachment it should have (or why none), the
 * `Exposed` condition and the `status.loadBalancer` to write (decide.ts turns it into the answer).
 *
 * An Ingress of another class that we never managed gets an empty answer and a null status:
 * Metacontroller then writes nothing to it (pkg/controller/decorator/controller.go syncParentObject
 * updates the object only when labels, annotations or status change). One we managed before (our
 * label is on it) is released: the label, annotation and attachment go, and the status is cleared
 * only while it still is the one we wrote.
 *
 * The attachment is planned by the decorators' one planner (../attachment.ts), as for annotated
 * Services: a refusal the user can fix on the Ingress drops the attachment; one that comes from the
 * rest of the cluster (the Tailnet missing or ambiguous, a Service not yet there to resolve a named
 * port) keeps an existing attachment as it is.
 */
import { conditionsOf, type TypedCondition } from "../../../conditions/table.js";
import { IngressClassCondition as C, INGRESS_CLASS_REASONS } from "../../../conditions/tables/ingress-class.js";
import { jsonEqual } from "../../../k8s/json-equal.js";
import type { K8sObject } from "../../../k8s/objects.js";
import { WorkloadAnnotation as Annotation } from "../../shared/annotations.js";
import { readTailnetCertificates } from "../../shared/certificates.js";
import { zoneOf } from "../../shared/dns-tenancy.js";
import { HTTPS_PORT } from "../../shared/expose-port.js";
import { planAttachment } from "../attachment.js";
import { ingressAttachment } from "./attachment.js";
import type { IngressClassObservation } from "./observe.js";
import { ingressClassOf, ourClasses, readIngress } from "./spec.js";

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

type IngressTiStatus = { dnsName?: string; exposes?: { dnsName?: string }[] };

/**
 * `status.loadBalancer.ingress` from the attachment: each published name (the exposes' DNS names, in
 * spec order) with port 443, so `kubectl get ingress` shows the tailnet name under ADDRESS. Names
 * only, no node addresses: they change with every agent rollout and would rewrite the status.
 */
export function loadBalancerOf(attachment: K8sObject | undefined): NonNullable<IngressStatus> {
  const s = (attachment?.status ?? {}) as IngressTiStatus;
  const names = [...new Set((s.exposes ?? []).map((e) => e.dnsName).filter((n): n is string => !!n))];
  if (names.length === 0 && s.dnsName) names.push(s.dnsName);
  if (names.length === 0) return { loadBalancer: {} };
  return {
    loadBalancer: {
      ingress: names.map((hostname) => ({ hostname, ports: [{ port: HTTPS_PORT, protocol: "TCP" }] })),
    },
  };
}

export function planIngressClass(observed: IngressClassObservation): IngressClassPlan {
  const ingress = observed.ingress;
  const cls = ingressClassOf(ingress);
  const ours = cls !== undefined && ourClasses(observed.ingressClasses).includes(cls);
  if (!ours) return released(observed);
  const read = readIngress(ingress);
  const none: NonNullable<IngressStatus> = { loadBalancer: {} };
  if (!read.ok) {
    return {
      role: "ours",
      attachments: [],
      exposed: cond(C.Exposed, "False", read.refusal.reason, read.refusal.message),
      status: none,
    };
  }
  const spec = read.spec;
  const id = `${spec.namespace}/${spec.name}`;
  const plan = planAttachment<ExposedCondition>({
    owner: ingress,
    ownerKind: "Ingress",
    kind: "TailnetIngress",
    namespace: spec.namespace,
    name: spec.name,
    tailnet: spec.tailnet,
    tailnets: observed.tailnets,
    attachments: observed.attachments,
    existing: observed.tailnetIngresses,
    build: ({ tailnet, baseDomain, flat }) => {
      const zone = zoneOf(spec.namespace, baseDomain, flat);
      const defaultIssuer = readTailnetCertificates(tailnet.spec).issuerRef !== undefined;
      const built = ingressAttachment(spec, tailnet.metadata.name, zone, observed.services, defaultIssuer);
      if (!("refusal" in built)) return built;
      const { reason, message } = built.refusal;
      // A named port waits for its Service (a cluster observation): what works keeps working meanwhile.
      return { refusal: cond(C.Exposed, "False", reason, message), keep: reason === "UnresolvedPort" };
    },
    names: {
      taken: (c, tailnet) =>
        `${c.name} is already claimed by TailnetIngress ${c.claimedBy} in Tailnet ${tailnet}; use another host or set ${Annotation.hostname}`,
    },
    words: {
      ready: (mine) => {
        const names = loadBalancerOf(mine).loadBalancer.ingress?.map((i) => i.hostname) ?? [];
        return `served on the tailnet over https as ${names.join(", ") || id}`;
      },
      reserved: ({ why }) =>
        `a name of this Ingress is the name of another machine (${why}); nothing is published under it: change the host or set ${Annotation.hostname}`,
    },
  });
  const status = plan.outcome === "dropped" ? none : loadBalancerOf(plan.mine);
  return { role: "ours", attachments: plan.attachments, exposed: plan.exposed, status };
}

/**
 * Not of our class: nothing to write unless we managed it before (our label or attachment is on it).
 * Released: clear the status only while it is still ours (the new class's controller may have written its own).
 */
function released(observed: IngressClassObservation): IngressClassPlan {
  if (observed.previousState === undefined && observed.attachments.length === 0) {
    return { role: "foreign", attachments: [], status: null };
  }
  const current = (observed.ingress.status as { loadBalancer?: unknown } | undefined)?.loadBalancer ?? {};
  const mine = observed.attachments.map((a) => loadBalancerOf(a).loadBalancer);
  const stillOurs = mine.some((lb) => jsonEqual(lb, current)) && jsonEqual(Object.keys(current), ["ingress"]);
  return { role: "released", attachments: [], status: stillOurs ? { loadBalancer: {} } : null };
}
