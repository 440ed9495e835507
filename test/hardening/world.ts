/**
 * One world with every real kind: a Tailnet (Apply mode, base policy, allowlists, reserved networks,
 * baseDomain) and its API key Secret, a TailnetEgress with one node target, a TailnetIngress in http
 * mode with a TLS Secret from the test PKI, a TailnetSite whose router advertises its prefix, and a
 * TailnetGateway — all driven by the Metacontroller emulator through the real hook server, against
 * the fake Headscale 0.29. Egress and ingress have real agents on loopback (the emulator's pods point
 * at their /status); agent and gateway nodes register with the keys the operator created. No kind is
 * stubbed, so the Tailnet's policy writes, Headscale's auto-approval and the site's and gateway's
 * approvals all meet here. One injectable clock drives the server, the view cache and the fake.
 */

import { type RunningAgent, startAgent } from "../../src/agent/main.js";
import { API_VERSION } from "../../src/api/schemas.js";
import { HeadscaleViews } from "../../src/headscale/view.js";
import { ingressAgentConfig } from "../../src/kinds/composite/ingress/children.js";
import { readIngressSpec } from "../../src/kinds/composite/ingress/spec.js";
import { ingressNames } from "../../src/kinds/shared/ingress-names.js";
import { b64 } from "../../src/kinds/shared/secrets.js";
import { createOperatorMetrics } from "../../src/metrics/registry.js";
import { parseHuJson } from "../../src/policy/hujson.js";
import { memoryEventRecorder } from "../../src/server/events.js";
import { type EchoServer, type HttpBackend, startEchoServer, startHttpBackend } from "../fakes/agent/echo.js";
import { type FakeLocalApi, fakeStatus, startFakeLocalApi } from "../fakes/agent/localapi.js";
import { createTestPki, type IssuedCertificate } from "../fakes/agent/pki.js";
import { startSocks5Server } from "../fakes/agent/socks5.js";
import { type FakeNode, type PolicyMode, useFakeHeadscale } from "../fakes/headscale/index.js";
import { FakeMetacontroller, type HookCall } from "../fakes/metacontroller.js";
import { loopStore, startPod } from "../fakes/pod-lifecycle.js";
import { parentObject } from "../fixtures/hooks.js";
import { build } from "../helpers/server.js";
import { loopbackEgressAgent } from "../kinds/composite/egress/world.js";

export const API = API_VERSION;
export const T0 = new Date("2026-11-29T10:00:00Z");
export const OPS = "tailnet-system";
export const ZONE = "ts.example.com";
export const SITE_PREFIX = "192.168.10.0/24";
export const GW_ROUTE = "10.96.0.0/12";
export const ROUTER_TAG = "tag:router-home";
export const TAGS = { egress: "tag:k8s-shop-db", ingress: "tag:k8s-monitoring-grafana", gateway: "tag:k8s-infra-gw" };
/** The API key planted in the fake and in the API key Secret: its secret part is distinctive. */
export const API_KEY = `hskey-api-plantd01-${"PLANTEDapiKEY".repeat(4)}0123456789abcdef`;
export const API_KEY_SECRET_PART = API_KEY.slice("hskey-api-plantd01-".length);
export const BASE_POLICY = `// base policy, as kept in Git
{
  "groups": { "group:eng": ["alice@"], "group:platform": ["alice@"] },
  "acls": [ { "action": "accept", "src": ["group:eng"], "dst": ["*:*"] }, ],
}`;
/** Valid around T0 for every name the ingress serves. */
const CERT_VALIDITY = { notBefore: new Date("2026-11-01T00:00:00Z"), notAfter: new Date("2027-01-01T00:00:00Z") };
export const CERT_NAMES = ["dash.ts.example.com", "grafana-eu.ts.example.com"];

/** The parents of the world: kind, name, namespace. */
export const PARENTS = [
  { kind: "Tailnet", name: "home", namespace: undefined },
  { kind: "TailnetEgress", name: "db", namespace: "shop" },
  { kind: "TailnetIngress", name: "grafana", namespace: "monitoring" },
  { kind: "TailnetSite", name: "lan", namespace: "net" },
  { kind: "TailnetGateway", name: "gw", namespace: "infra" },
] as const;
export type ParentKind = (typeof PARENTS)[number]["kind"];
export type Reasons = Record<ParentKind, Record<string, string>>;

/** Condition type → reason of every parent when the world is healthy and settled. */
export const READY: Reasons = {
  Tailnet: {
    ApiReachable: "Reachable",
    ApiKeyValid: "Valid",
    HeadscaleCompatible: "Compatible",
    PolicyMode: "Database",
    SplitDNS: "NotConfigured",
    UsersUnique: "Unique",
    PolicyRendered: "Rendered",
    PolicyApplied: "InSync",
    SharedPolicy: "Exclusive",
  },
  TailnetEgress: {
    TagKnown: "Known",
    Registered: "Registered",
    RoutesGranted: "RoutesGranted",
    TargetsReachable: "Reachable",
    ServiceConflict: "NoConflict",
    NodeIdentity: "Stable",
    Ready: "Ready",
  },
  TailnetIngress: {
    TagKnown: "Known",
    PolicyGranted: "Granted",
    Registered: "Registered",
    BackendsReachable: "Reachable",
    TLSReady: "Valid",
    DNSServed: "Served",
    NodeIdentity: "Stable",
    Ready: "Ready",
  },
  TailnetSite: {
    RouteConflict: "NoConflict",
    UnmanagedOverlap: "None",
    Advertised: "Advertised",
    Approved: "Approved",
    Ready: "Ready",
  },
  TailnetGateway: {
    Registered: "FreshRuntimeReady",
    RoutesInSync: "Approved",
    ExitNode: "NotRequested",
    DNSReady: "Serving",
    StaleNodes: "None",
    ClusterDNSForward: "Configured",
    WorkloadCurrent: "PodCurrent",
    ServiceReady: "ClusterIPAssigned",
    NodeIdentity: "Stable",
    Ready: "FreshRuntimeReady",
  },
};

export interface WorldOptions {
  mode?: "Apply" | "DryRun";
  policyMode?: PolicyMode;
  /** Headscale client timeout per request (a fault's "timeout"/"slow" costs this much per call). */
  timeoutMs?: number;
  /** A certificate for CERT_NAMES (tests share one PKI); default: a fresh PKI for this world. */
  cert?: IssuedCertificate;
  basePolicy?: string;
  /** Shallow overrides of the specs below (e.g. allowFrom: [] so a kind generates no grant). */
  specs?: { tailnet?: Record<string, unknown>; ingress?: Record<string, unknown>; site?: Record<string, unknown> };
}

/**
 * The specs of the world's five parents (also what `render` gets in the secrets test). The egress
 * target's port is 0 until the world knows its echo server's port.
 */
export function worldSpecs(headscaleUrl: string, opts: WorldOptions = {}) {
  return {
    tailnet: {
      headscale: { url: headscaleUrl, apiKeySecretRef: { namespace: OPS, name: "headscale-api-key" } },
      policy: {
        mode: opts.mode ?? "Apply",
        baseConfigMapRef: { namespace: OPS, name: "tailnet-policy-base" },
        tagOwners: ["group:platform"],
      },
      allowedIngressSources: ["group:eng"],
      allowedEgressTargets: ["100.64.0.0/10"],
      reservedNetworks: ["10.244.0.0/16"],
      dns: { baseDomain: ZONE },
      ...opts.specs?.tailnet,
    },
    egress: { tailnetRef: { name: "home" }, targets: [{ name: "postgres", host: "db-1", ports: [{ port: 0 }] }] },
    ingress: {
      tailnetRef: { name: "home" },
      hostname: "grafana",
      mode: "http",
      allowFrom: ["group:eng"],
      exposes: [
        {
          name: "web",
          port: 443,
          backend: { service: "grafana", port: 3000 },
          host: "dash",
          aliases: ["grafana-eu"],
          tls: { secretName: "grafana-tls" },
        },
      ],
      ...opts.specs?.ingress,
    },
    site: {
      tailnetRef: { name: "home" },
      prefixes: [SITE_PREFIX],
      advertiserTags: [ROUTER_TAG],
      allowFrom: ["group:eng"],
      ...opts.specs?.site,
    },
    gateway: { tailnetRef: { name: "home" }, hostname: "cluster-gw", routes: [GW_ROUTE], dns: { zone: ZONE } },
  };
}

type Ctx = { after: (fn: () => Promise<void> | void) => void };
type Cond = { type: string; status: string; reason: string; message: string };

export async function world(t: Ctx, opts: WorldOptions = {}) {
  const clock = { now: T0 };
  const now = () => clock.now;
  const fake = await useFakeHeadscale(t, { now, apiKey: API_KEY, policyMode: opts.policyMode });
  // A node the egress targets (inside allowedEgressTargets) and a subnet router for the site whose
  // route nobody approved yet: the Tailnet's autoApprovers or the site must approve it.
  const db1 = fake.addNode({ name: "db-1" });
  const router = fake.addNode({ name: "router-1", tags: [ROUTER_TAG], availableRoutes: [SITE_PREFIX] });

  let cert = opts.cert;
  if (!cert) {
    const pki = await createTestPki();
    t.after(() => pki.cleanup());
    cert = await pki.issue({ names: CERT_NAMES, ...CERT_VALIDITY });
  }

  const spec = worldSpecs(fake.url, opts);

  // The egress agent: the operator's own config, dialing through a SOCKS5 stand-in for tailscaled
  // (every tailnet host → a TCP echo server) and reading its netmap from a fake LocalAPI.
  const echo: EchoServer = await startEchoServer();
  t.after(() => echo.close());
  spec.egress.targets[0].ports[0].port = echo.port;
  const socks = await startSocks5Server({ resolve: () => "127.0.0.1" });
  t.after(() => socks.close());
  const localApi: FakeLocalApi = await startFakeLocalApi(
    fakeStatus({ HostName: "shop-db", TailscaleIPs: [], Online: false }, [], "NeedsLogin"),
  );
  t.after(() => localApi.close());
  const egressParent = parentObject("TailnetEgress", "db", spec.egress, { namespace: "shop" });
  const egressAgent = await loopbackEgressAgent(t, egressParent, socks, localApi);

  // The ingress agent: the operator's config with the pod's environment swapped for loopback — the
  // backend Service → an HTTP server, the mounted TLS Secret → the PKI's files.
  const backend: HttpBackend = await startHttpBackend();
  t.after(() => backend.close());
  const ingressParent = parentObject("TailnetIngress", "grafana", spec.ingress, { namespace: "monitoring" });
  const base = ingressAgentConfig(
    ingressParent,
    readIngressSpec(ingressParent),
    ingressNames(ingressParent, ZONE).exposes,
  );
  // Its tailscaled's LocalAPI: the resolver answers the records Headscale read from the Tailnet's records
  // ConfigMap (serveRecords, as Headscale reloads its dns.extra_records_path file).
  const ingressLocalApi: FakeLocalApi = await startFakeLocalApi(
    fakeStatus({ HostName: "grafana-monitoring", TailscaleIPs: [], Online: false }, [], "NeedsLogin"),
  );
  t.after(() => ingressLocalApi.close());
  let servedRecords = "[]";
  /** Headscale reads the records file again when it changed; true when it did. */
  const serveRecords = (): boolean => {
    const text = (
      mc.get("v1", "ConfigMap", "tailnet-home-dns-records", OPS)?.data as Record<string, string> | undefined
    )?.["records.json"];
    if (!text || text === servedRecords) return false;
    servedRecords = text;
    ingressLocalApi.setRecords(JSON.parse(text));
    return true;
  };
  const ingressAgent: RunningAgent = await startAgent(
    {
      ...base,
      metricsPort: 0,
      metricsHost: "127.0.0.1",
      tailscale: { localApiSocket: ingressLocalApi.socketPath },
      exposes: (base.exposes ?? []).map((e) => ({
        ...e,
        listenPort: 0,
        backend: { host: "127.0.0.1", port: backend.port },
        ...(e.tls ? { tls: { certFile: cert.certFile, keyFile: cert.keyFile } } : {}),
      })),
    },
    { timers: false, defaultMetrics: false },
  );
  t.after(() => ingressAgent.close());

  // The server's Headscale views, built here rather than from config: they follow the world's clock,
  // never retry (each fault shows on the next sync), cache nothing (every sync reads Headscale), and
  // their timeout can be shorter than the config's whole seconds.
  const views = new HeadscaleViews({ timeoutMs: opts.timeoutMs ?? 2000, cacheTTLSeconds: 0, retries: 0, now });
  t.after(() => views.close());
  const events = memoryEventRecorder();
  const metrics = createOperatorMetrics({ defaultMetrics: false });
  const { app, logs } = await build(t, { server: { deps: { views, now, metrics, events } } });
  const agentPorts: Record<string, number> = {
    "shop/db-agent": egressAgent.metricsPort,
    "monitoring/grafana-agent": ingressAgent.metricsPort,
  };
  const mc = new FakeMetacontroller({
    app,
    // agents run one StatefulSet per replica (issue 32): `<name>-agent-<i>` is scraped like the agent it belongs to
    agentPods: { metricsPort: (s) => agentPorts[`${s.metadata.namespace}/${s.metadata.name.replace(/-[0-9]+$/, "")}`] },
  });

  mc.apply({
    apiVersion: "v1",
    kind: "Secret",
    metadata: { name: "headscale-api-key", namespace: OPS },
    data: { apiKey: b64(API_KEY) },
  });
  mc.apply({
    apiVersion: "v1",
    kind: "ConfigMap",
    metadata: { name: "tailnet-policy-base", namespace: OPS },
    data: { "policy.hujson": opts.basePolicy ?? BASE_POLICY },
  });
  mc.apply({
    apiVersion: "v1",
    kind: "Secret",
    metadata: { name: "grafana-tls", namespace: "monitoring" },
    type: "kubernetes.io/tls",
    data: { "tls.crt": b64(cert.certPem), "tls.key": b64(cert.keyPem) },
  });
  mc.apply({
    apiVersion: "v1",
    kind: "Service",
    metadata: { name: "grafana", namespace: "monitoring" },
    spec: { selector: { app: "grafana" }, ports: [{ port: 3000 }] },
  });
  mc.apply(parentObject("Tailnet", "home", spec.tailnet));
  mc.apply(egressParent);
  mc.apply(ingressParent);
  mc.apply(parentObject("TailnetSite", "lan", spec.site, { namespace: "net" }));
  mc.apply(parentObject("TailnetGateway", "gw", spec.gateway, { namespace: "infra" }));

  const parent = (kind: string, name: string, namespace?: string) => {
    const p = mc.get(API, kind, name, namespace);
    if (!p) throw new Error(`${kind} ${namespace ?? ""}/${name} is gone`);
    return p;
  };
  const keySecret = (namespace: string) =>
    mc
      .list("Secret")
      .find((s) => s.metadata.namespace === namespace && s.metadata.labels?.["tailnet.internal/authkey"] === "true");

  return {
    fake,
    mc,
    app,
    logs,
    events,
    clock,
    echo,
    db1,
    router,
    parent,
    keySecret,
    condition(kind: string, name: string, type: string, namespace?: string): Cond | undefined {
      return mc.condition(kind, name, type, namespace) as Cond | undefined;
    },
    /** Condition type → reason of every parent, keyed by kind. */
    reasons(): Reasons {
      const out = {} as Reasons;
      for (const p of PARENTS) {
        const status = mc.get(API, p.kind, p.name, p.namespace)?.status as { conditions?: Cond[] } | undefined;
        out[p.kind] = Object.fromEntries((status?.conditions ?? []).map((c) => [c.type, c.reason]));
      }
      return out;
    },
    /** Every parent's status, as JSON (to compare byte for byte). */
    statuses(): string {
      return JSON.stringify(PARENTS.map((p) => [p.kind, mc.get(API, p.kind, p.name, p.namespace)?.status]));
    },
    /** Every child of every parent (status left out: the emulator fills it), sorted. */
    children(): Map<string, string[]> {
      const out = new Map<string, string[]>();
      for (const p of PARENTS) {
        const owner = mc.get(API, p.kind, p.name, p.namespace);
        const list = owner ? mc.childrenOf(owner).map((c) => JSON.stringify({ ...c, status: undefined })) : [];
        out.set(p.kind, list.sort());
      }
      return out;
    },
    /** Probe and read the netmaps now, then let the emulator settle. */
    async settle(maxRounds = 10): Promise<number> {
      await Promise.all([egressAgent.refresh(), ingressAgent.refresh()]);
      const rounds = await mc.settle(maxRounds);
      // the records file changed during those rounds: Headscale hands the new records out, the ingress sees them
      return serveRecords() ? rounds + (await mc.settle(maxRounds)) : rounds;
    },
    /**
     * Every workload node registers with the key the operator put into its Secret (agents with the
     * key's id or secret as tailscaled would; the gateway advertising its routes), and the egress
     * agent's netmap then shows its target.
     */
    register(): { egress: FakeNode; ingress: FakeNode; gateway: FakeNode } {
      // each replica's tailscale boots in the Pod the emulator runs for its StatefulSet, with the state
      // Secret its Role lets it write (the shared fake containerboot, test/fakes/pod-lifecycle.ts)
      const boot = (name: string, namespace: string) => {
        const sts = mc.get("apps/v1", "StatefulSet", name, namespace);
        if (!sts) throw new Error(`no StatefulSet ${namespace}/${name} yet`);
        return startPod(fake, loopStore(mc), sts, { baseDomain: ZONE });
      };
      const egressPod = boot("db-agent-0", "shop");
      const egress = egressPod.node;
      localApi.setPrefs({ RouteAll: egressPod.boot.acceptRoutes });
      const ingress = boot("grafana-agent-0", "monitoring").node;
      ingressLocalApi.setStatus(
        fakeStatus({ HostName: "grafana-monitoring", TailscaleIPs: [ingress.ipv4], Online: true }, []),
      );
      const gateway = boot("gw-gateway-0", "infra").node;
      localApi.setStatus(
        fakeStatus({ HostName: "shop-db", TailscaleIPs: [egress.ipv4], Online: true }, [
          { HostName: "db-1", DNSName: "db-1.ts.example.com.", TailscaleIPs: [db1.ipv4], Online: true },
        ]),
      );
      return { egress, ingress, gateway };
    },
    /** The cluster DNS forwards the zone to the gateway's DNS Service (ClusterDNSForward=Configured). */
    configureClusterDns(): void {
      const svc = mc.list("Service").find((s) => s.metadata.name === "gw-dns" && s.metadata.namespace === "infra");
      const ip = (svc?.spec as { clusterIP?: string } | undefined)?.clusterIP;
      if (!ip) throw new Error("the gateway DNS Service has no cluster IP yet");
      mc.apply({
        apiVersion: "v1",
        kind: "ConfigMap",
        metadata: { name: "coredns", namespace: "kube-system" },
        data: { Corefile: `.:53 {\n    forward . /etc/resolv.conf\n}\n${ZONE}:53 {\n    forward . ${ip}\n}\n` },
      });
    },
    policyPuts: () => fake.count("PUT", /^\/api\/v1\/policy$/),
    /** The policy Headscale holds now, parsed as Headscale does (HuJSON: the operator's marker is a comment). */
    livePolicy(): Record<string, unknown> {
      const last = fake.state.policies.at(-1);
      if (!last) return {};
      const parsed = parseHuJson(last.text);
      if (!parsed.ok) throw new Error(parsed.message);
      return parsed.value as Record<string, unknown>;
    },
    metricsText: async () => (await app.inject({ method: "GET", url: "/metrics" })).body,
    /** Hook answers that were not 200. */
    failedCalls: (): HookCall[] => mc.calls.filter((c) => c.code !== 200),
  };
}

export type World = Awaited<ReturnType<typeof world>>;

/** A fresh world brought to all Ready: first settle (keys, policy), registration, cluster DNS, settle. */
export async function toReady(w: World): Promise<void> {
  await w.settle();
  w.register();
  w.configureClusterDns();
  await w.settle();
}
