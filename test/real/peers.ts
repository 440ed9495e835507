/**
 * Tailnet peers: a real tailscaled (userspace networking, no TUN) per host, joined to the real
 * Headscale with a pre-auth key made by its CLI. Flags checked against tailscale v1.102.5:
 * cmd/tailscaled/tailscaled.go (--tun, --statedir, --state, --socket, --no-logs-no-support, --port),
 * cmd/tailscaled/proxy.go (--socks5-server, --outbound-http-proxy-listen), cmd/tailscale/cli/up.go (--login-server, --auth-key,
 * --hostname, --advertise-routes, --accept-routes, --timeout).
 * Headscale 0.29.3 (cmd/headscale/cli/preauthkeys.go): `preauthkeys create --user <numeric id>` for a
 * user's key, `--tags tag:a,tag:b` for a tagged key with no user (hscontrol/grpcv1.go CreatePreAuthKey);
 * a tagged node gets its key's tags — it must not pass --advertise-tags as well (0.29 refuses both).
 * tailscaled trusts the test CA through SSL_CERT_FILE (Go's crypto/x509 on Linux).
 */
import { writeFile } from "node:fs/promises";
import { bins, requireBins } from "./bins.js";
import { sleep, startEcho } from "./echo.js";
import type { RealHeadscale } from "./headscale.js";
import type { Host, RealProcess, TestNet } from "./net.js";

export const SOCKS_PORT = 1055;
/** tailscaled's outbound HTTP proxy (CONNECT): for clients that speak HTTP proxies only, such as grpc-go. */
export const HTTP_PROXY_PORT = 1056;

export interface PeerOptions {
  /** Owner (a user key); absent with tags: a tagged key with no user. */
  user?: string;
  tags?: string[];
  advertiseRoutes?: string[];
  acceptRoutes?: boolean;
  /** Starts a TCP echo on 0.0.0.0:<port> in the peer's namespace (reached over the tailnet at its IPs). */
  echoPort?: number;
  /** Extra `tailscale up` flags (e.g. to show what the real server refuses). */
  upArgs?: string[];
  /** Use an existing host (e.g. one that already has a subnet) instead of adding one. */
  host?: Host;
  /** Join with this key (e.g. a TailnetAuthKey's Secret) instead of one minted through the CLI. */
  authKey?: string;
}

export interface Peer {
  host: Host;
  name: string;
  /** The peer's tailnet addresses (`tailscale ip`), IPv4 first. */
  ips(): Promise<string[]>;
  /** Runs the tailscale CLI against this peer's tailscaled; resolves stdout, throws on failure. */
  tailscale(args: string[]): Promise<string>;
  /** `tailscale status --json` parsed. */
  status(): Promise<TailscaleStatus>;
  /** tailscaled's SOCKS5 server (reaches tailnet addresses and MagicDNS names). */
  socks5: { host: string; port: number };
  /** tailscaled's outbound HTTP proxy, as a client's HTTPS_PROXY: the same reach as SOCKS5. */
  httpProxy: string;
  /** The peer's tailscaled process (its logs for failure messages). */
  daemon(): RealProcess;
  /** Kills tailscaled (SIGKILL by default, as a crash) and starts it again on the same state. */
  restart(signal?: NodeJS.Signals): Promise<void>;
  stop(): Promise<void>;
  close(): Promise<void>;
}

export interface TailscaleStatus {
  BackendState: string;
  Self: { HostName: string; DNSName: string; TailscaleIPs?: string[]; Online?: boolean; Tags?: string[] };
  Peer?: Record<
    string,
    { HostName: string; DNSName: string; TailscaleIPs?: string[]; Online?: boolean; PrimaryRoutes?: string[] }
  >;
}

export async function startPeer(net: TestNet, hs: RealHeadscale, name: string, opts: PeerOptions = {}): Promise<Peer> {
  requireBins(["tailscaled", "tailscale"]);
  if (opts.user && opts.tags?.length) throw new Error(`peer ${name}: a key is either a user's or tagged, not both`);
  const host = opts.host ?? (await net.addHost(name));
  const dir = host.dir;
  const sock = `${dir}/tailscaled.sock`;
  const ca = `${dir}/ca.crt`;
  await writeFile(ca, hs.caPem);
  const env = { TS_NO_LOGS_NO_SUPPORT: "true", SSL_CERT_FILE: ca };

  let daemon: RealProcess | undefined;
  const tailscale = async (args: string[], timeoutMs = 60_000): Promise<string> => {
    const r = await host.exec(bins.tailscale, [`--socket=${sock}`, ...args], { env, timeoutMs });
    if (r.code !== 0) {
      throw new Error(
        `tailscale ${args.join(" ")} on ${name} exited ${r.code}: ${(r.stderr || r.stdout).trim()}\n${daemon?.logs() ?? ""}`,
      );
    }
    return r.stdout;
  };
  const status = async () => JSON.parse(await tailscale(["status", "--json"])) as TailscaleStatus;

  const startDaemon = async () => {
    const p = host.spawn(
      bins.tailscaled,
      [
        "--tun=userspace-networking",
        `--statedir=${dir}/state`,
        `--state=${dir}/state/tailscaled.state`,
        `--socket=${sock}`,
        `--socks5-server=${host.ip}:${SOCKS_PORT}`,
        `--outbound-http-proxy-listen=${host.ip}:${HTTP_PROXY_PORT}`,
        "--no-logs-no-support",
        "--port=41641",
      ],
      { env, logName: "tailscaled" },
    );
    daemon = p;
    const deadline = Date.now() + 30_000;
    while (Date.now() < deadline) {
      const r = await host.exec(bins.tailscale, [`--socket=${sock}`, "status", "--json"], { env, timeoutMs: 5000 });
      if (r.stdout.includes('"BackendState"')) return;
      if (await Promise.race([p.exited.then(() => true), sleep(200).then(() => false)])) break;
    }
    throw new Error(`tailscaled on ${name} did not start\n${p.logs()}`);
  };

  let key: string;
  if (opts.authKey) {
    key = opts.authKey;
  } else if (opts.tags?.length) {
    key = await hs.cli(["preauthkeys", "create", "--tags", opts.tags.join(","), "--expiration", "1h"]);
  } else {
    const id = await hs.userId(opts.user ?? name);
    key = await hs.cli(["preauthkeys", "create", "--user", String(id), "--expiration", "1h"]);
  }
  key = key.trim().split("\n").pop() ?? "";

  let echo: RealProcess | undefined;
  try {
    if (opts.echoPort) echo = await startEcho(host, opts.echoPort);
    await startDaemon();
    const up = [
      "up",
      `--login-server=${hs.url}`,
      `--auth-key=${key}`,
      `--hostname=${name}`,
      "--timeout=60s",
      ...(opts.advertiseRoutes?.length ? [`--advertise-routes=${opts.advertiseRoutes.join(",")}`] : []),
      ...(opts.acceptRoutes ? ["--accept-routes"] : []),
      ...(opts.upArgs ?? []),
    ];
    await tailscale(up, 90_000);
  } catch (err) {
    await daemon?.kill("SIGKILL");
    await echo?.kill("SIGKILL");
    throw err;
  }

  const stop = async () => {
    const p = daemon;
    daemon = undefined;
    await p?.kill("SIGTERM");
  };
  return {
    host,
    name,
    ips: async () =>
      (await tailscale(["ip"]))
        .split("\n")
        .map((l) => l.trim())
        .filter(Boolean),
    tailscale: (args) => tailscale(args),
    status,
    socks5: { host: host.ip, port: SOCKS_PORT },
    httpProxy: `http://${host.ip}:${HTTP_PROXY_PORT}`,
    daemon: () => {
      if (!daemon) throw new Error(`tailscaled on ${name} is stopped`);
      return daemon;
    },
    restart: async (signal = "SIGKILL") => {
      await daemon?.kill(signal);
      daemon = undefined;
      await startDaemon();
    },
    stop,
    close: async () => {
      await stop();
      await echo?.kill("SIGKILL");
    },
  };
}

/** Polls until check() returns a truthy value; throws with describe() after ms. */
export async function waitFor<T>(
  what: string,
  check: () => Promise<T | undefined | null | false>,
  ms = 30_000,
  describe?: () => string | Promise<string>,
): Promise<T> {
  const deadline = Date.now() + ms;
  let lastErr = "";
  while (Date.now() < deadline) {
    try {
      const v = await check();
      if (v) return v;
    } catch (err) {
      lastErr = (err as Error).message;
    }
    await sleep(250);
  }
  throw new Error(
    `timed out after ${ms} ms waiting for ${what}${lastErr ? ` (last error: ${lastErr})` : ""}\n${describe ? await describe() : ""}`,
  );
}
