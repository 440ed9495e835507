/**
 * A TailnetIngress expose's `paths` (src/api/schemas/ingress-paths.ts) read from the spec, and rendered into
 * the agent config's (src/contract/agent-config.ts AgentPath): a backend's namespace defaults to the
 * TailnetIngress's. A weighted share without a Service stays without host: the agent answers its requests 500.
 * `protocol` (h2c: a gRPC server, a GRPCRoute's backends) is carried into the agent config: how the agent speaks to
 * the backend (docs/http2.md).
 */
import type { AgentPath } from "../../contract/agent-config.js";
import { recordOf } from "../../k8s/objects.js";

export interface PathBackend {
  service: string;
  namespace?: string;
  port: number;
  /** How the agent speaks to it (h2c: a GRPCRoute's backend). */
  protocol?: "http1" | "h2c";
  /** Written by the Gateway API class: the route it comes from (ingress/permitted.ts checks it against the cluster). */
  route?: RouteRef;
}

export interface RouteRef {
  kind: "HTTPRoute" | "GRPCRoute";
  namespace: string;
  name: string;
}

function readRouteRef(raw: unknown): { route?: RouteRef } {
  const r = recordOf(raw);
  const kind = r.kind === "HTTPRoute" || r.kind === "GRPCRoute" ? r.kind : undefined;
  const namespace = str(r.namespace);
  const name = str(r.name);
  return kind && namespace && name ? { route: { kind, namespace, name } } : {};
}

export interface WeightedBackend {
  /** Absent: an unresolved reference, its share answered 500. */
  backend?: PathBackend;
  weight: number;
}

export interface ExposePath {
  /** Unique in the expose when set (Metacontroller's apply merges paths by name, else by path). */
  name?: string;
  path: string;
  pathType: "Exact" | "Prefix";
  method?: string;
  headers?: { name: string; value: string }[];
  backend?: PathBackend;
  backends?: WeightedBackend[];
}

const str = (v: unknown): string | undefined => (typeof v === "string" && v !== "" ? v : undefined);

export function readBackend(raw: unknown): PathBackend {
  const b = recordOf(raw);
  return {
    service: str(b.service) ?? "",
    ...(str(b.namespace) ? { namespace: b.namespace as string } : {}),
    port: Number(b.port),
    ...(b.protocol === "h2c" || b.protocol === "http1" ? { protocol: b.protocol } : {}),
    ...readRouteRef(b.route),
  };
}

function readWeighted(raw: unknown): WeightedBackend {
  const b = recordOf(raw);
  return {
    ...(b.backend !== undefined ? { backend: readBackend(b.backend) } : {}),
    weight: Number.isInteger(b.weight) ? (b.weight as number) : 1,
  };
}

export const readPaths = (v: unknown): ExposePath[] =>
  (Array.isArray(v) ? v : []).map((raw) => {
    const p = recordOf(raw);
    const headers = Array.isArray(p.headers)
      ? p.headers.map((h) => ({ name: String(recordOf(h).name ?? ""), value: String(recordOf(h).value ?? "") }))
      : undefined;
    return {
      ...(str(p.name) ? { name: p.name as string } : {}),
      path: typeof p.path === "string" ? p.path : "",
      pathType: p.pathType === "Exact" ? "Exact" : "Prefix",
      ...(str(p.method) ? { method: p.method as string } : {}),
      ...(headers?.length ? { headers } : {}),
      ...(p.backend !== undefined ? { backend: readBackend(p.backend) } : {}),
      ...(Array.isArray(p.backends) ? { backends: p.backends.map(readWeighted) } : {}),
    };
  });

/** The agent config's paths; `host(service, namespace)` is the Service's cluster DNS name. */
export function agentPaths(
  paths: readonly ExposePath[],
  namespace: string,
  host: (service: string, namespace: string) => string,
): AgentPath[] {
  return paths.map((p) => ({
    path: p.path,
    pathType: p.pathType,
    ...(p.method ? { method: p.method } : {}),
    ...(p.headers?.length ? { headers: p.headers } : {}),
    ...(p.backend
      ? {
          backend: {
            host: host(p.backend.service, p.backend.namespace ?? namespace),
            port: p.backend.port,
            ...(p.backend.protocol ? { protocol: p.backend.protocol } : {}),
          },
        }
      : {}),
    ...(p.backends
      ? {
          backends: p.backends.map((b) =>
            b.backend
              ? {
                  host: host(b.backend.service, b.backend.namespace ?? namespace),
                  port: b.backend.port,
                  weight: b.weight,
                  ...(b.backend.protocol ? { protocol: b.backend.protocol } : {}),
                }
              : { weight: b.weight },
          ),
        }
      : {}),
  }));
}
