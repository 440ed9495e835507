// Fixed ports and paths shared by the agent and the operator's builders: the operator renders the agent
// ConfigMap, the container ports and the tailscaled serve config from the same rules, so both sides agree
// without talking to each other.

/** The agent's HTTP port: `/metrics`, `/status`, `/healthz` (container port named "metrics"). */
export const AGENT_METRICS_PORT = 9080;
/** Where the operator mounts the agent config (ConfigMap key `config.json`). */
export const AGENT_CONFIG_PATH = "/etc/tailnet-agent/config.json";
/** tailscaled's LocalAPI unix socket in the shared `/var/run/tailscale` volume. */
export const TAILSCALED_SOCKET = "/var/run/tailscale/tailscaled.sock";
/**
 * The loopback address of everything in the pod that only the pod itself may reach: tailscaled's serve
 * targets, its SOCKS5 proxy and containerboot's local server. In userspace mode tailscaled's netstack hands
 * every tailnet TCP/UDP connection that serve does not handle to 127.0.0.1:<port> (tailscale.com
 * wgengine/netstack/netstack.go acceptTCP: a destination that is one of the node's Tailscale IPs is dialled
 * as ipv4Loopback; acceptUDP/forwardUDP likewise), so a listener on 127.0.0.1 or 0.0.0.0 is a tailnet
 * service on every port the policy opens. Netstack never dials 127.0.0.2, and the packet filter drops a
 * packet addressed to it (wgengine/filter/filter.go pre: the destination must be one of the node's own
 * addresses or routes; agents advertise none). serve's TCPForward dials whatever address its config names
 * (ipn/ipnlocal/serve.go tcpHandlerForServeTCP → SystemDial, loopback not bound to an interface:
 * net/netns/netns_linux.go controlC), so serve still reaches it. Linux routes all of 127.0.0.0/8 to lo.
 */
export const POD_LOCAL_HOST = "127.0.0.2";
/** Where netstack delivers tailnet connections serve does not handle (see POD_LOCAL_HOST). */
export const NETSTACK_FORWARD_HOST = "127.0.0.1";
/** tailscaled's SOCKS5 proxy (`--socks5-server`), run only in egress pods, which dial tailnet targets through it. */
export const TAILSCALE_SOCKS_ADDR = `${POD_LOCAL_HOST}:1055`;
/** containerboot's local server (TS_LOCAL_ADDR_PORT: tailscaled's metrics), for processes in the pod only. */
export const TAILSCALE_LOCAL_ADDR_PORT = `${POD_LOCAL_HOST}:9002`;
/**
 * The agent config's word for "the pod's own IP" (metricsHost, listenHost): the agent reads the address from
 * the POD_IP environment variable (downward API `status.podIP`). Kubelet probes, Services and the operator's
 * /status scrape all use the pod IP; netstack never forwards to it and the filter drops tailnet packets for it.
 */
export const POD_IP_HOST = "pod-ip";
export const POD_IP_ENV = "POD_IP";

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
