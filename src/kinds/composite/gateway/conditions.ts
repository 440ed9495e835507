/**
 * One pure function per TailnetGateway condition that is read from Kubernetes objects
 * (DNSReady, WorkloadCurrent, ServiceReady, ClusterDNSForward). The Headscale-side conditions
 * (Registered, RoutesInSync, StaleNodes) are in decide.ts, next to the actions they drive.
 */
import { conditionsOf } from "../../../conditions/table.js";
import { GatewayCondition as C, GATEWAY_REASONS, GatewayReason as R } from "../../../conditions/tables/gateway.js";
import { type K8sObject, recordOf } from "../../../k8s/objects.js";
import { rollingMessage, rolloutProgress } from "../../shared/staged-rollout.js";
import type { ZoneRefusal } from "../../shared/zone-owners.js";
import { COREFILE_KEY, checkClusterForward, forwardBlock } from "./corefile.js";
import type { PodFact } from "./observe.js";
import type { GatewayConditionOf } from "./plan.js";

const { cond } = conditionsOf(GATEWAY_REASONS);
const num = (v: unknown): number => (typeof v === "number" ? v : 0);
const where = (o: K8sObject) => `${o.metadata.namespace ?? ""}/${o.metadata.name}`;

/** CoreDNS readiness from the pods' container statuses, else from the StatefulSets' ready replicas. */
export function dnsReady(input: {
  suspended: boolean;
  pods: readonly PodFact[];
  workloads: readonly K8sObject[];
  /** Names the derived zone leaves out (shared/zone-owners.ts): said on a serving gateway. */
  refused?: readonly ZoneRefusal[];
}): GatewayConditionOf<"DNSReady"> {
  const c = serving(input);
  const refused = input.refused ?? [];
  if (c.status !== "True" || !refused.length) return c;
  const shown = refused.slice(0, 10).map((r) => `${r.fqdn} (${r.egress} target ${r.target}): ${r.why}`);
  const more = refused.length > 10 ? `; and ${refused.length - 10} more` : "";
  return cond(C.DNSReady, "True", R.ZoneNamesRefused, `${c.message}; not in the zone: ${shown.join("; ")}${more}`);
}

function serving(input: { suspended: boolean; pods: readonly PodFact[]; workloads: readonly K8sObject[] }) {
  if (input.suspended) return cond(C.DNSReady, "False", R.NotServing, "suspended: no gateway pod runs");
  const known = input.pods.filter((p) => !p.deleting && "coredns" in p.ready);
  if (known.length > 0) {
    const ready = known.filter((p) => p.ready.coredns).map((p) => p.name);
    if (ready.length) return cond(C.DNSReady, "True", R.Serving, `CoreDNS is ready in pod ${ready.join(", ")}`);
    return cond(
      C.DNSReady,
      "False",
      R.NotServing,
      `CoreDNS is not ready in pod ${known.map((p) => p.name).join(", ")}`,
    );
  }
  if (!input.workloads.length)
    return cond(C.DNSReady, "False", R.NotServing, "the gateway StatefulSets do not exist yet");
  const ready = input.workloads.filter((w) => num(recordOf(w.status).readyReplicas) > 0);
  if (ready.length) {
    return cond(C.DNSReady, "True", R.Serving, `StatefulSet ${ready.map(where).join(", ")} has a ready pod`);
  }
  return cond(
    C.DNSReady,
    "False",
    R.NotServing,
    `no ready gateway pod: ${input.workloads.length} StatefulSet(s), none with a ready pod`,
  );
}

/**
 * Rollout state of the replicas' StatefulSets against the templates rendered in this sync; the rollout is staged
 * one replica at a time (src/kinds/shared/staged-rollout.ts), so the message says how far it got.
 */
export function workloadCurrent(input: {
  observed: readonly K8sObject[];
  rendered: readonly K8sObject[];
}): GatewayConditionOf<"WorkloadCurrent"> {
  const p = rolloutProgress(input.observed, input.rendered);
  if (p.missing.length === p.total)
    return cond(C.WorkloadCurrent, "False", R.PodTemplateStale, "the gateway StatefulSets do not exist yet");
  if (p.missing.length) {
    return cond(
      C.WorkloadCurrent,
      "False",
      R.PodTemplateStale,
      `StatefulSet ${p.missing.join(", ")} does not exist yet`,
    );
  }
  const rolling = rollingMessage(p);
  if (rolling) return cond(C.WorkloadCurrent, "False", R.PodTemplateStale, rolling);
  const what =
    p.total === 1 ? `StatefulSet ${where(input.observed[0])} runs` : `every replica's StatefulSet (${p.total}) runs`;
  return cond(C.WorkloadCurrent, "True", R.PodCurrent, `${what} the rendered pod template`);
}

/** The DNS Service's address, as the API server assigned it. */
export function serviceIP(service: K8sObject | undefined): string | undefined {
  const ip = recordOf(service?.spec).clusterIP;
  return typeof ip === "string" && ip && ip !== "None" ? ip : undefined;
}

export function serviceReady(input: {
  type: "ClusterIP" | "LoadBalancer";
  service?: K8sObject;
}): GatewayConditionOf<"ServiceReady"> {
  const s = input.service;
  if (!s) {
    const reason = input.type === "LoadBalancer" ? R.LBPending : R.ClusterIPAssigned;
    return cond(
      C.ServiceReady,
      input.type === "LoadBalancer" ? "False" : "Unknown",
      reason,
      "the DNS Service does not exist yet",
    );
  }
  if (input.type === "LoadBalancer") {
    const ingress = recordOf(recordOf(s.status).loadBalancer).ingress;
    const addrs = (Array.isArray(ingress) ? ingress.map(recordOf) : [])
      .map((i) => (typeof i.ip === "string" ? i.ip : typeof i.hostname === "string" ? i.hostname : ""))
      .filter(Boolean);
    if (addrs.length) {
      return cond(
        C.ServiceReady,
        "True",
        R.LoadBalancerAssigned,
        `Service ${where(s)} has load balancer ${addrs.join(", ")}`,
      );
    }
    return cond(C.ServiceReady, "False", R.LBPending, `Service ${where(s)} is waiting for a load balancer address`);
  }
  const ip = serviceIP(s);
  if (ip) return cond(C.ServiceReady, "True", R.ClusterIPAssigned, `Service ${where(s)} has cluster IP ${ip}`);
  return cond(C.ServiceReady, "Unknown", R.ClusterIPAssigned, `Service ${where(s)} has no cluster IP yet`);
}

/** Whether `kube-system/coredns` forwards the derived zone to the gateway DNS Service. */
export function clusterDNSForward(input: {
  mode: "Managed" | "External";
  zone: string;
  serviceIP?: string;
  serviceName: string;
  coredns?: K8sObject;
}): GatewayConditionOf<"ClusterDNSForward"> {
  if (input.mode === "External") {
    return cond(
      C.ClusterDNSForward,
      "True",
      R.ExternallyManaged,
      "spec.dns.clusterDNSForward is External: the cluster DNS is configured outside the operator",
    );
  }
  if (!input.serviceIP) {
    return cond(
      C.ClusterDNSForward,
      "False",
      R.NotConfigured,
      `the gateway DNS Service ${input.serviceName} has no cluster IP yet, so there is nothing to forward ${input.zone} to`,
    );
  }
  const block = forwardBlock(input.zone, input.serviceIP);
  const corefile = recordOf(input.coredns?.data)[COREFILE_KEY];
  if (typeof corefile !== "string") {
    const what = input.coredns
      ? "ConfigMap kube-system/coredns has no Corefile"
      : "ConfigMap kube-system/coredns not found";
    return cond(
      C.ClusterDNSForward,
      "False",
      R.NotConfigured,
      `${what}; the cluster DNS needs this server block:\n${block}`,
    );
  }
  const check = checkClusterForward(corefile, input.zone, input.serviceIP);
  if (check.configured) {
    return cond(
      C.ClusterDNSForward,
      "True",
      R.Configured,
      `kube-system/coredns forwards ${input.zone} to the gateway DNS Service ${input.serviceIP}`,
    );
  }
  const message =
    check.reason === "noBlock"
      ? `kube-system/coredns has no server block for ${input.zone}; add this one to its Corefile:\n${block}`
      : `the ${input.zone} server block of kube-system/coredns forwards to ${check.upstreams.join(" ") || "nothing"}, not to the gateway DNS Service ${input.serviceIP}; replace it with:\n${block}`;
  return cond(C.ClusterDNSForward, "False", R.NotConfigured, message);
}
