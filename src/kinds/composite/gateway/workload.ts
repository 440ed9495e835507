/**
 * The gateway's workload (pure): the Corefile and the Deployment for a bootstrap key Secret.
 * Shared by the plan (is a rollout pending? then the new pod needs a fresh key) and by decide (the children).
 */
import type { OperatorConfig } from "../../../config.js";
import { isRecord, type K8sObject } from "../../../k8s/objects.js";
import { configHash } from "../../shared/pod-template.js";
import { applyProxyClass, type ProxyClassSpec } from "../../shared/proxy-class.js";
import { gatewayDeployment } from "./children.js";
import { renderGatewayCorefile } from "./corefile.js";
import { advertisedRoutes, type ExitNodeState } from "./exit.js";
import type { GatewaySpec } from "./spec.js";
import { stampOf } from "./template.js";
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

export function renderDeployment(r: RenderInput, authKeySecret: string | undefined): K8sObject {
  const deployment = gatewayDeployment(r.parent, {
    names: r.spec.names,
    replicas: r.spec.suspend ? 0 : r.spec.replicas,
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
  return r.proxyClass ? applyProxyClass(deployment, r.proxyClass) : deployment;
}

export function renderedStamp(deployment: K8sObject): string {
  return stampOf(isRecord(deployment.spec) ? deployment.spec.template : undefined) ?? "";
}
