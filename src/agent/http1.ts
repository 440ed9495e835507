// Strict HTTP/1.1 request syntax (RFC 9112) for the http pipe, which is the first hop after untrusted tailnet
// clients: whatever the agent forwards must be parsed the same way by every backend behind it (HAProxy, Go's
// net/http, Node's llhttp), so anything one of them could read differently is refused with 400 instead of
// being passed on. The agent also owns the client-identity headers: it sets them from the connection and drops
// every client-sent variant a backend might trust (docs/security.md, "Client identity").

export class HttpFramingError extends Error {
  constructor(
    readonly status: 400 | 404 | 431 | 500 | 501,
    message: string,
  ) {
    super(message);
  }
}

const TCHAR = "[!#$%&'*+.^_`|~0-9A-Za-z-]";
const TOKEN = new RegExp(`^${TCHAR}+$`);
/** field-value: VCHAR, obs-text, SP, HTAB — no CR, LF, NUL or other control. */
const FIELD_VALUE = /^[\t\x20-\x7e\x80-\xff]*$/;
/**
 * method SP request-target SP HTTP-version. The target is origin-form (visible ASCII, no fragment) or `*`;
 * absolute-form and authority-form are checked below.
 */
const REQUEST_LINE = new RegExp(`^(${TCHAR}+) ([\\x21\\x22\\x24-\\x7e]+) HTTP/1\\.([01])$`);
/** The field lines of a head (sticky, from after the request line): tchar name, colon, value; CRLF between. */
const FIELD_LINES = new RegExp(
  `(?:${TCHAR}+:[\\t\\x20-\\x7e\\x80-\\xff]*\\r\\n)*${TCHAR}+:[\\t\\x20-\\x7e\\x80-\\xff]*$`,
  "y",
);
/** Host: uri-host [ ":" port ] (RFC 3986 reg-name or IP-literal). */
const HOST = /^(?:\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9._~!$&'()*+,;=%-]*)(?::[0-9]*)?$/;
const QUOTED = '"(?:[\\t \\x21\\x23-\\x5b\\x5d-\\x7e\\x80-\\xff]|\\\\[\\t\\x20-\\x7e\\x80-\\xff])*"';
/** chunk-size [ chunk-ext ] (RFC 9112 §7.1.1); the size is at most 12 hex digits (2^48 bytes). */
const CHUNK_LINE = new RegExp(
  `^([0-9A-Fa-f]{1,12})(?:[ \\t]*;[ \\t]*${TCHAR}+(?:[ \\t]*=[ \\t]*(?:${TCHAR}+|${QUOTED}))?)*$`,
);
/** Longest chunk-size line, extensions included (Go's net/http allows 4 KiB). */
export const MAX_CHUNK_LINE = 4096;

/**
 * Client-sent headers the agent drops: `X-Forwarded-*` (prefix) and these. The agent sets X-Forwarded-For,
 * -Proto and -Host itself; the rest are other spellings of the client's address that some backend or
 * framework trusts. Proxy-Connection, HTTP2-Settings and Connection are hop-by-hop headers the agent owns.
 */
export const DROPPED_HEADERS: readonly string[] = [
  "forwarded",
  "x-real-ip",
  "true-client-ip",
  "x-client-ip",
  "x-cluster-client-ip",
  "cf-connecting-ip",
  "fastly-client-ip",
  "x-original-forwarded-for",
  "proxy-connection",
  "http2-settings",
];
const DROPPED = new Set(DROPPED_HEADERS);
export const isOwnedHeader = (name: string): boolean => DROPPED.has(name) || name.startsWith("x-forwarded-");

/** Connection options that still mean something on the pinned backend connection. */
const KEPT_OPTIONS = new Set(["close", "keep-alive", "te"]);
/** Fields never accepted in a trailer section (framing, routing, hop-by-hop). */
const TRAILER_FORBIDDEN = new Set(["content-length", "transfer-encoding", "host", "connection", "te", "trailer"]);
/** Upgrades the agent never forwards: after them the stream carries HTTP the agent could not rewrite. */
const HTTP_UPGRADE = /^(?:h2c|h2|https?(?:\/.*)?|tls(?:\/.*)?)$/i;

/**
 * Headers a mode owns beyond the client-identity ones (the kube-api expose: Authorization and Impersonate-*):
 * every client-sent field `drop` names is removed, in heads and trailers, and `lines` are appended to each
 * forwarded head after the agent's own fields.
 */
export interface OwnedHeaders {
  drop(name: string): boolean;
  lines: readonly string[];
}

export interface RequestHead {
  head: Buffer;
  /** The request line's method and target, for the kube-api audit log. */
  method: string;
  target: string;
  /** The field lines as forwarded from the client (the agent's own are not among them): routes.ts matches headers on them. */
  fieldLines: readonly string[];
  /** Body framing of this request. */
  body: { kind: "length"; length: number } | { kind: "chunked" } | { kind: "none" };
  /** A HEAD request (its response has no body). */
  headMethod: boolean;
  /** An Upgrade request forwarded as such: raw only if the backend answers 101. */
  upgrade: boolean;
}

/** Trims SP and HTAB only (String.trim would also eat obs-text 0xA0). */
function trimOws(value: string): string {
  let start = 0;
  let end = value.length;
  while (start < end && (value.charCodeAt(start) === 0x20 || value.charCodeAt(start) === 0x09)) start++;
  while (end > start && (value.charCodeAt(end - 1) === 0x20 || value.charCodeAt(end - 1) === 0x09)) end--;
  return start === 0 && end === value.length ? value : value.slice(start, end);
}

/** One field line: lower-case name and trimmed value, or 400. */
export function parseFieldLine(line: string): [string, string] {
  const colon = line.indexOf(":");
  if (colon <= 0) throw new HttpFramingError(400, "bad header line");
  const rawName = line.slice(0, colon);
  // Also refuses obs-fold (a line starting with SP/HTAB) and whitespace before the colon.
  if (!TOKEN.test(rawName)) throw new HttpFramingError(400, "bad header name");
  const value = line.slice(colon + 1);
  if (!FIELD_VALUE.test(value)) throw new HttpFramingError(400, "control character in header value");
  return [rawName.toLowerCase(), trimOws(value)];
}

function checkTarget(method: string, target: string): void {
  if (target.charCodeAt(0) === 0x2f) return; // origin-form
  if (target === "*" && method === "OPTIONS") return;
  // absolute-form: a reverse proxy is not asked to fetch other URLs, and backends disagree on whether its
  // authority or Host wins; authority-form is CONNECT's, which is refused anyway.
  throw new HttpFramingError(400, "request target not in origin-form");
}

/**
 * Parses and rewrites one request head (without its final CRLFCRLF, latin1). Throws HttpFramingError for
 * anything outside RFC 9112's grammar and for ambiguous framing (RFC 9112 §6: Transfer-Encoding must be
 * exactly `chunked` and excludes Content-Length, which must be one decimal value).
 * The forwarded head keeps the request line and the client's other fields in order, then the agent's own:
 * Connection (only close/keep-alive/te/upgrade), Content-Length or Transfer-Encoding (normalised),
 * X-Forwarded-For (`clientIp`, set, not extended), X-Forwarded-Proto and X-Forwarded-Host (from Host).
 */
export function rewriteRequestHead(
  text: string,
  clientIp: string | undefined,
  proto = "https",
  owned?: OwnedHeaders,
): RequestHead {
  const lines = text.split("\r\n");
  // Every field line at once (one linear regex pass; the per-line work below then needs no checks).
  const firstEnd = lines[0].length;
  FIELD_LINES.lastIndex = firstEnd + 2;
  if (firstEnd < text.length && !FIELD_LINES.test(text)) {
    for (let i = 1; i < lines.length; i++) parseFieldLine(lines[i]); // throws the precise error
    throw new HttpFramingError(400, "bad header line");
  }
  const requestLine = REQUEST_LINE.exec(lines[0]);
  if (!requestLine) throw new HttpFramingError(400, "bad request line");
  const method = requestLine[1];
  if (method === "CONNECT") throw new HttpFramingError(501, "CONNECT is not supported");
  checkTarget(method, requestLine[2]);
  const http11 = requestLine[3] === "1";
  const fields = readFields(lines, owned);
  if (http11 && fields.host === undefined) throw new HttpFramingError(400, "no host");
  if (fields.chunked && fields.contentLength !== undefined)
    throw new HttpFramingError(400, "content-length with transfer-encoding");
  if (fields.chunked && !http11) throw new HttpFramingError(400, "transfer-encoding in HTTP/1.0");
  const forwardUpgrade = http11 && forwardsUpgrade(fields);
  const { out, body } = forwardedHead(fields, forwardUpgrade, clientIp, proto, owned);
  return {
    head: Buffer.from(out.join("\r\n"), "latin1"),
    method,
    target: requestLine[2],
    fieldLines: fields.kept.slice(1),
    body,
    headMethod: method === "HEAD",
    upgrade: forwardUpgrade,
  };
}

/** What a head's field lines say, the lines kept in order (the request line first). */
interface HeadFields {
  kept: string[];
  /** Connection options, lower-case. */
  options: Set<string>;
  host: string | undefined;
  contentLength: number | undefined;
  chunked: boolean;
  upgrade: string | undefined;
}

/** Reads the field lines (already checked against FIELD_LINES): framing, Host, Upgrade and what is kept. */
function readFields(lines: readonly string[], owned: OwnedHeaders | undefined): HeadFields {
  const f: HeadFields = {
    kept: [lines[0]],
    options: new Set<string>(),
    host: undefined,
    contentLength: undefined,
    chunked: false,
    upgrade: undefined,
  };
  for (let i = 1; i < lines.length; i++) {
    const line = lines[i];
    const colon = line.indexOf(":");
    const name = line.slice(0, colon).toLowerCase();
    switch (name) {
      case "connection":
        for (const option of line.slice(colon + 1).split(",")) {
          const t = trimOws(option).toLowerCase();
          if (t && !TOKEN.test(t)) throw new HttpFramingError(400, "bad connection option");
          if (t) f.options.add(t);
        }
        continue;
      case "host": {
        const value = trimOws(line.slice(colon + 1));
        if (f.host !== undefined) throw new HttpFramingError(400, "duplicate host");
        if (!HOST.test(value)) throw new HttpFramingError(400, "bad host");
        f.host = value;
        break;
      }
      case "content-length": {
        const value = trimOws(line.slice(colon + 1));
        if (f.contentLength !== undefined || !/^[0-9]{1,15}$/.test(value))
          throw new HttpFramingError(400, "bad content-length");
        f.contentLength = Number(value);
        continue;
      }
      case "transfer-encoding":
        // Only a lone `chunked`: no client sends other request codings, and backends disagree on them.
        if (f.chunked || trimOws(line.slice(colon + 1)).toLowerCase() !== "chunked")
          throw new HttpFramingError(400, "bad transfer-encoding");
        f.chunked = true;
        continue;
      case "upgrade":
        if (f.upgrade !== undefined) throw new HttpFramingError(400, "duplicate upgrade");
        f.upgrade = trimOws(line.slice(colon + 1));
        continue;
    }
    if (isOwnedHeader(name) || owned?.drop(name)) continue;
    f.kept.push(line);
  }
  return f;
}

/** An HTTP/1.1 Upgrade the client named in Connection, to protocols that are not HTTP or TLS again. */
function forwardsUpgrade({ upgrade, options }: HeadFields): boolean {
  return (
    upgrade !== undefined &&
    options.has("upgrade") &&
    upgrade.split(",").every((p) => {
      const protocol = trimOws(p);
      return protocol !== "" && !HTTP_UPGRADE.test(protocol);
    })
  );
}

/** The forwarded head's lines (ending in the empty pair that makes CRLFCRLF) and the body framing. */
function forwardedHead(
  fields: HeadFields,
  forwardUpgrade: boolean,
  clientIp: string | undefined,
  proto: string,
  owned: OwnedHeaders | undefined,
): { out: string[]; body: RequestHead["body"] } {
  const { kept, options, host, contentLength, chunked, upgrade } = fields;
  // Headers named as Connection options are hop-by-hop: dropped, except the few still meaningful here.
  // The options themselves are not forwarded (one naming X-Forwarded-For would make the next hop drop ours).
  let out = kept;
  if (options.size > 0) {
    out = [kept[0]];
    for (let i = 1; i < kept.length; i++) {
      const colon = kept[i].indexOf(":");
      const name = kept[i].slice(0, colon).toLowerCase();
      if (!options.has(name) || KEPT_OPTIONS.has(name) || name === "host") out.push(kept[i]);
    }
  }
  const connection = [...options].filter((o) => KEPT_OPTIONS.has(o));
  if (forwardUpgrade) {
    connection.push("upgrade");
    out.push(`upgrade: ${upgrade}`);
  }
  if (connection.length > 0) out.push(`connection: ${connection.join(", ")}`);
  let body: RequestHead["body"] = { kind: "none" };
  if (chunked) {
    out.push("transfer-encoding: chunked");
    body = { kind: "chunked" };
  } else if (contentLength !== undefined) {
    out.push(`content-length: ${contentLength}`);
    if (contentLength > 0) body = { kind: "length", length: contentLength };
  }
  if (clientIp) out.push(`x-forwarded-for: ${clientIp}`);
  out.push(`x-forwarded-proto: ${proto}`);
  if (host) out.push(`x-forwarded-host: ${host}`);
  if (owned) out.push(...owned.lines);
  out.push("", "");
  return { out, body };
}

/** A chunk-size line (without CRLF): the size, or 400. Extensions are checked, then dropped by the caller. */
export function parseChunkLine(line: string): number {
  const m = CHUNK_LINE.exec(line);
  if (!m) throw new HttpFramingError(400, "bad chunk size line");
  return Number.parseInt(m[1], 16);
}

/** A trailer field line: forwarded (true), dropped (false: owned or forbidden in trailers), or 400. */
export function keepTrailerLine(line: string, owned?: OwnedHeaders): boolean {
  const [name] = parseFieldLine(line);
  return !isOwnedHeader(name) && !TRAILER_FORBIDDEN.has(name) && !owned?.drop(name);
}
