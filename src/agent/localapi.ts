// tailscaled's LocalAPI status over its unix socket: the agent's own node and its netmap. A peer or route
// that the policy does not grant to the agent is absent from the netmap, which is how the operator tells
// NoGrant apart from NotApproved and NotAdvertised.
import { request } from "node:http";
import type { AgentPeer, AgentSelf } from "../contract/agent-status.js";

export interface Netmap {
  /** tailscaled's BackendState ("Running", "NeedsLogin", "Starting", …). */
  backendState: string;
  self: AgentSelf;
  /** Sorted by hostName, then dnsName, so /status is stable between scrapes. */
  peers: AgentPeer[];
  /**
   * Prefs.RouteAll (`--accept-routes`): without it tailscaled on Linux drops the peers' subnet
   * routes, so a dial to an address behind one leaves through the pod network (net/tsdial
   * dialOneUser: not a Tailscale route → SystemDial), while PrimaryRoutes still show in status.
   * Undefined when the prefs could not be read.
   */
  acceptRoutes?: boolean;
}

/** The LocalAPI path; `peers=true` is tailscaled's default and is kept explicit. */
export const LOCALAPI_STATUS_PATH = "/localapi/v0/status";
/** tailscaled accepts LocalAPI requests on its socket only with this Host. */
export const LOCALAPI_HOST = "local-tailscaled.sock";
const MAX_STATUS_BYTES = 32 * 1024 * 1024;

function record(value: unknown): Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : {};
}

function strings(value: unknown): string[] {
  return Array.isArray(value) ? value.filter((v): v is string => typeof v === "string") : [];
}

function text(value: unknown): string {
  return typeof value === "string" ? value : "";
}

/** Maps tailscaled's ipnstate.Status JSON to the /status fields. Tolerant: missing fields become empty. */
export function mapLocalApiStatus(raw: unknown): Netmap {
  const status = record(raw);
  const self = record(status.Self);
  const peers = Object.values(record(status.Peer)).map((value): AgentPeer => {
    const peer = record(value);
    return {
      hostName: text(peer.HostName),
      dnsName: text(peer.DNSName),
      tailscaleIPs: strings(peer.TailscaleIPs),
      primaryRoutes: strings(peer.PrimaryRoutes),
      online: peer.Online === true,
    };
  });
  peers.sort((a, b) => a.hostName.localeCompare(b.hostName) || a.dnsName.localeCompare(b.dnsName));
  return {
    backendState: text(status.BackendState),
    self: { hostName: text(self.HostName), tailscaleIPs: strings(self.TailscaleIPs), online: self.Online === true },
    peers,
  };
}

/** The LocalAPI path of tailscaled's current prefs (ipn.Prefs JSON). */
export const LOCALAPI_PREFS_PATH = "/localapi/v0/prefs";

/** GET /localapi/v0/status over the unix socket. Rejects with "LocalAPI GET /localapi/v0/status: <cause>". */
export async function fetchLocalApiStatus(socketPath: string, timeoutMs: number): Promise<Netmap> {
  return mapLocalApiStatus(await localApiGet(socketPath, LOCALAPI_STATUS_PATH, timeoutMs));
}

/**
 * The netmap plus Prefs.RouteAll. A prefs read that fails leaves acceptRoutes undefined (older
 * tailscaled, a restricted LocalAPI) rather than failing the netmap.
 */
export async function fetchNetmap(socketPath: string, timeoutMs: number): Promise<Netmap> {
  const [netmap, prefs] = await Promise.all([
    fetchLocalApiStatus(socketPath, timeoutMs),
    localApiGet(socketPath, LOCALAPI_PREFS_PATH, timeoutMs).catch(() => undefined),
  ]);
  const routeAll = record(prefs).RouteAll;
  return typeof routeAll === "boolean" ? { ...netmap, acceptRoutes: routeAll } : netmap;
}

/** A LocalAPI answer other than 200 (`status`) or a transport failure (no status). */
export class LocalApiError extends Error {
  constructor(
    message: string,
    readonly status?: number,
  ) {
    super(message);
  }
}

/** The LocalAPI path of WhoIs: who owns a tailnet address (apitype.WhoIsResponse), 404 for no one. */
export const LOCALAPI_WHOIS_PATH = "/localapi/v0/whois";

/**
 * GET /localapi/v0/whois?addr=<ip:port> (tailscale ipn/localapi serveWhoIs): the peer's Node, UserProfile
 * and the CapMap the policy grants it towards this node. Undefined when tailscaled knows no such peer
 * (404 "no match for IP:port"); rejects on any other failure.
 */
export async function fetchWhoIs(socketPath: string, addr: string, timeoutMs: number): Promise<unknown> {
  const path = `${LOCALAPI_WHOIS_PATH}?${new URLSearchParams({ addr })}`;
  try {
    return await localApiGet(socketPath, path, timeoutMs);
  } catch (err) {
    if (err instanceof LocalApiError && err.status === 404) return undefined;
    throw err;
  }
}

/** GET `path` on tailscaled's LocalAPI socket: the JSON answer, or a rejection naming the operation. */
export function localApiGet(socketPath: string, path: string, timeoutMs: number): Promise<unknown> {
  const operation = `LocalAPI GET ${path}`;
  return new Promise((resolve, reject) => {
    const req = request(
      {
        socketPath,
        path,
        method: "GET",
        // Host is what tailscaled checks on its socket; Sec-Tailscale marks a non-browser client (required
        // when the LocalAPI is reached over TCP, harmless on the socket).
        headers: { Host: LOCALAPI_HOST, "Sec-Tailscale": "localapi", Accept: "application/json" },
        timeout: timeoutMs,
      },
      (res) => {
        const chunks: Buffer[] = [];
        let size = 0;
        res.on("data", (chunk: Buffer) => {
          size += chunk.length;
          if (size > MAX_STATUS_BYTES) {
            req.destroy(new Error(`response over ${MAX_STATUS_BYTES} bytes`));
            return;
          }
          chunks.push(chunk);
        });
        res.on("error", (err) => reject(new Error(`${operation}: ${err.message}`)));
        res.on("end", () => {
          const body = Buffer.concat(chunks).toString("utf8");
          if (res.statusCode !== 200) {
            reject(new LocalApiError(`${operation}: ${res.statusCode} ${body.trim().slice(0, 200)}`, res.statusCode));
            return;
          }
          try {
            resolve(JSON.parse(body));
          } catch (err) {
            reject(new Error(`${operation}: invalid JSON (${(err as Error).message})`));
          }
        });
      },
    );
    req.on("timeout", () => req.destroy(new Error(`timed out after ${timeoutMs / 1000}s`)));
    req.on("error", (err: NodeJS.ErrnoException) => reject(new Error(`${operation}: ${err.code ?? err.message}`)));
    req.end();
  });
}
