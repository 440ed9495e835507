/**
 * The TailnetIngress a Gateway of the class `tailnet` becomes (pure): mode http, one expose per valid listener
 * that has routes, answering the listener's tailnet name on 443 with its certificate Secret; the routes' rules
 * become the expose's paths (a method, exact headers, weighted backends), oldest route first so that the
 * first of two identical matches wins (the Gateway API's precedence, httproute_types.go HTTPRouteRule), and
 * a request no rule matches is answered 404 (`unmatched: notFound`). The expose's own `backend` is only what
 * BackendsReachable probes: the first resolved backend of its rules. Every name and tag rule of a
 * TailnetIngress (docs/dns-names.md, the Tailnet's tenancy) then applies unchanged — the Gateway gets no name
 * or tag its namespace could not get with a TailnetIngress of its own.
 */
import { API_VERSION, GROUP } from "../../../api/schemas.js";
import { MAX_RULES, ruleKey } from "../../../contract/paths.js";
import type { K8sObject } from "../../../k8s/objects.js";
import type { ExposePath } from "../../shared/expose-paths.js";
import { isDns1035Label } from "../annotations.js";
import type { BoundGateway } from "./bind.js";

/** On the attachment: the Gateway it was made for (`kubectl get tni -l tailnet.internal/gateway=<name>`). */
export const GATEWAY_LABEL = `${GROUP}/gateway`;

export interface GatewayExposure {
  hostname: string;
  tag?: string;
  allowFrom: string[];
}

/** Per listener (by name): why it publishes nothing although valid (no route, too many matches). */
export type Unpublished = Map<string, { reason: "Pending" | "Invalid"; message: string }>;

function listenerPaths(b: BoundGateway, listener: string): ExposePath[] {
  const gatewayNs = b.gateway.metadata.namespace ?? "default";
  const seen = new Set<string>();
  const out: ExposePath[] = [];
  for (const r of b.routes) {
    if (!r.listeners.includes(listener)) continue;
    for (const rule of r.rules) {
      for (const m of rule.matches) {
        const key = ruleKey(m.path, m.pathType, m);
        // Two routes (or rules) with the same match: the oldest route's first rule wins.
        if (seen.has(key)) continue;
        seen.add(key);
        out.push({
          // Metacontroller's in-place apply merges list items by name, else by path (apply.go knownMergeKeys):
          // a name per path keeps two paths that differ only by method or headers apart
          name: `rule-${out.length}`,
          path: m.path,
          pathType: m.pathType,
          ...(m.method ? { method: m.method } : {}),
          ...(m.headers.length ? { headers: m.headers } : {}),
          // a backend of the Gateway's own namespace needs no namespace on the TailnetIngress (it lives there),
          // nor the route that gave it: only another namespace's needs its consent (ingress/permitted.ts)
          backends: rule.backends.map((w) => {
            if (!w.backend || w.backend.namespace !== gatewayNs) return w;
            const { namespace: _same, route: _route, ...backend } = w.backend;
            return { ...w, backend };
          }),
        });
      }
    }
  }
  return out;
}

export function gatewayAttachment(
  b: BoundGateway,
  exposure: GatewayExposure,
  tailnet: string,
): { attachment?: K8sObject; unpublished: Unpublished } {
  const unpublished: Unpublished = new Map();
  const used = new Set<string>();
  const exposes: Record<string, unknown>[] = [];
  for (const j of b.listeners) {
    if (!j.valid || !j.label || !j.secretName) continue;
    const name = j.listener.name;
    const paths = listenerPaths(b, name);
    if (paths.length === 0) {
      unpublished.set(name, { reason: "Pending", message: "no route is attached: nothing is published for it" });
      continue;
    }
    if (paths.length > MAX_RULES) {
      const message = `its routes have ${paths.length} matches; the agent routes at most ${MAX_RULES} per name`;
      unpublished.set(name, { reason: "Invalid", message });
      continue;
    }
    const probe = paths.flatMap((p) => p.backends ?? []).find((x) => x.backend !== undefined)?.backend;
    if (!probe) {
      unpublished.set(name, { reason: "Invalid", message: "no backendRef of its routes is resolved" });
      continue;
    }
    let exposeName =
      isDns1035Label(name) && name.length <= 63 && !used.has(name) ? name : `listener-${j.listener.index}`;
    while (used.has(exposeName)) exposeName = `${exposeName}-x`;
    used.add(exposeName);
    exposes.push({
      name: exposeName,
      backend: probe,
      paths,
      unmatched: "notFound",
      ...(j.label !== exposure.hostname ? { host: j.label } : {}),
      tls: { secretName: j.secretName },
    });
  }
  if (exposes.length === 0) return { unpublished };
  const gw = b.gateway;
  return {
    unpublished,
    attachment: {
      apiVersion: API_VERSION,
      kind: "TailnetIngress",
      metadata: {
        name: gw.metadata.name,
        namespace: gw.metadata.namespace,
        labels: { [GATEWAY_LABEL]: gw.metadata.name },
      },
      spec: {
        tailnetRef: { name: tailnet },
        ...(exposure.tag ? { tag: exposure.tag } : {}),
        hostname: exposure.hostname,
        mode: "http",
        ...(exposure.allowFrom.length ? { allowFrom: exposure.allowFrom } : {}),
        exposes,
      },
    },
  };
}
