/**
 * The gateway's workload (pure): the Corefile and each replica's StatefulSet for the stable bootstrap key
 * Secret. Decide answers them (staged: rollout.ts); the fresh writer's third check hashes what runs.
 */
import type { OperatorConfig } from "../../../config.js";
import { isRecord, type K8sObject } from "../../../k8s/objects.js";
import { configHash } from "../../shared/pod-template.js";
import { applyProxyClass, type ProxyClassSpec } from "../../shared/proxy-class.js";
import { stampOf, stampWorkload } from "../../shared/template-hash.js";
import { gatewayStatefulSet } from "./children.js";
import { renderGatewayCorefile } from "./corefile.js";
import { advertisedRoutes, type ExitNodeState } from "./exit.js";
import type { GatewaySpec } from "./spec.js";
import { ZONE_FILE_KEY } from "./zone.js";

export interface GatewayTailnet {
  name: string;
  loginServer: string;
  policyMode: "Apply" | "DryRun";
  baseDomain?: string;
  splitDomains: string[];
  /** The Tailnet reports HeadscaleCompatible=False: no route is approved on that server (as for a site). */
  incompatible?: boolean;
  /** The Headscale CA (caSecretRef, from the credentials Secret), delivered to the pod. */
  ca?: string;
}

export interface RenderInput {
  parent: K8sObject;
  spec: GatewaySpec;
  tag: string;
  zone: string;
  tailnet: GatewayTailnet;
  images: OperatorConfig["images"];
  /** The named TailnetProxyClass's settings, folded into the pod template. */
  proxyClass?: ProxyClassSpec;
  /** OperatorConfig.tailscale.noLogsNoSupport. */
  noLogsNoSupport: boolean;
  /** spec.exitNode as the Tailnet's tenancy judged it (exit.ts): whether the pod advertises the exit pair. */
  exitNode: ExitNodeState;
}

export function renderCorefile(r: RenderInput): string {
  const owner = `${r.parent.metadata.namespace}/${r.parent.metadata.name}`;
  return renderGatewayCorefile({ owner, zone: r.zone, zoneFile: ZONE_FILE_KEY, splitDomains: r.tailnet.splitDomains });
}

/** Replica i's StatefulSet as rendered now (replicas 0 while suspended). */
export function renderStatefulSet(r: RenderInput, index: number, authKeySecret: string | undefined): K8sObject {
  const sts = gatewayStatefulSet(r.parent, index, {
    names: r.spec.names,
    replicas: r.spec.suspend ? 0 : 1,
    tag: r.tag,
    hostname: r.spec.hostname,
    routes: advertisedRoutes(r.spec.routes, r.exitNode),
    loginServer: r.tailnet.loginServer,
    authKeySecret,
    images: r.images,
    configHash: r.tailnet.ca ? configHash(renderCorefile(r), r.tailnet.ca) : configHash(renderCorefile(r)),
    ca: !!r.tailnet.ca,
    noLogsNoSupport: r.noLogsNoSupport,
  });
  // stamped again after the class: the stamp must be the hash of what runs (template-hash.ts)
  return r.proxyClass ? stampWorkload(applyProxyClass(sts, r.proxyClass)) : sts;
}

export function renderedStamp(workload: K8sObject): string {
  return stampOf(isRecord(workload.spec) ? workload.spec.template : undefined) ?? "";
}
