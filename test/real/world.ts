/**
 * The real world shared by the scenario files (test/real/*.test.ts): one test network, the real
 * Headscale and four real tailnet peers. Each test file starts one world in before() and closes it in
 * after() (the suite runs files one at a time):
 *   db1      tagged tag:db, TCP echo on 5432
 *   router   tagged tag:router-home, advertises 192.168.10.0/24; host 192.168.10.5 behind it runs a TCP echo
 *   laptop   user alice (in group:eng), --accept-routes
 *   outsider user mallory (in no group)
 * Before any peer joins, the world sets BASE_POLICY (the same text scenarios put in the Tailnet's base
 * ConfigMap), so the tags have owners and group:eng exists.
 */
import { writeFile } from "node:fs/promises";
import { requireBins } from "./bins.js";
import { startEcho } from "./echo.js";
import { type HeadscaleOptions, type RealHeadscale, startHeadscale } from "./headscale.js";
import { type Host, type RealProcess, TestNet } from "./net.js";
import { type Peer, startPeer } from "./peers.js";

export const SITE_PREFIX = "192.168.10.0/24";
export const SITE_HOST = "192.168.10.5";
export const SITE_ECHO_PORT = 7777;
export const DB_PORT = 5432;
export const TAGS = { db: "tag:db", router: "tag:router-home" } as const;

/** The base policy of the world (HuJSON as kept in Git): groups, tag owners, and eng reaching everything. */
export const BASE_POLICY = `// the real world's base policy
{
  "groups": { "group:eng": ["alice@"] },
  "tagOwners": { "tag:db": ["group:eng"], "tag:router-home": ["group:eng"] },
  "acls": [ { "action": "accept", "src": ["group:eng"], "dst": ["*:*"] } ],
}
`;

export interface RealWorld {
  net: TestNet;
  headscale: RealHeadscale;
  peers: { db1: Peer; router: Peer; laptop: Peer; outsider: Peer };
  /** The host behind the router (192.168.10.5) with a TCP echo on SITE_ECHO_PORT. */
  siteHost: Host;
  /** Milliseconds the world took to start. */
  startMs: number;
  close(): Promise<void>;
}

export interface RealWorldOptions extends HeadscaleOptions {
  /** Shown in the run's folder name. */
  id?: string;
  /** Runs on the new network before Headscale starts (e.g. the records sidecar that writes its extra_records_path). */
  beforeHeadscale?: (net: TestNet) => Promise<void>;
}

export async function startRealWorld(opts: RealWorldOptions = {}): Promise<RealWorld> {
  requireBins(["headscale", "tailscaled", "tailscale", "node"]);
  const t0 = Date.now();
  const net = await TestNet.create({ id: opts.id });
  const extra: RealProcess[] = [];
  try {
    await opts.beforeHeadscale?.(net);
    const headscale = await startHeadscale(net, opts);
    const policyFile = `${headscale.host.dir}/base-policy.hujson`;
    await writeFile(policyFile, BASE_POLICY);
    await headscale.cli(["policy", "set", "-f", policyFile]);

    const routerHost = await net.addHost("router");
    const siteHost = await net.addSubnet(routerHost, SITE_PREFIX, SITE_HOST);
    extra.push(await startEcho(siteHost, SITE_ECHO_PORT));
    // Users first (sequentially: `users create` of two peers at once would race on the list).
    await headscale.userId("alice");
    await headscale.userId("mallory");
    const [db1, router, laptop, outsider] = await Promise.all([
      startPeer(net, headscale, "db-1", { tags: [TAGS.db], echoPort: DB_PORT }),
      startPeer(net, headscale, "router", { host: routerHost, tags: [TAGS.router], advertiseRoutes: [SITE_PREFIX] }),
      startPeer(net, headscale, "laptop", { user: "alice", acceptRoutes: true }),
      startPeer(net, headscale, "outsider", { user: "mallory" }),
    ]);
    const peers = { db1, router, laptop, outsider };
    return {
      net,
      headscale,
      peers,
      siteHost,
      startMs: Date.now() - t0,
      close: async () => {
        for (const p of Object.values(peers)) await p.close().catch(() => undefined);
        for (const p of extra) await p.kill("SIGKILL");
        await headscale.close().catch(() => undefined);
        await net.close();
      },
    };
  } catch (err) {
    await net.close().catch(() => undefined); // the start's own error says more
    throw err;
  }
}
