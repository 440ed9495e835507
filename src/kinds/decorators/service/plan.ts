/**
 * The plan of an annotated Service (pure): which attachment it should have (or why none) and the `Exposed`
 * condition, through the decorators' one planner (../attachment.ts), whose refusals keep or drop an existing
 * attachment.
 */
import { conditionsOf, type TypedCondition } from "../../../conditions/table.js";
import { ServiceCondition as C, ServiceReason as R, SERVICE_REASONS } from "../../../conditions/tables/service.js";
import { isOlder, sortByAge } from "../../../k8s/age.js";
import type { K8sObject } from "../../../k8s/objects.js";
import { qualifiedName } from "../../../k8s/objects.js";
import { resolveTailnet } from "../../shared/annotations.js";
import { planAttachment } from "../attachment.js";
import { Annotation } from "./annotations.js";
import { attachmentKind, serviceAttachment, targetAddress } from "./attachments.js";
import { exposureOf, readLoadBalancerSpec } from "./loadbalancer.js";
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

export function planService(read: ReadSpec, observed: ServiceObservation): ServicePlan {
  if (!read.ok) {
    return { attachments: [], exposed: cond(C.Exposed, "False", read.refusal.reason, read.refusal.message) };
  }
  const spec = read.spec;
  const hostnameTaken = (claimed: string, tailnet: string) =>
    `hostname ${spec.hostname} ${claimed} in Tailnet ${tailnet}; set ${Annotation.hostname}`;
  const plan = planAttachment<ExposedCondition>({
    owner: observed.service,
    ownerKind: "Service",
    kind: attachmentKind(spec),
    namespace: spec.namespace,
    name: spec.name,
    tailnet: spec.tailnet,
    tailnets: observed.tailnets,
    attachments: observed.attachments,
    existing: spec.role === "expose" ? observed.ingresses : observed.egresses,
    build: ({ tailnet }) => ({ attachment: serviceAttachment(spec, tailnet.metadata.name) }),
    ...(spec.role === "expose"
      ? {
          names: {
            taken: (c, tailnet) =>
              hostnameTaken(`(${c.name}) is already claimed by TailnetIngress ${c.claimedBy}`, tailnet),
            rival: (tailnet) => {
              const rival = olderRival(spec, tailnet, observed);
              return rival && hostnameTaken(`is already claimed by the older Service ${qualifiedName(rival)}`, tailnet);
            },
          },
        }
      : {}),
    check: () => externalNameMismatch(spec),
    words: {
      ready: (mine) =>
        spec.role === "expose"
          ? `reachable on the tailnet as ${(mine.status as { dnsName?: string }).dnsName ?? spec.hostname}`
          : `${spec.target} reachable from the cluster at ${targetAddress(spec)}`,
      reserved: ({ what, ready }) =>
        `hostname ${spec.hostname} is the name of another machine (${what}: ${ready.message ?? ""}); nothing is published under it: set ${Annotation.hostname}`,
    },
  });
  return {
    attachments: plan.attachments,
    exposed: plan.exposed,
    ...(plan.outcome === "desired" ? addressOf(spec, plan.mine) : {}),
  };
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
    const resolved = resolveTailnet(read.spec.tailnet, observed.tailnets);
    return "tailnet" in resolved && resolved.tailnet.metadata.name === tailnetName;
  });
  return sortByAge(rivals)[0];
}

function addressOf(spec: ServiceSpec, mine: K8sObject | undefined): { address?: string } {
  if (spec.role === "target") return { address: targetAddress(spec) };
  const dnsName = (mine?.status as { dnsName?: string } | undefined)?.dnsName;
  return dnsName ? { address: dnsName } : {};
}

/** target: an ExternalName Service must lead to the egress Service, or it reaches something else. */
function externalNameMismatch(spec: ServiceSpec): ExposedCondition | undefined {
  if (spec.role !== "target" || spec.type !== "ExternalName") return undefined;
  const want = targetAddress(spec);
  if ((spec.externalName ?? "").replace(/\.$/, "") === want) return undefined;
  return cond(
    C.Exposed,
    "False",
    R.ExternalNameMismatch,
    `spec.externalName is "${(spec.externalName ?? "").slice(0, 100)}"; set it to ${want} so that this Service leads to ${spec.target}`,
  );
}
