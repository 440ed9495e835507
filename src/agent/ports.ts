// Fixed ports and paths shared by the agent and the operator's builders: the operator renders the agent
// ConfigMap, the container ports and the tailscaled serve config from the same rules, so both sides agree
// without talking to each other.

/** The agent's HTTP port: `/metrics`, `/status`, `/healthz` (container port named "metrics"). */
export const AGENT_METRICS_PORT = 9080;
/** Where the operator mounts the agent config (ConfigMap key `config.json`). */
export const AGENT_CONFIG_PATH = "/etc/tailnet-agent/config.json";
/** tailscaled's LocalAPI unix socket in the shared `/var/run/tailscale` volume. */
export const TAILSCALED_SOCKET = "/var/run/tailscale/tailscaled.sock";
/** tailscaled's SOCKS5 proxy (`--socks5-server`), used by egress agents to dial tailnet targets. */
export const TAILSCALE_SOCKS_ADDR = "127.0.0.1:1055";

/** First local listen port of an egress agent; each target port gets the next one. */
export const EGRESS_LISTEN_PORT_BASE = 10000;
/** First local listen port of an ingress agent; expose `i` listens on base + i. */
export const INGRESS_LISTEN_PORT_BASE = 20000;

/**
 * Local listen ports of an egress agent, sequential from 10000 in target order, then port order:
 * `result[t][p]` is the listen port of `targets[t].ports[p]`. The Service of target `t` maps its
 * port `p` to that listen port.
 */
export function egressListenPorts(
  targets: readonly { name: string; ports: readonly { port: number }[] }[],
): number[][] {
  let next = EGRESS_LISTEN_PORT_BASE;
  return targets.map((target) => target.ports.map(() => next++));
}

/** Local listen port of the ingress expose at `index` (the serve config forwards the tailnet port to it). */
export function ingressListenPort(index: number): number {
  return INGRESS_LISTEN_PORT_BASE + index;
}
