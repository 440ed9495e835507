// What the agent node's quad-100 resolver answers for a name: LocalAPI GET /localapi/v0/dns-query (tailscale
// ipn/localapi/localapi.go serveDNSQuery → ipn/ipnlocal/local.go QueryDNS, the raw DNS answer as base64
// `Bytes`). The records Headscale hands the node (its dns.extra_records_path file, DNS.ExtraRecords) are in
// the resolver's Hosts even on the operator's pods, which run with --accept-dns=false
// (ipn/ipnlocal/node_backend.go dnsConfigForNetmap, net/dns/manager.go compileConfig): an answer here is
// what a tailnet client gets, which is how the operator tells whether Headscale serves the records file.
import type { NameAnswer } from "../contract/agent-status.js";
import { localApiGet } from "./localapi.js";

export const LOCALAPI_DNS_QUERY_PATH = "/localapi/v0/dns-query";

/** The names one /status request may ask about (the operator asks for one ingress's names and aliases). */
export const MAX_QUERIED_NAMES = 16;

const LABEL = "[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?";
const DNS_NAME = new RegExp(`^${LABEL}(?:\\.${LABEL})*\\.?$`, "i");

/** "" when `names` may be queried, else why not (a 400 names the field). */
export function invalidNames(names: readonly string[]): string {
  if (names.length === 0) return "names: empty";
  if (names.length > MAX_QUERIED_NAMES) return `names: ${names.length} names, at most ${MAX_QUERIED_NAMES}`;
  const bad = names.find((n) => n.length > 253 || !DNS_NAME.test(n));
  return bad === undefined ? "" : `names: ${JSON.stringify(bad.slice(0, 64))} is not a DNS name`;
}

const RCODES = ["NOERROR", "FORMERR", "SERVFAIL", "NXDOMAIN", "NOTIMP", "REFUSED"];
const TYPE_A = 1;
const TYPE_AAAA = 28;

/** Skips a (possibly compressed) name at `at`; the offset after it. */
function skipName(msg: Buffer, at: number): number {
  let i = at;
  for (;;) {
    if (i >= msg.length) throw new Error("truncated name");
    const len = msg[i];
    if ((len & 0xc0) === 0xc0) return i + 2; // a pointer ends the name
    if (len === 0) return i + 1;
    i += 1 + len;
  }
}

function address(type: number, rdata: Buffer): string | undefined {
  if (type === TYPE_A && rdata.length === 4) return [...rdata].join(".");
  if (type === TYPE_AAAA && rdata.length === 16) {
    const groups: string[] = [];
    for (let g = 0; g < 16; g += 2) groups.push(rdata.readUInt16BE(g).toString(16));
    return groups.join(":");
  }
  return undefined;
}

/** The response code and the A/AAAA addresses of a DNS answer (RFC 1035 section 4.1). */
export function parseDnsAnswer(msg: Buffer): { rcode: string; addresses: string[] } {
  if (msg.length < 12) throw new Error(`a DNS answer of ${msg.length} bytes`);
  const code = msg.readUInt16BE(2) & 0x0f;
  const questions = msg.readUInt16BE(4);
  const answers = msg.readUInt16BE(6);
  let at = 12;
  for (let q = 0; q < questions; q++) at = skipName(msg, at) + 4;
  const addresses: string[] = [];
  for (let a = 0; a < answers; a++) {
    at = skipName(msg, at);
    if (at + 10 > msg.length) throw new Error("truncated answer");
    const type = msg.readUInt16BE(at);
    const length = msg.readUInt16BE(at + 8);
    const rdata = msg.subarray(at + 10, at + 10 + length);
    if (rdata.length !== length) throw new Error("truncated answer");
    const ip = address(type, rdata);
    if (ip) addresses.push(ip);
    at += 10 + length;
  }
  return { rcode: RCODES[code] ?? `RCODE${code}`, addresses: addresses.sort() };
}

/** Asks quad-100 for the A records of `name`; a LocalAPI failure is `error`, never a throw. */
export async function queryName(socketPath: string, name: string, timeoutMs: number): Promise<NameAnswer> {
  const path = `${LOCALAPI_DNS_QUERY_PATH}?${new URLSearchParams({ name, type: "A" })}`;
  try {
    const body = (await localApiGet(socketPath, path, timeoutMs)) as { Bytes?: unknown } | null;
    if (typeof body?.Bytes !== "string") return { name, addresses: [], error: "dns-query: no Bytes in the answer" };
    const { rcode, addresses } = parseDnsAnswer(Buffer.from(body.Bytes, "base64"));
    return { name, addresses, rcode, error: "" };
  } catch (err) {
    return { name, addresses: [], error: (err as Error).message };
  }
}
