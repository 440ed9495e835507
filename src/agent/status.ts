// The /status document (its shape: src/contract/agent-status.ts): built from what the agent last observed, by
// pure functions so the document and the address rule are tested without sockets.
import { isIP } from "node:net";
import type { AgentExpose, AgentTarget } from "../contract/agent-config.js";
import type { AgentPeer, AgentSelf, AgentStatus, DialPath, ProbeResult } from "../contract/agent-status.js";
import { canonicalIp, cidrContains, parseCidrOrIp } from "../net/cidr.js";
import type { Netmap } from "./localapi.js";

/** The path of a dial to `address` as tailscaled's dialer picks it (net/tsdial dialOneUser). */
export function dialPath(address: string, peers: readonly AgentPeer[], acceptRoutes: boolean | undefined): DialPath {
  const ip = canonicalIp(address);
  if (!ip) return "unknown";
  if (peers.some((p) => p.tailscaleIPs.some((a) => canonicalIp(a) === ip))) return "tailnet";
  const routed = peers.some((p) =>
    p.primaryRoutes.some((r) => {
      const c = parseCidrOrIp(r);
      return !!c && c.bits > 0 && cidrContains(c, ip);
    }),
  );
  if (!routed) return "outside";
  return acceptRoutes === undefined ? "unknown" : acceptRoutes ? "tailnet" : "outside";
}

export const NOT_PROBED: ProbeResult = Object.freeze({ reachable: false, error: "not probed yet" });

function bare(name: string): string {
  return name.toLowerCase().replace(/\.$/, "");
}

/** Prefers an IPv4 address (Headscale's grants and the DNS records use it), else the first one. */
function preferredIp(ips: readonly string[]): string | undefined {
  return ips.find((ip) => isIP(ip) === 4) ?? ips[0];
}

/**
 * The tailnet address of a target host: an IP stays as it is; a MagicDNS FQDN matches a peer's DNSName; a
 * short name matches the first label of a peer's DNSName (the node name in Headscale), then its HostName
 * (the OS host name). A host no peer matches stays the host (not granted, not yet known, or behind a route).
 */
export function resolveTargetAddress(host: string, peers: readonly AgentPeer[]): string {
  if (isIP(host) !== 0) return host;
  const wanted = bare(host);
  const candidates = [
    (p: AgentPeer) => bare(p.dnsName) === wanted,
    (p: AgentPeer) => bare(p.dnsName).split(".")[0] === wanted,
    (p: AgentPeer) => bare(p.hostName) === wanted,
  ];
  for (const matches of candidates) {
    const peer = peers.find((p) => p.tailscaleIPs.length > 0 && matches(p));
    if (peer) return preferredIp(peer.tailscaleIPs) ?? host;
  }
  return host;
}

export interface StatusInputs {
  /** All listeners are bound. */
  listening: boolean;
  /** A LocalAPI socket is configured. */
  netmapConfigured: boolean;
  /** The last LocalAPI status read; undefined before the first success. */
  netmap?: Netmap;
  /** The last LocalAPI read failed (the previous netmap, if any, is still shown). */
  netmapFailed: boolean;
  targets: readonly AgentTarget[];
  exposes: readonly AgentExpose[];
  probes: ReadonlyMap<string, ProbeResult>;
}

const NO_SELF: AgentSelf = { hostName: "", tailscaleIPs: [], online: false };

/**
 * ready: the listeners are up and, when tailscaled is configured, its last status read succeeded with
 * BackendState "Running". Reachability is reported per target/expose and does not affect ready.
 */
export function buildStatus(input: StatusInputs): AgentStatus {
  const netmapOk = !input.netmapConfigured || (!input.netmapFailed && input.netmap?.backendState === "Running");
  const peers = input.netmap?.peers ?? [];
  return {
    ready: input.listening && netmapOk,
    self: input.netmap?.self ?? NO_SELF,
    peers,
    targets: input.targets.map((target) => {
      const probe = input.probes.get(target.name) ?? NOT_PROBED;
      const address = resolveTargetAddress(target.host, peers);
      return {
        name: target.name,
        address,
        reachable: probe.reachable,
        error: probe.error,
        via: dialPath(address, peers, input.netmap?.acceptRoutes),
      };
    }),
    exposes: input.exposes.map((expose) => {
      const probe = input.probes.get(expose.name) ?? NOT_PROBED;
      return { name: expose.name, backendReachable: probe.reachable, error: probe.error };
    }),
  };
}
