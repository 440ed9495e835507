/**
 * The tailnet port of a TailnetIngress expose: `port`, or 443 for an http expose that leaves it out.
 * Optional because Metacontroller's in-place apply merges a list by the first known key all its items
 * share, `port` before `name` (metacontroller v4.17.2 pkg/dynamic/apply/apply.go knownMergeKeys): the
 * http exposes an Ingress becomes all listen on 443 and would collapse into one. The ingress kind and
 * the Tailnet's policy both read the port through this one rule.
 */
export const HTTPS_PORT = 443;

/** NaN when a tcp expose has no port (the ingress kind refuses that spec, InvalidSpec). */
export function exposePort(mode: unknown, port: unknown): number {
  if (port === undefined || port === null) return mode === "http" ? HTTPS_PORT : Number.NaN;
  return Number(port);
}
