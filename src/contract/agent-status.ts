// The agent's GET /status document (spec api.md, "Agent /status"): what the agent serves and the operator
// scrapes (src/server/scraper.ts), declared here so neither side imports the other. The agent builds it
// (src/agent/status.ts buildStatus) from tailscaled's LocalAPI status (src/agent/localapi.ts).

/** The agent's own node as tailscaled reports it. */
export interface AgentSelf {
  hostName: string;
  tailscaleIPs: string[];
  online: boolean;
}

/** A peer in the agent's netmap: only what the policy grants the agent is there. */
export interface AgentPeer {
  hostName: string;
  dnsName: string;
  tailscaleIPs: string[];
  primaryRoutes: string[];
  online: boolean;
}

export type DialPath = "tailnet" | "outside" | "unknown";

export interface TargetStatus {
  name: string;
  /** The tailnet IP the target resolved to in the netmap, else the configured host. */
  address: string;
  reachable: boolean;
  error: string;
  /**
   * Which way tailscaled's SOCKS5 dial to `address` goes: "tailnet" (a peer's address, or inside
   * a peer's subnet route while routes are accepted), "outside" (through the pod network: no peer
   * holds it, or routes are not accepted), "unknown" (a name not in the netmap, or prefs unread).
   */
  via: DialPath;
}

export interface ExposeStatus {
  name: string;
  backendReachable: boolean;
  error: string;
}

/**
 * What the agent node's quad-100 resolver answered for a name the scrape asked about (`/status?names=`):
 * `rcode` and the A addresses when it answered, `error` (and no rcode) when the query could not be made.
 */
export interface NameAnswer {
  name: string;
  addresses: string[];
  rcode?: string;
  error: string;
}

export interface AgentStatus {
  ready: boolean;
  self: AgentSelf;
  peers: AgentPeer[];
  targets: TargetStatus[];
  exposes: ExposeStatus[];
  /** Only when the request asked (`?names=a,b`): one answer per name, in the order asked. */
  names?: NameAnswer[];
}

export interface ProbeResult {
  reachable: boolean;
  /** "" when reachable; otherwise the cause, naming the address (never credentials). */
  error: string;
}
