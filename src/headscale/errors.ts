/**
 * Typed errors for the Headscale API client.
 *
 * Headscale ≤0.29 answers errors as a `google.rpc.Status` (`{code,message,details}`), mostly with HTTP 500 even
 * for "not found" or "invalid policy"; 0.30 answers `application/problem+json` with real 4xx statuses; a bad
 * API key is a plain-text 401 in both. All three end up as one `HeadscaleError` whose `classification` is what
 * callers branch on (`juanfont/headscale` at v0.29.x: hscontrol/grpcv1.go for the codes, hscontrol/app.go for
 * the 401; on main: the Huma API of PR #3324 for problem+json).
 */

export type HeadscaleErrorKind = "transport" | "unauthorized" | "http" | "decode";

export type HeadscaleErrorClassification =
  | "notFound"
  | "invalidArgument"
  | "policyFileMode"
  | "policyInvalid"
  | "duplicate"
  | "databaseDown"
  | "timeout"
  | "refused"
  | "reset"
  | "other";

export interface HeadscaleErrorInit {
  kind: HeadscaleErrorKind;
  /** Method and path template, e.g. "GET /api/v1/node/{nodeId}". */
  operation: string;
  status?: number;
  grpcCode?: number;
  /** Headscale's own message (or a short transport description); never carries credentials. */
  detail: string;
  classification: HeadscaleErrorClassification;
}

export class HeadscaleError extends Error {
  readonly kind: HeadscaleErrorKind;
  readonly operation: string;
  readonly status?: number;
  readonly grpcCode?: number;
  readonly detail: string;
  readonly classification: HeadscaleErrorClassification;

  constructor(init: HeadscaleErrorInit) {
    super(formatMessage(init));
    this.name = "HeadscaleError";
    this.kind = init.kind;
    this.operation = init.operation;
    this.status = init.status;
    this.grpcCode = init.grpcCode;
    this.detail = init.detail;
    this.classification = init.classification;
  }
}

/** "Headscale GET /api/v1/node: 503 <detail>" for HTTP errors, "Headscale GET /api/v1/node: <detail>" otherwise. */
function formatMessage(init: HeadscaleErrorInit): string {
  const head = `Headscale ${init.operation}:`;
  if (init.status !== undefined)
    return init.detail ? `${head} ${init.status} ${init.detail}` : `${head} ${init.status}`;
  return `${head} ${init.detail}`;
}

const NODE_GONE = /node no longer exists in NodeStore/i;

// Ordered: the first match wins. Policy rejections often contain "not found" ("src=tag not found: ..."), so the
// policy patterns must come before the generic ones.
const MESSAGE_RULES: ReadonlyArray<[RegExp, HeadscaleErrorClassification]> = [
  [/update is disabled for modes other than 'database'/i, "policyFileMode"],
  [/pinging database/i, "databaseDown"],
  [
    /parsing policy|setting policy|parsing HuJSON|validating policy|verifying SSH rules|verifying policy rules|loading ACL policy file|unknown field/i,
    "policyInvalid",
  ],
  // 0.29 RenameNode (hscontrol/state/state.go): ErrNodeNameNotUnique, and types.ValidateGivenName's refusal
  [/UNIQUE constraint|duplicate key|node name is not unique/i, "duplicate"],
  [/is not a valid DNS label|is too long, max length is/i, "invalidArgument"],
  [/not found/i, "notFound"],
  // 0.29's state.ErrNodeNotInNodeStore (hscontrol/state/state.go): expire, approve_routes on a node that
  // is gone (code 2 and 3 respectively, seen against the real server in test/real/headscale.test.ts).
  [NODE_GONE, "notFound"],
];

/** Classifies by message substrings alone; "other" when nothing is recognised. */
export function classifyMessage(message: string): HeadscaleErrorClassification {
  for (const [pattern, classification] of MESSAGE_RULES) if (pattern.test(message)) return classification;
  return "other";
}

/**
 * Classifies an rpcStatus error: the gRPC code first where it is specific (NotFound, AlreadyExists,
 * InvalidArgument), then the message, because most Headscale errors are plain Go errors (code 2, HTTP 500).
 */
export function classifyRpcStatus(grpcCode: number | undefined, message: string): HeadscaleErrorClassification {
  const byMessage = classifyMessage(message);
  switch (grpcCode) {
    case 5:
      return "notFound";
    case 6:
      return "duplicate";
    case 3:
      if (NODE_GONE.test(message)) return "notFound";
      // policy/check answers code 3 "parsing policy: ..."; keep that more specific class.
      return byMessage === "policyInvalid" || byMessage === "policyFileMode" ? byMessage : "invalidArgument";
    default:
      return byMessage;
  }
}

/** Classifies a problem+json error (0.30): the message first (it names the cause), then the real HTTP status. */
export function classifyProblem(status: number, message: string): HeadscaleErrorClassification {
  const byMessage = classifyMessage(message);
  if (byMessage !== "other") return byMessage;
  if (status === 404) return "notFound";
  if (status === 409) return "duplicate";
  if (status === 400 || status === 422) return "invalidArgument";
  return "other";
}

export interface ParsedErrorBody {
  detail: string;
  grpcCode?: number;
  classification: HeadscaleErrorClassification;
}

const MAX_DETAIL = 500;

/** Turns a non-2xx body of either dialect (or anything else, e.g. a proxy's HTML page) into detail + class. */
export function parseErrorBody(status: number, contentType: string, text: string): ParsedErrorBody {
  const json = tryParseJson(text);
  if (isRecord(json)) {
    const isProblem = /application\/problem\+json/i.test(contentType) || ("title" in json && "status" in json);
    if (isProblem) {
      const detail = problemDetail(json);
      return { detail, classification: classifyProblem(status, detail) };
    }
    if (typeof json.message === "string") {
      const grpcCode = typeof json.code === "number" ? json.code : undefined;
      return { detail: clip(json.message), grpcCode, classification: classifyRpcStatus(grpcCode, json.message) };
    }
  }
  const detail = clip(text.replace(/\s+/g, " ").trim());
  return { detail, classification: statusFallback(status, detail) };
}

function statusFallback(status: number, detail: string): HeadscaleErrorClassification {
  const byMessage = classifyMessage(detail);
  if (byMessage !== "other") return byMessage;
  return status === 404 ? "notFound" : "other";
}

function problemDetail(json: Record<string, unknown>): string {
  const base =
    typeof json.detail === "string" && json.detail ? json.detail : typeof json.title === "string" ? json.title : "";
  const extra: string[] = [];
  if (Array.isArray(json.errors)) {
    for (const e of json.errors) {
      if (isRecord(e) && typeof e.message === "string" && e.message && !base.includes(e.message)) extra.push(e.message);
    }
  }
  return clip(extra.length ? `${base}: ${extra.join("; ")}` : base);
}

function clip(text: string): string {
  return text.length > MAX_DETAIL ? `${text.slice(0, MAX_DETAIL)}…` : text;
}

function tryParseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/**
 * Masks anything that looks like a Headscale secret (full `hskey-api-…`/`hskey-auth-…` keys) and every exact
 * secret passed in. Defence in depth: the server should never echo a key, but its message lands in status.
 * Prefixes are 12 base64url characters that may hold "-" and "_" (hscontrol/db/api_key.go), so the prefix is
 * cut by length, never at the first "-"; a key of any other shape is masked whole. The listed form
 * `hskey-…-<prefix>-***` is kept.
 */
export function redactSecrets(text: string, secrets: readonly string[] = []): string {
  let out = text;
  for (const secret of secrets) if (secret.length >= 4) out = out.split(secret).join("[redacted]");
  return out.replace(/hskey-(api|auth)-([A-Za-z0-9_-]+)/g, (match, kind: string, rest: string, at: number) => {
    const masked = out.startsWith("***", at + match.length);
    if (masked && rest.endsWith("-")) return match;
    if (rest.length > 13 && rest[12] === "-") return `hskey-${kind}-${rest.slice(0, 12)}-***`;
    return `hskey-${kind}-***`;
  });
}

/** One read of a Headscale part: its value, or the error that stood in its place, and when. */
export type Obs<T> = { ok: true; value: T; at: Date } | { ok: false; error: HeadscaleError; at: Date };
