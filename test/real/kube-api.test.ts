/**
 * The kube-api expose on the real stack: the real kube-apiserver (kube/cluster.ts, RBAC on), the real
 * Headscale 0.29.3 and real tailscaled peers. The proxy node (tag:k8s-api) runs tailscaled in its namespace
 * with a serve config that forwards tailnet port 80 (PROXY protocol v2) to the agent; the agent is this test
 * process (as the operator is in operator.ts), listening on the bridge leg (net.rootIp) and dialling the
 * API server on loopback, so no packet leaves the test namespaces. The policy grants only group:eng (alice's
 * laptop) tcp:80 on the proxy plus the `tailscale.com/cap/kubernetes` app capability with
 * `impersonate.groups: ["eng"]`; RBAC gives group eng a Role in namespace dev only. kubectl on the test
 * process reaches the proxy through the laptop's (or the outsider's) tailscaled SOCKS5 server, i.e. over
 * WireGuard from that peer.
 */
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { promisify } from "node:util";
import { SocksClient } from "socks";
import { fetchWhoIs } from "../../src/agent/localapi.js";
import type { AgentLogger, LogFields } from "../../src/agent/log.js";
import { type RunningAgent, startAgent } from "../../src/agent/main.js";
import { bins, requireBins } from "./bins.js";
import { type RealHeadscale, startHeadscale } from "./headscale.js";
import { type Cluster, kubectlBinary, startCluster } from "./kube/cluster.js";
import { TestNet } from "./net.js";
import { withUnreachable } from "./operator.js";
import { type Peer, startPeer, waitFor } from "./peers.js";

const run = promisify(execFile);
const PROXY_TAG = "tag:k8s-api";
const PROXY_PORT = 80;
const POLICY = `{
  "groups": { "group:eng": ["alice@"] },
  "tagOwners": { "${PROXY_TAG}": ["group:eng"] },
  "grants": [
    {
      "src": ["group:eng"],
      "dst": ["${PROXY_TAG}"],
      "ip": ["tcp:${PROXY_PORT}"],
      "app": { "tailscale.com/cap/kubernetes": [ { "impersonate": { "groups": ["eng"] } } ] }
    }
  ]
}
`;
/** What the chart's ClusterRole gives the proxy's ServiceAccount: impersonation of users and groups, nothing else. */
const RBAC = `
apiVersion: v1
kind: Namespace
metadata: { name: tailnet-system }
---
apiVersion: v1
kind: ServiceAccount
metadata: { name: kube-api, namespace: tailnet-system }
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: { name: tailnet-operator-kube-api-impersonator }
rules:
  - apiGroups: [""]
    resources: [users, groups]
    verbs: [impersonate]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: { name: tailnet-system-kube-api }
roleRef: { apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: tailnet-operator-kube-api-impersonator }
subjects: [ { kind: ServiceAccount, name: kube-api, namespace: tailnet-system } ]
---
apiVersion: v1
kind: Namespace
metadata: { name: dev }
---
apiVersion: v1
kind: Namespace
metadata: { name: prod }
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: { name: eng, namespace: dev }
rules:
  - apiGroups: [""]
    resources: [pods]
    verbs: [get, list, watch]
  - apiGroups: [""]
    resources: [pods/exec, pods/portforward]
    verbs: [create, get]
  - apiGroups: [""]
    resources: [configmaps]
    verbs: [get, list, create, patch]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: { name: eng, namespace: dev }
roleRef: { apiGroup: rbac.authorization.k8s.io, kind: Role, name: eng }
subjects: [ { kind: Group, apiGroup: rbac.authorization.k8s.io, name: eng } ]
`;
const pod = (ns: string) => `
apiVersion: v1
kind: Pod
metadata: { name: web, namespace: ${ns} }
spec:
  containers: [ { name: web, image: registry.example/web:1 } ]
`;

describe("the Kubernetes API over the tailnet (real kube-apiserver, Headscale, tailscaled)", {
  timeout: 300_000,
}, () => {
  let net: TestNet;
  let hs: RealHeadscale;
  let cluster: Cluster;
  let laptop: Peer;
  let outsider: Peer;
  let proxy: Peer;
  let agent: RunningAgent;
  let proxyIp: string;
  let laptopIp: string;
  let outsiderIp: string;
  const logs: { msg: string; fields: LogFields }[] = [];

  before(async () => {
    requireBins(["headscale", "tailscaled", "tailscale"]);
    net = await TestNet.create({ id: "kube-api" });
    const policyFile = join(net.dir, "policy.hujson");
    [hs, cluster] = await Promise.all([startHeadscale(net), startCluster(), writeFile(policyFile, POLICY)]).then(
      ([h, c]) => [h, c] as const,
    );
    await hs.cli(["policy", "set", "-f", policyFile]);
    await hs.userId("alice");
    await hs.userId("mallory");
    [laptop, outsider, proxy] = await Promise.all([
      startPeer(net, hs, "laptop", { user: "alice" }),
      startPeer(net, hs, "outsider", { user: "mallory" }),
      startPeer(net, hs, "kube-api", { tags: [PROXY_TAG] }),
    ]);
    [proxyIp, laptopIp, outsiderIp] = await Promise.all([proxy, laptop, outsider].map(async (p) => (await p.ips())[0]));

    cluster.kubectl(["apply", "-f", "-"], { input: RBAC });
    cluster.kubectl(["apply", "-f", "-"], { input: pod("dev") });
    cluster.kubectl(["apply", "-f", "-"], { input: pod("prod") });
    const token = cluster.kubectl(["-n", "tailnet-system", "create", "token", "kube-api", "--duration=1h"]).trim();
    const tokenFile = join(net.dir, "kube-api-token");
    await writeFile(tokenFile, token, { mode: 0o600 });

    const record = (msg: string, fields?: LogFields) => logs.push({ msg, fields: fields ?? {} });
    const log: AgentLogger = { debug: record, info: record, warn: record, error: record };
    const apiUrl = new URL(cluster.server);
    agent = await startAgent(
      {
        role: "ingress",
        metricsPort: 0,
        metricsHost: "127.0.0.1",
        listenHost: net.rootIp,
        tailscale: { localApiSocket: join(proxy.host.dir, "tailscaled.sock") },
        exposes: [
          {
            name: "kube-api",
            mode: "kube-api",
            listenPort: 0,
            proxyProtocol: true,
            backend: { host: apiUrl.hostname, port: Number(apiUrl.port) },
            kubeApi: { caFile: join(cluster.dir, "ca.crt"), tokenFile },
          },
        ],
      },
      { timers: false, defaultMetrics: false, log },
    );
    // What the operator renders as TS_SERVE_CONFIG: tailnet port 80 → the agent, PROXY v2 ahead of each connection.
    const serve = {
      TCP: { [PROXY_PORT]: { TCPForward: `${net.rootIp}:${agent.ports.exposes[0].listenPort}`, ProxyProtocol: 2 } },
    };
    const set = await proxy.host.exec(
      bins.tailscale,
      [`--socket=${join(proxy.host.dir, "tailscaled.sock")}`, "serve", "set-raw"],
      { input: JSON.stringify(serve) },
    );
    assert.equal(set.code, 0, set.stderr);
    // Ready once both netmaps hold the other (the laptop dials the proxy; the proxy's WhoIs knows the laptop).
    await waitFor(
      "kubectl via the laptop to reach the API server",
      async () => {
        const r = await kubectlVia(laptop, ["--request-timeout=5s", "get", "--raw", "/version"]);
        return r.status === 0;
      },
      60_000,
    );
  });
  after(async () => {
    await agent?.close();
    for (const p of [laptop, outsider, proxy]) await p?.close().catch(() => undefined);
    await hs?.close().catch(() => undefined);
    await cluster?.stop();
    await net?.close();
  });

  /** kubectl on the test process, through `peer`'s tailscaled SOCKS5: the request crosses WireGuard from there. */
  const kubectlVia = async (peer: Peer, args: string[], input?: string) => {
    const kubeconfig = join(net.dir, `${peer.name}.kubeconfig`);
    await writeFile(
      kubeconfig,
      JSON.stringify({
        apiVersion: "v1",
        kind: "Config",
        clusters: [
          {
            name: "tailnet",
            cluster: {
              server: `http://${proxyIp}:${PROXY_PORT}`,
              "proxy-url": `socks5://${peer.socks5.host}:${peer.socks5.port}`,
            },
          },
        ],
        users: [{ name: "tailnet", user: {} }],
        contexts: [{ name: "tailnet", context: { cluster: "tailnet", user: "tailnet" } }],
        "current-context": "tailnet",
      }),
    );
    const child = run(kubectlBinary(), ["--request-timeout=20s", ...args], {
      env: { PATH: process.env.PATH ?? "", HOME: net.dir, KUBECONFIG: kubeconfig },
      maxBuffer: 16 * 1024 * 1024,
    });
    if (input !== undefined) child.child.stdin?.end(input);
    try {
      const { stdout, stderr } = await child;
      return { status: 0, stdout, stderr };
    } catch (err) {
      const e = err as { code?: number; stdout?: string; stderr?: string };
      return { status: e.code ?? 1, stdout: e.stdout ?? "", stderr: e.stderr ?? "" };
    }
  };
  const requests = () => logs.filter((l) => l.msg === "kube-api request").map((l) => l.fields);

  it("Headscale 0.29 passes the grant's app capability to the proxy node: WhoIs CapMap holds it", async () => {
    const whois = (await fetchWhoIs(join(proxy.host.dir, "tailscaled.sock"), laptopIp, 5000)) as {
      UserProfile: { LoginName: string };
      CapMap?: Record<string, unknown>;
    };
    assert.equal(whois.UserProfile.LoginName, "alice");
    assert.deepEqual(whois.CapMap?.["tailscale.com/cap/kubernetes"], [{ impersonate: { groups: ["eng"] } }]);
  });

  it("the proxy's ServiceAccount may impersonate users and groups and nothing else", () => {
    const sa = "--as=system:serviceaccount:tailnet-system:kube-api";
    const can = (...args: string[]) => cluster.tryKubectl(["auth", "can-i", sa, ...args]).stdout.trim();
    assert.equal(can("impersonate", "users"), "yes");
    assert.equal(can("impersonate", "groups"), "yes");
    for (const denied of [
      ["impersonate", "serviceaccounts"],
      ["impersonate", "uids"],
      ["impersonate", "userextras/scopes"],
      ["get", "pods", "-n", "dev"],
      ["list", "secrets", "-A"],
      ["create", "clusterrolebindings"],
    ])
      assert.equal(can(...denied), "no", denied.join(" "));
  });

  it("the laptop is alice in group eng to the real API server, whatever it sends as credentials or --as", async () => {
    const plain = await kubectlVia(laptop, ["auth", "whoami", "-o", "json"]);
    assert.equal(plain.status, 0, plain.stderr);
    const user = JSON.parse(plain.stdout).status.userInfo;
    assert.equal(user.username, "alice");
    assert.deepEqual(user.groups, ["eng", "system:authenticated"]);
    // A client's own token and impersonation headers never reach the API server.
    const forged = await kubectlVia(laptop, [
      "--token=forged",
      "--as=system:admin",
      "--as-group=system:masters",
      "auth",
      "whoami",
      "-o",
      "json",
    ]);
    assert.equal(forged.status, 0, forged.stderr);
    assert.deepEqual(JSON.parse(forged.stdout).status.userInfo, user);
  });

  it("RBAC decides: get/list/watch pods in dev pass, prod is refused by the real API server with 403", async () => {
    const list = await kubectlVia(laptop, ["-n", "dev", "get", "pods", "-o", "name"]);
    assert.equal(list.status, 0, list.stderr);
    assert.equal(list.stdout.trim(), "pod/web");
    const watch = await kubectlVia(laptop, ["get", "--raw", "/api/v1/namespaces/dev/pods?watch=true&timeoutSeconds=1"]);
    assert.equal(watch.status, 0, watch.stderr);
    assert.match(watch.stdout, /"type":"ADDED".*"name":"web"/);
    const prod = await kubectlVia(laptop, ["-n", "prod", "get", "pods"]);
    assert.notEqual(prod.status, 0);
    assert.match(
      prod.stderr,
      /pods is forbidden: User "alice" cannot list resource "pods" in API group "" in the namespace "prod"/,
    );
    const secrets = await kubectlVia(laptop, ["-n", "dev", "get", "secrets"]);
    assert.match(secrets.stderr, /secrets is forbidden: User "alice"/);
    const seen = requests().map((f) => `${f.verb} ${f.path} ${f.status}`);
    assert.ok(seen.includes("list /api/v1/namespaces/dev/pods 200"), seen.join("\n"));
    assert.ok(seen.includes("watch /api/v1/namespaces/dev/pods 200"), seen.join("\n"));
    assert.ok(seen.includes("list /api/v1/namespaces/prod/pods 403"), seen.join("\n"));
    assert.ok(requests().every((f) => f.user === "alice" && f.groups === "eng" && f.peer === laptopIp));
    assert.match(String(requests()[0].tailnet), /^alice \(laptop\./);
  });

  it("server-side apply (PATCH application/apply-patch+yaml) works through the proxy", async () => {
    const manifest =
      "apiVersion: v1\nkind: ConfigMap\nmetadata: { name: settings, namespace: dev }\ndata: { color: blue }\n";
    const applied = await kubectlVia(laptop, ["apply", "--server-side", "-f", "-"], manifest);
    assert.equal(applied.status, 0, applied.stderr);
    assert.match(applied.stdout, /configmap\/settings serverside-applied/);
    const managers = cluster.kubectl([
      "-n",
      "dev",
      "get",
      "configmap",
      "settings",
      "-o",
      "jsonpath={.metadata.managedFields[*].manager}",
    ]);
    assert.equal(managers, "kubectl");
    assert.ok(
      requests().some(
        (f) => f.verb === "patch" && f.path === "/api/v1/namespaces/dev/configmaps/settings" && f.status === 201,
      ),
    );
  });

  it("exec: the upgrade request is forwarded as alice and the API server's answer comes back unchanged", async () => {
    // No kubelet here: the API server answers the exec of an unscheduled pod itself, before any upgrade.
    const exec = await kubectlVia(laptop, ["-n", "dev", "exec", "web", "--", "true"]);
    assert.notEqual(exec.status, 0);
    assert.match(exec.stderr, /pod web does not have a host assigned/);
    const refused = await kubectlVia(laptop, ["-n", "prod", "exec", "web", "--", "true"]);
    // kubectl reads the pod first: the real API server refuses that as alice
    assert.match(
      refused.stderr,
      /pods "web" is forbidden: User "alice" cannot get resource "pods" .* namespace "prod"/,
    );
    assert.ok(requests().some((f) => f.path === "/api/v1/namespaces/dev/pods/web/exec" && f.status === 400));
  });

  it("a WebSocket watch: the real API server answers 101 to the impersonated upgrade, the stream comes back", async () => {
    /** Raw bytes over the laptop's SOCKS5 (i.e. over WireGuard) until `done` or 10 s. */
    const raw = async (request: string, done: (text: string) => boolean) => {
      const { socket } = await SocksClient.createConnection({
        proxy: { host: laptop.socks5.host, port: laptop.socks5.port, type: 5 },
        command: "connect",
        destination: { host: proxyIp, port: PROXY_PORT },
        timeout: 8000,
      });
      return new Promise<string>((resolve) => {
        let text = "";
        const finish = () => {
          clearTimeout(timer);
          socket.destroy();
          resolve(text);
        };
        const timer = setTimeout(finish, 10_000);
        socket.on("data", (chunk: Buffer) => {
          text += chunk.toString("latin1");
          if (done(text)) finish();
        });
        socket.on("error", finish);
        socket.on("close", finish);
        socket.write(request);
      });
    };
    const upgrade = (ns: string) =>
      `GET /api/v1/namespaces/${ns}/pods?watch=true HTTP/1.1\r\nHost: kube\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n` +
      // golang.org/x/net/websocket (the API server's watch handler) refuses a handshake without Origin
      "Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nOrigin: http://kube\r\n" +
      "Impersonate-User: system:admin\r\n\r\n";
    const dev = await raw(upgrade("dev"), (text) => text.includes('"name":"web"'));
    assert.match(dev, /^HTTP\/1\.1 101 Switching Protocols\r\n/);
    assert.match(dev, /"type":"ADDED".*"name":"web"/);
    const prod = await raw(upgrade("prod"), (text) => text.includes("\r\n\r\n{") && text.endsWith("}\n"));
    assert.match(prod, /^HTTP\/1\.1 403 Forbidden\r\n/);
    assert.match(prod, /User \\"alice\\" cannot watch resource \\"pods\\"/);
    assert.ok(
      requests().some((f) => f.verb === "watch" && f.path === "/api/v1/namespaces/dev/pods" && f.status === 101),
    );
  });

  it("the outsider's packets never reach the proxy: the policy grants it nothing", async () => {
    const before = logs.length;
    const outside = await withUnreachable(outsider, [`${proxyIp}/32`], () =>
      kubectlVia(outsider, ["--request-timeout=5s", "-n", "dev", "get", "pods"]),
    );
    assert.notEqual(outside.status, 0);
    assert.ok(!logs.slice(before).some((l) => l.fields.peer === outsiderIp), "the agent never saw the outsider");
    assert.deepEqual(await net.containmentProblems(), []);
  });
});
