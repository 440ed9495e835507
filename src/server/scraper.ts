/** Scrapes agent Pods' GET /status (port named "metrics"), in parallel, with a short timeout. */
import { request } from "undici";
import type { AgentStatus } from "../contract/agent-status.js";
import type { K8sObject } from "../k8s/objects.js";
import type { AgentScraper, ScrapeResult } from "../pipeline/types.js";

export function podStatusUrl(pod: K8sObject): string | undefined {
  const ip = (pod.status as { podIP?: unknown } | undefined)?.podIP;
  const containers = (
    pod.spec as { containers?: { ports?: { name?: string; containerPort?: number }[] }[] } | undefined
  )?.containers;
  const port = containers?.flatMap((c) => c.ports ?? []).find((p) => p.name === "metrics")?.containerPort;
  if (typeof ip !== "string" || !ip || typeof port !== "number") return undefined;
  return `http://${ip.includes(":") ? `[${ip}]` : ip}:${port}/status`;
}

function isAgentStatus(v: unknown): v is AgentStatus {
  const s = v as AgentStatus;
  return (
    !!s &&
    typeof s === "object" &&
    typeof s.ready === "boolean" &&
    Array.isArray(s.peers) &&
    Array.isArray(s.targets) &&
    Array.isArray(s.exposes)
  );
}

export function httpAgentScraper(timeoutMs: number): AgentScraper {
  return {
    async scrape(pods, names) {
      // DNS names only (the ingress's own, never user text unvalidated): no escaping beyond the separator
      const query = names?.length ? `?${new URLSearchParams({ names: names.join(",") })}` : "";
      return Promise.all(
        pods.map(async (pod): Promise<ScrapeResult> => {
          const name = pod.metadata.name;
          const base = podStatusUrl(pod);
          const url = base && `${base}${query}`;
          if (!url) return { ok: false, pod: name, error: "pod has no IP or no port named metrics yet" };
          try {
            const res = await request(url, { headersTimeout: timeoutMs, bodyTimeout: timeoutMs });
            if (res.statusCode !== 200) {
              await res.body.dump();
              return { ok: false, pod: name, error: `GET /status: HTTP ${res.statusCode}` };
            }
            const body = await res.body.json();
            if (!isAgentStatus(body)) return { ok: false, pod: name, error: "GET /status: unexpected shape" };
            return { ok: true, pod: name, status: body };
          } catch (e) {
            const code = (e as { code?: string }).code;
            return { ok: false, pod: name, error: `GET /status: ${code ?? (e as Error).message}` };
          }
        }),
      );
    },
  };
}
