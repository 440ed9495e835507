// The request side of HTTP/2 on an http expose (pure): what an h2 stream's header block may hold, and the
// header set the backend gets. The rules are HTTP/1.1's (http1.ts) carried over to HTTP/2's framing, so a
// request means the same to the agent whichever protocol the client chose:
// - The client-identity headers are the agent's: every client-sent X-Forwarded-*, Forwarded, X-Real-IP...
//   (http1.ts DROPPED_HEADERS) is dropped and X-Forwarded-For/-Proto/-Host are set, never extended.
// - Connection-specific fields (RFC 9113 §8.2.2: Connection, Keep-Alive, Proxy-Connection,
//   Transfer-Encoding, Upgrade, a TE other than `trailers`) make the request malformed (PROTOCOL_ERROR).
//   nghttp2 refuses them already (nghttp2/nghttp2 lib/nghttp2_http.c, nghttp2_http_on_header); this is the
//   second line, and keeps the rule in this codebase where a reader finds it.
// - The target is origin-form (or `*` for OPTIONS) of the same bytes HTTP/1.1 admits; CONNECT is 501.
// - :authority (or Host) must name the expose SNI chose: an HTTP/2 client may reuse a connection for another
//   name its certificate covers (RFC 9113 §9.1.1, connection coalescing), and a request for expose B on a
//   connection routed to expose A would reach A's backend with B's name. It is answered 421 (RFC 9110
//   §15.5.20), which tells clients to retry on a connection of its own.
import { normalizeName } from "./certs.js";
import { HttpFramingError, isOwnedHeader } from "./http1.js";

const TCHAR = "[!#$%&'*+.^_`|~0-9A-Za-z-]";
const TOKEN = new RegExp(`^${TCHAR}+$`);
/** The request-target bytes HTTP/1.1's request line admits (http1.ts REQUEST_LINE): visible ASCII without `#`. */
const TARGET = /^[\x21\x22\x24-\x7e]+$/;
/** Host: uri-host [ ":" port ] (http1.ts HOST). */
const HOST = /^(?:\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9._~!$&'()*+,;=%-]*)(?::[0-9]*)?$/;
const FIELD_VALUE = /^[\t\x20-\x7e\x80-\xff]*$/;

/** RFC 9113 §8.2.2: fields that only mean something on one HTTP/1.1 connection. */
export const CONNECTION_SPECIFIC: readonly string[] = [
  "connection",
  "keep-alive",
  "proxy-connection",
  "transfer-encoding",
  "upgrade",
];
const CONNECTION_SPECIFIC_SET = new Set(CONNECTION_SPECIFIC);

/** Fields never forwarded from a trailer section (http1.ts TRAILER_FORBIDDEN, and pseudo-headers). */
const TRAILER_FORBIDDEN = new Set(["content-length", "transfer-encoding", "host", "connection", "te", "trailer"]);

/** A stream refused before it reaches a backend: an HTTP answer, or RST_STREAM PROTOCOL_ERROR (malformed). */
export class H2Refusal extends Error {
  constructor(
    readonly status: 400 | 421 | 431 | 501 | "malformed",
    message: string,
  ) {
    super(message);
  }
}

/** What the agent forwards for one h2 request. */
export interface H2Request {
  method: string;
  /** The request target (:path), unchanged. */
  path: string;
  /** :authority, or Host when the client sent only that. */
  authority: string;
  /** Forwarded fields, lower-case names, in the client's order; the agent's identity headers last. */
  fields: [string, string][];
  /** The client's content-length, when it sent one (nghttp2 holds the DATA to it). */
  contentLength: number | undefined;
}

export interface H2RequestContext {
  /** The client address for X-Forwarded-For (the PROXY header's, else the peer's). */
  clientIp: string | undefined;
  /** Whether `host` (no port, any case) is a name of the expose SNI chose (certs.ts rules). */
  servesName(host: string): boolean;
}

/**
 * Checks one request's header block (`raw`: Node's rawHeaders, name/value pairs, pseudo-headers first as
 * nghttp2 requires) and builds what is forwarded; throws H2Refusal.
 */
export function readH2Request(raw: readonly string[], ctx: H2RequestContext): H2Request {
  const pseudo = new Map<string, string>();
  const fields: [string, string][] = [];
  let host: string | undefined;
  let contentLength: number | undefined;
  for (let i = 0; i + 1 < raw.length; i += 2) {
    const name = raw[i];
    const value = raw[i + 1];
    if (name.startsWith(":")) {
      if (pseudo.has(name)) throw new H2Refusal("malformed", `duplicate ${name}`);
      pseudo.set(name, value);
      continue;
    }
    if (!TOKEN.test(name) || name !== name.toLowerCase()) throw new H2Refusal("malformed", "bad header name");
    if (!FIELD_VALUE.test(value)) throw new H2Refusal(400, "control character in header value");
    if (CONNECTION_SPECIFIC_SET.has(name)) throw new H2Refusal("malformed", `connection-specific header ${name}`);
    if (name === "te" && value.toLowerCase() !== "trailers") throw new H2Refusal("malformed", "te other than trailers");
    if (name === "host") {
      if (host !== undefined) throw new H2Refusal(400, "duplicate host");
      host = value;
      continue;
    }
    if (name === "content-length") {
      if (contentLength !== undefined || !/^[0-9]{1,15}$/.test(value)) throw new H2Refusal(400, "bad content-length");
      contentLength = Number(value);
    }
    if (isOwnedHeader(name)) continue;
    fields.push([name, value]);
  }
  const method = pseudo.get(":method") ?? "";
  if (!TOKEN.test(method)) throw new H2Refusal("malformed", "bad :method");
  if (method === "CONNECT") throw new H2Refusal(501, "CONNECT is not supported");
  for (const name of pseudo.keys())
    if (name !== ":method" && name !== ":path" && name !== ":scheme" && name !== ":authority")
      throw new H2Refusal("malformed", `pseudo-header ${name}`);
  if (pseudo.get(":scheme") !== "https") throw new H2Refusal(400, ":scheme is not https");
  const path = pseudo.get(":path") ?? "";
  if (!TARGET.test(path) || (path[0] !== "/" && !(path === "*" && method === "OPTIONS")))
    throw new H2Refusal(400, "request target not in origin-form");
  const authority = checkAuthority(pseudo.get(":authority"), host, ctx);
  if (ctx.clientIp) fields.push(["x-forwarded-for", ctx.clientIp]);
  fields.push(["x-forwarded-proto", "https"], ["x-forwarded-host", authority]);
  return { method, path, authority, fields, contentLength };
}

/** The request's authority: present, one value, valid, and a name of this connection's expose (else 421). */
function checkAuthority(authority: string | undefined, host: string | undefined, ctx: H2RequestContext): string {
  // RFC 9113 §8.3.1: a Host beside :authority must say the same (intermediaries check it).
  if (authority !== undefined && host !== undefined && authority !== host)
    throw new H2Refusal(400, ":authority and host differ");
  const value = authority ?? host;
  if (!value || !HOST.test(value)) throw new H2Refusal(400, value ? "bad :authority" : "no :authority");
  const name = value.startsWith("[") ? value.slice(0, value.indexOf("]") + 1) : value.replace(/:[0-9]*$/, "");
  if (!ctx.servesName(normalizeName(name))) throw new H2Refusal(421, "authority is not a name of this connection");
  return value;
}

/** A request trailer section as forwarded: owned and forbidden fields dropped (http1.ts keepTrailerLine). */
export function forwardedTrailers(raw: readonly string[]): [string, string][] {
  const out: [string, string][] = [];
  for (let i = 0; i + 1 < raw.length; i += 2) {
    const name = raw[i];
    if (name.startsWith(":") || isOwnedHeader(name) || TRAILER_FORBIDDEN.has(name)) continue;
    if (!FIELD_VALUE.test(raw[i + 1])) throw new HttpFramingError(400, "control character in trailer");
    out.push([name, raw[i + 1]]);
  }
  return out;
}

/**
 * An HTTP/1.1 backend's response header (or trailer) fields as an h2 client gets them: connection-specific
 * ones and those the backend's Connection names are dropped (RFC 9113 §8.2.2 forbids sending them), the rest
 * kept in order, names lower-cased.
 */
export function h2ResponseFields(raw: readonly string[]): [string, string][] {
  const named = new Set<string>();
  for (let i = 0; i + 1 < raw.length; i += 2)
    if (raw[i].toLowerCase() === "connection")
      for (const option of raw[i + 1].split(",")) named.add(option.trim().toLowerCase());
  const out: [string, string][] = [];
  for (let i = 0; i + 1 < raw.length; i += 2) {
    const name = raw[i].toLowerCase();
    if (CONNECTION_SPECIFIC_SET.has(name) || named.has(name) || name === "te" || name === "http2-settings") continue;
    out.push([name, raw[i + 1]]);
  }
  return out;
}

/** Name/value pairs as a Node header object: repeated names become arrays, cookies joined (RFC 9113 §8.2.3). */
export function headerObject(pairs: readonly [string, string][]): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  for (const [name, value] of pairs) {
    const have = out[name];
    if (have === undefined) out[name] = value;
    else if (name === "cookie") out[name] = `${have}; ${value}`;
    else if (Array.isArray(have)) have.push(value);
    else out[name] = [have, value];
  }
  return out;
}
