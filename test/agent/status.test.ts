// /status: the netmap from tailscaled's LocalAPI, target addresses resolved from it, reachability from the
// probes — served in exactly the api.md shape.
import assert from "node:assert/strict";
import { test } from "node:test";
import { fetchLocalApiStatus, mapLocalApiStatus } from "../../src/agent/localapi.js";
import { buildStatus, resolveTargetAddress } from "../../src/agent/status.js";
import { closedPort, startEchoServer } from "../fakes/agent/echo.js";
import { fakeStatus, startFakeLocalApi } from "../fakes/agent/localapi.js";
import { startSocks5Server } from "../fakes/agent/socks5.js";
import { agentFor, httpGet } from "./helpers.js";

const self = {
  HostName: "shop-db",
  DNSName: "shop-db.ts.example.com.",
  TailscaleIPs: ["100.64.0.9", "fd7a:115c:a1e0::9"],
  Online: true,
};
const db1 = {
  HostName: "db-1",
  DNSName: "db-1.ts.example.com.",
  TailscaleIPs: ["100.64.0.7", "fd7a:115c:a1e0::7"],
  PrimaryRoutes: null,
  Online: true,
};
const router = {
  HostName: "ubuntu",
  DNSName: "router-1.ts.example.com.",
  TailscaleIPs: ["fd7a:115c:a1e0::3", "100.64.0.3"],
  PrimaryRoutes: ["192.168.10.0/24"],
  Online: false,
};

test("/status maps the LocalAPI netmap and probes to the api.md shape; an ungranted peer is simply absent", async (t) => {
  const echo = await startEchoServer();
  t.after(() => echo.close());
  const down = await closedPort();
  const localapi = await startFakeLocalApi(fakeStatus(self, [router, db1]));
  t.after(() => localapi.close());
  const socks = await startSocks5Server({ resolve: () => "127.0.0.1" });
  t.after(() => socks.close());
  const agent = await agentFor(t, {
    role: "egress",
    metricsPort: 0,
    metricsHost: "127.0.0.1",
    listenHost: "127.0.0.1",
    tailscale: { socksAddr: socks.address, localApiSocket: localapi.socketPath },
    targets: [
      { name: "postgres", host: "db-1", ports: [{ port: echo.port, listenPort: 0 }] },
      // redis-1 is not in the netmap (no grant): the address stays the configured host.
      { name: "redis", host: "redis-1", ports: [{ port: down, listenPort: 0 }] },
      { name: "nas", host: "192.168.10.20", ports: [{ port: echo.port, listenPort: 0 }] },
    ],
  });

  await agent.refresh();
  const answer = await httpGet(agent.metricsPort, "/status");
  assert.equal(answer.status, 200);
  assert.equal(answer.headers["content-type"], "application/json");
  assert.deepEqual(JSON.parse(answer.body), {
    ready: true,
    self: { hostName: "shop-db", tailscaleIPs: ["100.64.0.9", "fd7a:115c:a1e0::9"], online: true },
    peers: [
      {
        hostName: "db-1",
        dnsName: "db-1.ts.example.com.",
        tailscaleIPs: ["100.64.0.7", "fd7a:115c:a1e0::7"],
        primaryRoutes: [],
        online: true,
      },
      {
        hostName: "ubuntu",
        dnsName: "router-1.ts.example.com.",
        tailscaleIPs: ["fd7a:115c:a1e0::3", "100.64.0.3"],
        primaryRoutes: ["192.168.10.0/24"],
        online: false,
      },
    ],
    targets: [
      { name: "postgres", address: "100.64.0.7", reachable: true, error: "", via: "tailnet" },
      {
        name: "redis",
        address: "redis-1",
        reachable: false,
        error: `dial redis-1:${down}: SOCKS5 ConnectionRefused`,
        via: "unknown",
      },
      // behind the router's subnet route, but tailscaled does not accept routes (the Linux default):
      // the dial went out through the pod network
      { name: "nas", address: "192.168.10.20", reachable: true, error: "", via: "outside" },
    ],
    exposes: [],
  });
  for (const path of ["/localapi/v0/status", "/localapi/v0/prefs"]) {
    assert.deepEqual(
      localapi.requests.find((r) => r.path === path),
      { method: "GET", path, host: "local-tailscaled.sock", secTailscale: "localapi" },
    );
  }
  // --accept-routes (Prefs.RouteAll): the same dial goes through the tailnet
  localapi.setPrefs({ RouteAll: true });
  const accepted = await agent.refresh();
  assert.deepEqual(
    accepted.targets.map((x) => [x.name, x.via]),
    [
      ["postgres", "tailnet"],
      ["redis", "unknown"],
      ["nas", "tailnet"],
    ],
  );
});

test("a failing LocalAPI makes the agent not ready and keeps the last netmap", async (t) => {
  const echo = await startEchoServer();
  t.after(() => echo.close());
  const localapi = await startFakeLocalApi(fakeStatus(self, [db1]));
  t.after(() => localapi.close());
  const agent = await agentFor(t, {
    role: "egress",
    metricsPort: 0,
    metricsHost: "127.0.0.1",
    listenHost: "127.0.0.1",
    tailscale: { localApiSocket: localapi.socketPath },
    targets: [{ name: "postgres", host: "127.0.0.1", ports: [{ port: echo.port, listenPort: 0 }] }],
  });

  const healthy = await agent.refresh();
  assert.equal(healthy.ready, true);
  localapi.setFailure(500);
  const failing = await agent.refresh();
  assert.equal(failing.ready, false);
  assert.deepEqual(failing.peers, healthy.peers);
  localapi.setFailure(undefined);
  localapi.setStatus(fakeStatus(self, [db1], "NeedsLogin"));
  assert.equal((await agent.refresh()).ready, false, "logged out tailscaled is not ready");
});

test("fetchLocalApiStatus names the operation when tailscaled refuses or is absent", async (t) => {
  const localapi = await startFakeLocalApi(fakeStatus(self, []));
  t.after(() => localapi.close());
  localapi.setFailure(503);
  await assert.rejects(fetchLocalApiStatus(localapi.socketPath, 1000), {
    message: "LocalAPI GET /localapi/v0/status: 503 failed",
  });
  await assert.rejects(fetchLocalApiStatus(`${localapi.socketPath}.missing`, 1000), {
    message: "LocalAPI GET /localapi/v0/status: ENOENT",
  });
});

test("mapLocalApiStatus tolerates a status without peers or fields", () => {
  assert.deepEqual(mapLocalApiStatus({ BackendState: "Starting", Self: { HostName: "x" }, Peer: null }), {
    backendState: "Starting",
    self: { hostName: "x", tailscaleIPs: [], online: false },
    peers: [],
  });
  assert.deepEqual(mapLocalApiStatus("garbage"), {
    backendState: "",
    self: { hostName: "", tailscaleIPs: [], online: false },
    peers: [],
  });
});

test("resolveTargetAddress: how a target host becomes its tailnet address", () => {
  const peers = mapLocalApiStatus(fakeStatus(self, [db1, router])).peers;
  const rows: { name: string; host: string; want: string }[] = [
    { name: "an IP stays as it is", host: "100.64.0.50", want: "100.64.0.50" },
    { name: "MagicDNS FQDN with trailing dot", host: "db-1.ts.example.com.", want: "100.64.0.7" },
    { name: "MagicDNS FQDN, any case", host: "DB-1.ts.example.com", want: "100.64.0.7" },
    { name: "node name = first DNS label, IPv4 preferred", host: "router-1", want: "100.64.0.3" },
    { name: "OS host name", host: "ubuntu", want: "100.64.0.3" },
    { name: "not in the netmap", host: "redis-1", want: "redis-1" },
  ];
  for (const row of rows) assert.equal(resolveTargetAddress(row.host, peers), row.want, row.name);
});

test("buildStatus: before the first probe nothing is reachable; without a LocalAPI, ready follows the listeners", () => {
  const status = buildStatus({
    listening: true,
    netmapConfigured: false,
    netmapFailed: false,
    targets: [{ name: "postgres", host: "db-1", ports: [{ port: 5432, listenPort: 10000 }] }],
    exposes: [],
    probes: new Map(),
  });
  assert.deepEqual(status, {
    ready: true,
    self: { hostName: "", tailscaleIPs: [], online: false },
    peers: [],
    targets: [{ name: "postgres", address: "db-1", reachable: false, error: "not probed yet", via: "unknown" }],
    exposes: [],
  });
  assert.equal(
    buildStatus({
      ...status,
      listening: false,
      netmapConfigured: false,
      netmapFailed: false,
      targets: [],
      exposes: [],
      probes: new Map(),
    }).ready,
    false,
  );
});
