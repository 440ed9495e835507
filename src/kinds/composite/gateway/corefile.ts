/**
 * Corefiles: the gateway's own (rendered), and the cluster's (`kube-system/coredns`, parsed) for the
 * ClusterDNSForward check. The parser reads the Caddyfile syntax CoreDNS uses — server blocks
 * `keys… { directives }`, nested directive blocks, `#` comments, quoted tokens — enough to find the
 * server block of a zone and its `forward` directive; snippets and imports are skipped.
 */
import { normalizeZone } from "./spec.js";

/** CoreDNS ports inside the gateway pod (tailscale's metrics/health own 8080). */
export const COREDNS_PORTS = { dns: 1053, metrics: 9153, ready: 8181, health: 8081 } as const;
export const COREFILE_KEY = "Corefile";
export const COREFILE_DIR = "/etc/coredns";
export const ZONE_DIR = "/var/lib/coredns/zone";

export interface GatewayCorefileInput {
  owner: string;
  zone: string;
  zoneFile: string;
  /** Domains tailnet clients resolve through the gateway (split DNS), forwarded to the cluster DNS. */
  splitDomains: readonly string[];
}

/**
 * Where CoreDNS listens: the pod IP from the environment (Corefile `{$ENV}` substitution), never 0.0.0.0 —
 * the gateway's tailscaled forwards tailnet connections it does not serve to 127.0.0.1 (children.ts). The
 * HTTP endpoints take host:port; Go's net.Listen accepts "[10.0.0.7]:9153" as well as "[fd00::7]:9153", so
 * one bracketed form serves both families for `ready` and `prometheus`. `health` also parses
 * "http://<addr>" as a URL (coredns plugin/health/health.go), which refuses a bracketed IPv4 literal (seen on
 * the real CoreDNS: `invalid IP-literal`), so it names the pod by its host name instead: HOSTNAME, which the
 * kubelet's /etc/hosts maps to the pod IP of either family.
 */
export const COREDNS_BIND = "{$POD_IP}";
const at = (port: number) => `[${COREDNS_BIND}]:${port}`;
const HEALTH_HOST = "{$HOSTNAME}";

export function renderGatewayCorefile(input: GatewayCorefileInput): string {
  const p = COREDNS_PORTS;
  const split = input.splitDomains.map((d) => `${normalizeZone(d)}:${p.dns}`).join(" ");
  return [
    `# CoreDNS of TailnetGateway ${input.owner}, rendered by tailnet-operator. Do not edit.`,
    `# Everything is served on ${p.dns} of the pod IP only; the DNS Service maps port 53 to it.`,
    "# The derived zone, for cluster workloads (the cluster DNS forwards the zone here).",
    `${input.zone}:${p.dns} {`,
    `    bind ${COREDNS_BIND}`,
    "    errors",
    `    ready ${at(p.ready)}`,
    `    health ${HEALTH_HOST}:${p.health}`,
    `    prometheus ${at(p.metrics)}`,
    `    file ${ZONE_DIR}/${input.zoneFile} ${input.zone} {`,
    "        reload 10s",
    "    }",
    "}",
    "# Cluster names for tailnet clients (split DNS to the DNS Service IP, reached through the",
    "# gateway's routes), answered by the cluster DNS.",
    `${split} {`,
    `    bind ${COREDNS_BIND}`,
    "    errors",
    `    prometheus ${at(p.metrics)}`,
    "    cache 30",
    "    forward . /etc/resolv.conf",
    "}",
    "",
  ].join("\n");
}

export interface Directive {
  name: string;
  args: string[];
  block?: Directive[];
}

export interface ServerBlock {
  keys: string[];
  directives: Directive[];
}

type Token = { text: string; line: number; quoted: boolean };

function tokenize(text: string): Token[] {
  const tokens: Token[] = [];
  let line = 1;
  let i = 0;
  while (i < text.length) {
    const c = text[i];
    if (c === "\n") {
      line++;
      i++;
    } else if (/\s/.test(c)) i++;
    else if (c === "#") {
      while (i < text.length && text[i] !== "\n") i++;
    } else if (c === '"') {
      let j = i + 1;
      let s = "";
      while (j < text.length && text[j] !== '"') {
        if (text[j] === "\\" && j + 1 < text.length) j++;
        if (text[j] === "\n") line++;
        s += text[j++];
      }
      tokens.push({ text: s, line, quoted: true });
      i = j + 1;
    } else {
      let j = i;
      while (j < text.length && !/\s/.test(text[j])) j++;
      tokens.push({ text: text.slice(i, j), line, quoted: false });
      i = j;
    }
  }
  return tokens;
}

/** Parses the directives up to the matching `}` (or the end); `pos` is advanced past it. */
function parseBody(tokens: Token[], pos: { i: number }): Directive[] {
  const out: Directive[] = [];
  while (pos.i < tokens.length) {
    const t = tokens[pos.i];
    if (!t.quoted && t.text === "}") {
      pos.i++;
      return out;
    }
    const line = t.line;
    const d: Directive = { name: t.text, args: [] };
    pos.i++;
    while (pos.i < tokens.length && tokens[pos.i].line === line) {
      const a = tokens[pos.i];
      if (!a.quoted && a.text === "{") {
        pos.i++;
        d.block = parseBody(tokens, pos);
        break;
      }
      if (!a.quoted && a.text === "}") break;
      d.args.push(a.text);
      pos.i++;
    }
    out.push(d);
  }
  return out;
}

export function parseCorefile(text: string): ServerBlock[] {
  const tokens = tokenize(text);
  const blocks: ServerBlock[] = [];
  const pos = { i: 0 };
  while (pos.i < tokens.length) {
    const keys: string[] = [];
    while (pos.i < tokens.length && !(tokens[pos.i].text === "{" && !tokens[pos.i].quoted)) {
      keys.push(...tokens[pos.i].text.split(",").filter(Boolean));
      pos.i++;
    }
    if (pos.i >= tokens.length) break;
    pos.i++;
    const directives = parseBody(tokens, pos);
    // `(snippet) { … }` defines a snippet, not a server.
    if (keys.length && !keys[0].startsWith("(")) blocks.push({ keys, directives });
  }
  return blocks;
}

/** A server key (`dns://zone.:53`) → zone and port (default 53); other schemes are not plain DNS. */
export function parseServerKey(key: string): { zone: string; port: number } | undefined {
  let k = key.toLowerCase();
  if (k.startsWith("dns://")) k = k.slice(6);
  else if (k.includes("://")) return undefined;
  const m = /^(.*?)(?::(\d+))?$/.exec(k);
  if (!m) return undefined;
  const zone = m[1] === "." ? "." : normalizeZone(m[1]);
  return { zone, port: m[2] ? Number(m[2]) : 53 };
}

/** `10.96.0.53`, `10.96.0.53:53`, `dns://10.96.0.53:53` → address and port. */
function parseUpstream(to: string): { host: string; port: number } {
  const t = to.toLowerCase().replace(/^dns:\/\//, "");
  const m = /^(.*?):(\d+)$/.exec(t);
  return m && !m[1].includes(":") ? { host: m[1], port: Number(m[2]) } : { host: t, port: 53 };
}

export type ForwardCheck =
  | { configured: true }
  | { configured: false; reason: "noBlock" | "elsewhere"; upstreams: string[] };

/** Whether a server block for `zone` (port 53) forwards to `serviceIP` port 53. */
export function checkClusterForward(corefile: string, zone: string, serviceIP: string): ForwardCheck {
  const z = normalizeZone(zone);
  const blocks = parseCorefile(corefile).filter((b) =>
    b.keys.some((k) => {
      const parsed = parseServerKey(k);
      return parsed?.zone === z && parsed.port === 53;
    }),
  );
  if (blocks.length === 0) return { configured: false, reason: "noBlock", upstreams: [] };
  const upstreams: string[] = [];
  for (const b of blocks) {
    for (const d of b.directives) {
      if (d.name !== "forward" || d.args.length < 2) continue;
      const from = d.args[0] === "." ? "." : normalizeZone(d.args[0]);
      if (from !== "." && from !== z) continue;
      for (const to of d.args.slice(1)) {
        const up = parseUpstream(to);
        if (up.host === serviceIP && up.port === 53) return { configured: true };
        upstreams.push(to);
      }
    }
  }
  return { configured: false, reason: "elsewhere", upstreams };
}

/** The server block to add to the cluster Corefile, exactly as the NotConfigured message shows it. */
export function forwardBlock(zone: string, serviceIP: string): string {
  return [`${normalizeZone(zone)}:53 {`, "    errors", "    cache 30", `    forward . ${serviceIP}`, "}"].join("\n");
}
