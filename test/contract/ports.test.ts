import assert from "node:assert/strict";
import { test } from "node:test";
import {
  AGENT_CONFIG_PATH,
  AGENT_METRICS_PORT,
  egressListenPorts,
  ingressListenPort,
  NETSTACK_FORWARD_HOST,
  POD_IP_ENV,
  POD_IP_HOST,
  POD_LOCAL_HOST,
  TAILSCALE_LOCAL_ADDR_PORT,
  TAILSCALE_SOCKS_ADDR,
  TAILSCALED_SOCKET,
} from "../../src/contract/ports.js";

test("egress listen ports run from 10000 in target order, then port order", () => {
  const targets = [
    { name: "postgres", ports: [{ port: 5432 }, { port: 5433 }] },
    { name: "redis", ports: [{ port: 6379 }] },
    { name: "web", ports: [{ port: 80 }, { port: 443 }] },
  ];
  assert.deepEqual(egressListenPorts(targets), [[10000, 10001], [10002], [10003, 10004]]);
  assert.deepEqual(egressListenPorts([]), []);
});

test("ingress expose i listens on 20000 + i", () => {
  assert.deepEqual([0, 1, 31].map(ingressListenPort), [20000, 20001, 20031]);
});

test("the fixed agent ports and paths", () => {
  assert.equal(AGENT_METRICS_PORT, 9080);
  assert.equal(AGENT_CONFIG_PATH, "/etc/tailnet-agent/config.json");
  assert.equal(TAILSCALED_SOCKET, "/var/run/tailscale/tailscaled.sock");
  // off 127.0.0.1, where tailscaled's netstack forwards tailnet connections serve does not handle (issue 31)
  assert.equal(POD_LOCAL_HOST, "127.0.0.2");
  assert.equal(NETSTACK_FORWARD_HOST, "127.0.0.1");
  assert.equal(TAILSCALE_SOCKS_ADDR, "127.0.0.2:1055");
  assert.equal(TAILSCALE_LOCAL_ADDR_PORT, "127.0.0.2:9002");
  assert.deepEqual([POD_IP_HOST, POD_IP_ENV], ["pod-ip", "POD_IP"]);
});
