// The agent config: defaults filled in, and every invalid file named by its field.
import assert from "node:assert/strict";
import { test } from "node:test";
import { AgentConfigError, resolvePodIp, validateAgentConfig } from "../../src/contract/agent-config.js";

const target = { name: "postgres", host: "db-1", ports: [{ port: 5432, listenPort: 10000 }] };
const web = {
  name: "web",
  listenPort: 20000,
  mode: "http",
  backend: { host: "grafana.monitoring.svc", port: 3000 },
  tls: { certFile: "/tls/web/tls.crt", keyFile: "/tls/web/tls.key" },
  names: ["dash.ts.example.com", "grafana-eu.ts.example.com"],
};

test("defaults are filled in and the listen address follows the role, never where tailscaled's netstack forwards", () => {
  const egress = validateAgentConfig({ role: "egress", metricsPort: 9080, targets: [target] });
  assert.deepEqual(egress, {
    role: "egress",
    metricsPort: 9080,
    metricsHost: "pod-ip",
    listenHost: "pod-ip",
    tailscale: {},
    limits: {
      maxConnections: 4096,
      idleTimeoutSeconds: 300,
      dialTimeoutSeconds: 5,
      probeIntervalSeconds: 15,
      headerTimeoutSeconds: 10,
      tlsReloadIntervalSeconds: 5,
    },
    targets: [target],
    exposes: [],
  });
  const ingress = validateAgentConfig({ role: "ingress", metricsPort: 9080, exposes: [web] });
  assert.equal(ingress.listenHost, "127.0.0.2");
  assert.equal(ingress.metricsHost, "pod-ip");
  assert.equal(ingress.refuseHost, undefined);
  assert.deepEqual(ingress.exposes, [web]);
  // every expose of the TailnetIngress refused (a backend another namespace did not grant): the agent serves nothing
  assert.deepEqual(validateAgentConfig({ role: "ingress", metricsPort: 9080, exposes: [] }).exposes, []);
});

test("pod-ip is the POD_IP environment variable; without a usable one the agent does not start (issue 31)", () => {
  const egress = validateAgentConfig({ role: "egress", metricsPort: 9080, targets: [target] });
  const resolved = resolvePodIp(egress, { POD_IP: "10.244.1.7" });
  assert.deepEqual([resolved.metricsHost, resolved.listenHost], ["10.244.1.7", "10.244.1.7"]);
  assert.equal(resolvePodIp(egress, { POD_IP: " fd00::7 " }).listenHost, "fd00::7");
  const explicit = validateAgentConfig({ ...egress, metricsHost: "127.0.0.1", listenHost: "127.0.0.1" });
  assert.deepEqual(resolvePodIp(explicit, {}), explicit, "explicit addresses need no POD_IP");
  const ingress = validateAgentConfig({ role: "ingress", metricsPort: 9080, exposes: [web] });
  assert.equal(resolvePodIp(ingress, { POD_IP: "10.244.1.8" }).listenHost, "127.0.0.2");
  const rows: [NodeJS.ProcessEnv, string][] = [
    [{}, "agent config: metricsHost is pod-ip but POD_IP is not set (downward API status.podIP)"],
    [{ POD_IP: "" }, "agent config: metricsHost is pod-ip but POD_IP is not set (downward API status.podIP)"],
    [
      { POD_IP: "$(POD_IP)" },
      'agent config: metricsHost is pod-ip but POD_IP is not an IP address ("$(POD_IP)") (downward API status.podIP)',
    ],
  ];
  for (const [env, message] of rows) {
    assert.throws(
      () => resolvePodIp(egress, env),
      (err: unknown) => err instanceof AgentConfigError && err.message === message && err.field === "metricsHost",
      JSON.stringify(env),
    );
  }
  assert.throws(
    () => resolvePodIp({ ...egress, metricsHost: "127.0.0.1" }, {}),
    (err: unknown) => err instanceof AgentConfigError && err.field === "listenHost",
  );
  assert.throws(
    () => validateAgentConfig({ ...ingress, listenHost: "127.0.0.1", refuseHost: "127.0.0.1" }),
    (err: unknown) =>
      err instanceof AgentConfigError &&
      err.message === "agent config: refuseHost must differ from listenHost 127.0.0.1",
  );
});

test("validation does not modify its input", () => {
  const input = { role: "egress", metricsPort: 9080, targets: [target] };
  const copy = structuredClone(input);
  validateAgentConfig(input);
  assert.deepEqual(input, copy);
});

const validEgress = { role: "egress", metricsPort: 9080, targets: [target] };
const validIngress = { role: "ingress", metricsPort: 9080, exposes: [web] };
/** Invalid configs, each with the field and the one-line message validateAgentConfig names it by. */
const INVALID: { name: string; config: unknown; field: string; message: string }[] = [
  { name: "not an object", config: [], field: "", message: "agent config: must be a JSON object" },
  { name: "no role", config: { metricsPort: 9080 }, field: "role", message: "agent config: role is required" },
  {
    name: "unknown role",
    config: { ...validEgress, role: "router" },
    field: "role",
    message: "agent config: role must be one of egress, ingress",
  },
  {
    name: "unknown field",
    config: { ...validEgress, extra: true },
    field: "extra",
    message: "agent config: extra is not a known field",
  },
  {
    name: "connection limit of zero",
    config: { ...validEgress, limits: { maxConnections: 0 } },
    field: "limits.maxConnections",
    message: "agent config: limits.maxConnections must be >= 1",
  },
  {
    name: "negative idle timeout",
    config: { ...validEgress, limits: { idleTimeoutSeconds: -1 } },
    field: "limits.idleTimeoutSeconds",
    message: "agent config: limits.idleTimeoutSeconds must be > 0",
  },
  {
    name: "socks address without port",
    config: { ...validEgress, tailscale: { socksAddr: "127.0.0.1" } },
    field: "tailscale.socksAddr",
    message: "agent config: tailscale.socksAddr does not match ^(\\[[0-9a-fA-F:.]+\\]|[^:\\s]+):[0-9]{1,5}$",
  },
  {
    name: "target name not a DNS label",
    config: { ...validEgress, targets: [{ ...target, name: "Postgres" }] },
    field: "targets[0].name",
    message: "agent config: targets[0].name does not match ^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$",
  },
  {
    name: "target port out of range",
    config: { ...validEgress, targets: [{ ...target, ports: [{ port: 70000, listenPort: 10000 }] }] },
    field: "targets[0].ports[0].port",
    message: "agent config: targets[0].ports[0].port must be <= 65535",
  },
  {
    name: "duplicate target names",
    config: { ...validEgress, targets: [target, { ...target, ports: [{ port: 5432, listenPort: 10001 }] }] },
    field: "targets[1].name",
    message: 'agent config: targets[1].name duplicates targets[0].name "postgres"',
  },
  {
    name: "listen port used twice",
    config: { ...validEgress, targets: [target, { ...target, name: "replica" }] },
    field: "targets[1].ports[0].listenPort",
    message: "agent config: targets[1].ports[0].listenPort 10000 is already used by targets[0].ports[0].listenPort",
  },
  {
    name: "metrics port is a listen port",
    config: { ...validEgress, metricsPort: 10000 },
    field: "metricsPort",
    message: "agent config: metricsPort 10000 is also a listen port",
  },
  {
    name: "egress without targets",
    config: { role: "egress", metricsPort: 9080 },
    field: "targets",
    message: "agent config: targets must list at least one target for role egress",
  },
  {
    name: "ingress with targets",
    config: { ...validIngress, targets: [target] },
    field: "targets",
    message: "agent config: targets must be empty for role ingress",
  },
  {
    name: "http expose without tls",
    config: { ...validIngress, exposes: [{ ...web, tls: undefined }] },
    field: "exposes[0].tls",
    message: "agent config: exposes[0].tls is required in http mode",
  },
  {
    name: "http expose without names",
    config: { ...validIngress, exposes: [{ ...web, names: [] }] },
    field: "exposes[0].names",
    message: "agent config: exposes[0].names must list the DNS name in http mode",
  },
  {
    name: "two http exposes on one listener claim the same name",
    config: {
      ...validIngress,
      exposes: [web, { ...web, name: "api", names: ["api.ts.example.com", "DASH.ts.example.com."] }],
    },
    field: "exposes[1].names[1]",
    message: 'agent config: exposes[1].names[1] "DASH.ts.example.com." is already served by exposes[0]',
  },
  {
    name: "http exposes on one listener disagree on proxyProtocol",
    config: {
      ...validIngress,
      exposes: [web, { ...web, name: "api", names: ["api.ts.example.com"], proxyProtocol: true }],
    },
    field: "exposes[1].proxyProtocol",
    message: "agent config: exposes[1].proxyProtocol must match exposes[0] (same listen port)",
  },
  {
    name: "a tcp expose cannot share a listener",
    config: { ...validIngress, exposes: [web, { ...web, name: "ssh", mode: "tcp" }] },
    field: "exposes[1].listenPort",
    message: "agent config: exposes[1].listenPort 20000 is already used by exposes[0].listenPort",
  },
  {
    name: "unknown expose mode",
    config: { ...validIngress, exposes: [{ ...web, mode: "udp" }] },
    field: "exposes[0].mode",
    message: "agent config: exposes[0].mode must be one of tcp, http, kube-api",
  },
  {
    name: "kube-api without its credentials",
    config: { ...validIngress, tailscale: { localApiSocket: "/tmp/ts.sock" }, exposes: [{ ...web, mode: "kube-api" }] },
    field: "exposes[0].kubeApi",
    message: "agent config: exposes[0].kubeApi is required in kube-api mode",
  },
  {
    name: "kubeApi on an http expose",
    config: { ...validIngress, exposes: [{ ...web, kubeApi: { caFile: "/ca", tokenFile: "/token" } }] },
    field: "exposes[0].kubeApi",
    message: "agent config: exposes[0].kubeApi is only for mode kube-api",
  },
  {
    name: "kube-api without a LocalAPI to ask WhoIs",
    config: {
      ...validIngress,
      exposes: [{ ...web, tls: undefined, mode: "kube-api", kubeApi: { caFile: "/ca", tokenFile: "/token" } }],
    },
    field: "tailscale.localApiSocket",
    message: "agent config: tailscale.localApiSocket is required by a kube-api expose (WhoIs)",
  },
  {
    name: "backend without port",
    config: { ...validIngress, exposes: [{ ...web, backend: { host: "grafana" } }] },
    field: "exposes[0].backend.port",
    message: "agent config: exposes[0].backend.port is required",
  },
];

test("an invalid config is an error naming the field", () => {
  for (const row of INVALID) {
    // JSON round trip: `tls: undefined` means absent, as in a file.
    const config = JSON.parse(JSON.stringify(row.config));
    assert.throws(
      () => validateAgentConfig(config),
      (err: unknown) => {
        assert.ok(err instanceof AgentConfigError, row.name);
        assert.equal(err.message, row.message, row.name);
        assert.equal(err.field, row.field, row.name);
        return true;
      },
    );
  }
});

test("two http exposes may share a listener with distinct names", () => {
  const config = validateAgentConfig({
    role: "ingress",
    metricsPort: 9080,
    exposes: [web, { ...web, name: "api", names: ["api.ts.example.com"] }],
  });
  assert.equal(config.exposes.length, 2);
});

test("paths of an http expose: checked as the agent matches them, named by field", () => {
  const route = (path: string, pathType = "Prefix") => ({ path, pathType, backend: { host: "api.ns.svc", port: 80 } });
  const withPaths = (paths: unknown[], mode = "http") => ({
    role: "ingress",
    metricsPort: 9080,
    exposes: [{ ...web, mode, paths }],
  });
  const ok = validateAgentConfig(withPaths([route("/api"), route("/api", "Exact")]));
  assert.deepEqual(ok.exposes[0].paths, [route("/api"), route("/api", "Exact")]);
  const refused: [unknown, RegExp][] = [
    [withPaths([route("/api"), route("/api/")]), /exposes\[0\]\.paths\[1\] duplicates paths\[0\] \(Prefix \/api\)/],
    [withPaths([route("/a/./b")]), /exposes\[0\]\.paths\[0\] path "\/a\/\.\/b": no empty, \. or \.\. segments/],
    [withPaths([route("/a%2fb")]), /exposes\[0\]\.paths\[0\].*only visible ASCII/],
    [
      withPaths([route("/a", "ImplementationSpecific")]),
      /exposes\[0\]\.paths\[0\]\.pathType must be one of Exact, Prefix/,
    ],
    [withPaths([route("/a")], "tcp"), /exposes\[0\]\.paths is only for mode http/],
    [withPaths(Array.from({ length: 65 }, (_, i) => route(`/p${i}`))), /exposes\[0\]\.paths/],
  ];
  for (const [config, message] of refused) {
    assert.throws(
      () => validateAgentConfig(config),
      (e: unknown) => e instanceof AgentConfigError && message.test(e.message),
    );
  }
});

test("backend protocol (http1, h2c): kept where given, only in mode http, nothing else accepted", () => {
  const h2c = { host: "grpc.ns.svc", port: 50051, protocol: "h2c" };
  const config = validateAgentConfig({
    role: "ingress",
    metricsPort: 9080,
    exposes: [
      { ...web, backend: h2c, paths: [{ path: "/v1", pathType: "Prefix", backend: { ...h2c, protocol: "http1" } }] },
    ],
  });
  assert.deepEqual(config.exposes[0].backend, h2c);
  assert.equal(config.exposes[0].paths?.[0].backend?.protocol, "http1");
  const refused: [unknown, RegExp][] = [
    [{ ...web, backend: { ...h2c, protocol: "h2" } }, /exposes\[0\]\.backend\.protocol must be one of http1, h2c/],
    [
      { ...web, paths: [{ path: "/v1", pathType: "Prefix", backend: { ...h2c, protocol: "grpc" } }] },
      /exposes\[0\]\.paths\[0\]\.backend\.protocol must be one of http1, h2c/,
    ],
    [
      { name: "db", listenPort: 0, mode: "tcp", backend: h2c },
      /^agent config: exposes\[0\]\.backend\.protocol is only for mode http \(tcp passes bytes; kube-api is HTTP\/1\.1\)$/,
    ],
  ];
  for (const [expose, message] of refused) {
    assert.throws(
      () => validateAgentConfig({ role: "ingress", metricsPort: 9080, exposes: [expose] }),
      (e: unknown) => e instanceof AgentConfigError && message.test(e.message),
      String(message),
    );
  }
});
