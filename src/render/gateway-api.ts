/**
 * What `render` prints for the Gateway API class (docs/gateway-api.md), after the Ingresses: each GatewayClass,
 * Gateway, HTTPRoute and GRPCRoute whose last sync answered a status (ours), with that status as the loop
 * stored it and the Gateway's TailnetIngress attachment. Objects of other classes or controllers are left out.
 * Ready: the class Accepted, the Gateway Programmed, every parent entry of ours Accepted.
 */
import type { MetacontrollerLoop } from "../emulator/metacontroller/loop.js";
import type { Obj } from "../emulator/metacontroller/types.js";
import { type K8sObject, qualifiedName } from "../k8s/objects.js";
import { CONTROLLER_NAME } from "../kinds/shared/gateway-api-objects.js";
import type { RenderedObject } from "./rendered-object.js";

type Cond = { type?: string; status?: string };
const isTrue = (cs: unknown, type: string) =>
  Array.isArray(cs) && (cs as Cond[]).some((c) => c.type === type && c.status === "True");

function readyOf(o: Obj): boolean {
  const status = (o.status ?? {}) as {
    conditions?: unknown;
    parents?: { controllerName?: string; conditions?: unknown }[];
  };
  if (o.kind === "GatewayClass") return isTrue(status.conditions, "Accepted");
  if (o.kind === "Gateway") return isTrue(status.conditions, "Programmed");
  const ours = (status.parents ?? []).filter((p) => p.controllerName === CONTROLLER_NAME);
  return ours.length > 0 && ours.every((p) => isTrue(p.conditions, "Accepted"));
}

export function renderedGatewayApi(loop: MetacontrollerLoop): RenderedObject[] {
  const out: RenderedObject[] = [];
  for (const kind of ["GatewayClass", "Gateway", "HTTPRoute", "GRPCRoute"]) {
    for (const o of loop.list(kind).sort((a, b) => qualifiedName(a).localeCompare(qualifiedName(b)))) {
      const id = qualifiedName(o);
      const last = [...loop.calls]
        .reverse()
        .find((c) => c.kind === kind && c.parent === id && c.hook === "sync" && c.code === 200);
      const answer = last?.response as { status?: unknown; attachments?: K8sObject[] } | undefined;
      if (!answer?.status) continue;
      out.push({
        kind,
        ...(o.metadata.namespace ? { namespace: o.metadata.namespace } : {}),
        name: o.metadata.name,
        ready: readyOf(o),
        status: (o.status ?? {}) as Record<string, unknown>,
        children: answer.attachments ?? [],
      });
    }
  }
  return out;
}
