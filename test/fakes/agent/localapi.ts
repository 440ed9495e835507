// A fake tailscaled LocalAPI: an HTTP server on a unix socket in a temporary directory that answers
// GET /localapi/v0/status with a configurable ipnstate.Status document (and /localapi/v0/prefs, /localapi/v0/whois). Like tailscaled it refuses requests
// whose Host is not "local-tailscaled.sock"; it records every request.
import { mkdtemp, rm } from "node:fs/promises";
import { createServer } from "node:http";
import type { Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { dnsAnswer, type ExtraRecord } from "./dns-message.js";

export interface FakePeer {
  HostName: string;
  DNSName: string;
  TailscaleIPs: string[];
  PrimaryRoutes?: string[] | null;
  Online: boolean;
}

/** The subset of tailscaled's ipnstate.Status the agent reads (plus what real responses carry around it). */
export interface FakeStatus {
  BackendState: string;
  Self: { HostName: string; DNSName?: string; TailscaleIPs: string[]; Online: boolean };
  Peer?: Record<string, FakePeer> | null;
  [extra: string]: unknown;
}

/** Builds a status: peers are keyed by a fake node key, as tailscaled does. */
export function fakeStatus(self: FakeStatus["Self"], peers: FakePeer[], backendState = "Running"): FakeStatus {
  return {
    Version: "1.80.0-fake",
    BackendState: backendState,
    TailscaleIPs: self.TailscaleIPs,
    Self: self,
    Peer: Object.fromEntries(peers.map((peer, i) => [`nodekey:${String(i).padStart(64, "0")}`, peer])),
    MagicDNSSuffix: "ts.example.com",
  };
}

export interface LocalApiRequest {
  method: string;
  path: string;
  host: string;
  secTailscale: string;
}

export interface FakeLocalApi {
  socketPath: string;
  requests: LocalApiRequest[];
  setStatus(status: FakeStatus): void;
  /** GET /localapi/v0/prefs: RouteAll (`--accept-routes`); tailscaled's Linux default is false. */
  setPrefs(prefs: { RouteAll: boolean }): void;
  /** Answer the next requests with this HTTP status (undefined = healthy again). */
  setFailure(statusCode: number | undefined): void;
  /**
   * GET /localapi/v0/whois?addr=<ip>[:port]: the apitype.WhoIsResponse of each tailnet IP; an address not
   * listed gets tailscaled's 404 "no match for IP:port".
   */
  setWhoIs(byIp: Record<string, unknown>): void;
  /**
   * GET /localapi/v0/dns-query?name=&type=A: quad-100's answer from the records Headscale handed the node
   * (its extra records file; none until set), NXDOMAIN for a name without one.
   */
  setRecords(records: readonly ExtraRecord[]): void;
  /** dns-query requests get no answer at all while true (a stuck tailscaled). */
  stallDnsQueries(stall: boolean): void;
  close(): Promise<void>;
}

export async function startFakeLocalApi(initial: FakeStatus): Promise<FakeLocalApi> {
  // Unix socket paths are limited to ~108 bytes: a short name in a fresh tmp dir.
  const dir = await mkdtemp(join(tmpdir(), "ts-"));
  const socketPath = join(dir, "s.sock");
  let status = initial;
  let prefs: Record<string, unknown> = { RouteAll: false, WantRunning: true };
  let failure: number | undefined;
  let whois: Record<string, unknown> = {};
  let records: readonly ExtraRecord[] = [];
  let stallDns = false;
  const requests: LocalApiRequest[] = [];
  const sockets = new Set<Socket>();
  const server = createServer((req, res) => {
    requests.push({
      method: req.method ?? "",
      path: req.url ?? "",
      host: req.headers.host ?? "",
      secTailscale: String(req.headers["sec-tailscale"] ?? ""),
    });
    if (req.headers.host !== "local-tailscaled.sock") {
      res.writeHead(403).end("invalid localapi request\n");
      return;
    }
    if (failure !== undefined) {
      res.writeHead(failure).end("failed\n");
      return;
    }
    if (req.method === "GET" && (req.url ?? "").split("?")[0] === "/localapi/v0/status") {
      res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(status));
      return;
    }
    if (req.method === "GET" && (req.url ?? "").split("?")[0] === "/localapi/v0/prefs") {
      res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(prefs));
      return;
    }
    if (req.method === "GET" && (req.url ?? "").split("?")[0] === "/localapi/v0/whois") {
      const addr = new URL(req.url ?? "", "http://x").searchParams.get("addr") ?? "";
      // ip, ip:port or [ipv6]:port, as tailscaled's netip parsing takes them
      const ip = addr.startsWith("[") ? addr.slice(1, addr.indexOf("]")) : addr.replace(/:[0-9]+$/, "");
      const answer = whois[ip];
      if (answer === undefined) res.writeHead(404).end("no match for IP:port\n");
      else res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(answer));
      return;
    }
    if (req.method === "GET" && (req.url ?? "").split("?")[0] === "/localapi/v0/dns-query") {
      if (stallDns) return; // the socket stays open until close() destroys it
      const query = new URL(req.url ?? "", "http://x").searchParams;
      const bytes = dnsAnswer(query.get("name") ?? "", query.get("type") === "A" ? records : []);
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify({ Bytes: bytes.toString("base64"), Resolvers: null }));
      return;
    }
    res.writeHead(404).end("not found\n");
  });
  server.on("connection", (socket: Socket) => {
    sockets.add(socket);
    socket.once("close", () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(socketPath, () => resolve()));
  return {
    socketPath,
    requests,
    setStatus(next) {
      status = next;
    },
    setPrefs(next) {
      prefs = { ...prefs, ...next };
    },
    setFailure(code) {
      failure = code;
    },
    setWhoIs(byIp) {
      whois = byIp;
    },
    setRecords(next) {
      records = next;
    },
    stallDnsQueries(stall) {
      stallDns = stall;
    },
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await rm(dir, { recursive: true, force: true });
    },
  };
}
