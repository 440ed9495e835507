/**
 * Upstream reference data the tests hold our code to, read from the published Go modules (the same
 * downloads scripts/real-deps.sh builds the real peers from) instead of copies beside the checkout: a
 * clone in an empty folder has everything it needs once Go is installed.
 *
 * - Headscale's Swagger document, `juanfont/headscale gen/openapiv2/headscale/v1/headscale.swagger.json`,
 *   at the pin of src/real-versions.json (or an older release for the fake's 0.28 mode).
 * - The policy corpus, `juanfont/headscale hscontrol/policy/v2/testdata/{acl,grant,ssh}_results/*.hujson`:
 *   captures of what Tailscale's control server answered to each policy, which Headscale replays in its own
 *   policy tests. Only the policy and the verdict are read here (`input` of each capture).
 *
 * `go mod download -json` fetches a module once into the Go module cache and afterwards answers from it in a
 * few milliseconds; its answer is still cached per process, as the fake Headscale loads the contract often.
 */
import { execFileSync } from "node:child_process";
import { closeSync, openSync, readdirSync, readFileSync, readSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type ParseError, parse, printParseErrorCode, visit } from "jsonc-parser";

export const HEADSCALE_MODULE = "github.com/juanfont/headscale";

const VERSIONS = new URL("../../src/real-versions.json", import.meta.url);

/** The Headscale release the real-world tests run (src/real-versions.json "headscale", e.g. "v0.29.2"). */
export function headscalePin(): string {
  const pin = (JSON.parse(readFileSync(VERSIONS, "utf8")) as { headscale?: unknown }).headscale;
  if (typeof pin !== "string" || !/^v\d+\.\d+\.\d+$/.test(pin)) {
    throw new Error(`src/real-versions.json: "headscale" must be a release tag like "v0.29.2", got ${String(pin)}`);
  }
  return pin;
}

const dirs = new Map<string, string>();

/** The extracted source of `module@version` in the Go module cache, downloaded first if missing. */
export function goModuleDir(module: string, version: string): string {
  const key = `${module}@${version}`;
  const cached = dirs.get(key);
  if (cached) return cached;
  let out: string;
  try {
    // Outside any Go module or workspace, so nothing around the checkout changes what is resolved.
    out = execFileSync("go", ["mod", "download", "-json", key], {
      cwd: tmpdir(),
      env: { ...process.env, GOWORK: "off", GOTOOLCHAIN: "local" },
      encoding: "utf8",
      stdio: ["ignore", "pipe", "pipe"],
    });
  } catch (e) {
    const err = e as NodeJS.ErrnoException & { stdout?: string; stderr?: string };
    if (err.code === "ENOENT") {
      throw new Error(
        `Go is missing: the tests read ${key} from the Go module cache; install Go >= 1.26 (https://go.dev/doc/install), or run bash scripts/real-deps.sh for the message`,
      );
    }
    // On failure -json still prints the module with an "Error" field; that line is the useful one.
    const detail = /"Error": "(.*)"/.exec(err.stdout ?? "")?.[1] ?? err.stderr?.trim() ?? err.message;
    throw new Error(`go mod download ${key} failed: ${detail}`);
  }
  const dir = (JSON.parse(out) as { Dir?: string }).Dir;
  if (!dir) throw new Error(`go mod download ${key} gave no source directory`);
  dirs.set(key, dir);
  return dir;
}

/** Headscale's Swagger document at `version` (default: the pin). */
export function headscaleSwaggerPath(version: string = headscalePin()): string {
  return join(goModuleDir(HEADSCALE_MODULE, version), "gen/openapiv2/headscale/v1/headscale.swagger.json");
}

export type PolicyCategory = "acl" | "grant" | "ssh";
export const POLICY_CATEGORIES: readonly PolicyCategory[] = ["acl", "grant", "ssh"];

/** One captured policy and the control server's verdict on it. */
export interface PolicyRecord {
  /** The capture's `test_id` (its file name without `.hujson`), e.g. "acl-err06". */
  id: string;
  category: PolicyCategory;
  description: string;
  /** `input.full_policy`, keys in the captured order (some captures hold it as a JSON string: decoded). */
  policy: Record<string, unknown>;
  /** The control server answered 200 (`input.api_response_code`); else it answered 400. */
  accepted: boolean;
  /** For a rejection, the server's error text (`input.api_response_body.message`); null when accepted. */
  message: string | null;
}

const corpora = new Map<string, PolicyRecord[]>();

/** Every capture of a category at the Headscale pin, sorted by id. */
export function policyCorpus(category: PolicyCategory, version: string = headscalePin()): PolicyRecord[] {
  const key = `${category}@${version}`;
  let records = corpora.get(key);
  if (!records) {
    const dir = join(goModuleDir(HEADSCALE_MODULE, version), `hscontrol/policy/v2/testdata/${category}_results`);
    records = readdirSync(dir)
      .filter((f) => f.endsWith(".hujson"))
      .sort()
      .map((f) => captureRecord(join(dir, f), category));
    corpora.set(key, records);
  }
  return records;
}

interface CaptureHead {
  test_id?: unknown;
  description?: unknown;
  category?: unknown;
  input?: {
    full_policy?: unknown;
    api_response_code?: unknown;
    api_response_body?: { message?: unknown };
  };
}

/** One capture file → its record; anything unexpected is an error naming the file. */
export function captureRecord(path: string, category: PolicyCategory): PolicyRecord {
  const head = readCaptureHead(path);
  const input = head.input;
  const fail = (what: string) => new Error(`${path}: ${what}`);
  if (typeof head.test_id !== "string") throw fail("no test_id");
  if (head.category !== category) throw fail(`category ${String(head.category)}, expected ${category}`);
  if (!input) throw fail("no input");
  const raw = typeof input.full_policy === "string" ? JSON.parse(input.full_policy) : input.full_policy;
  if (raw === null || typeof raw !== "object" || Array.isArray(raw)) throw fail("input.full_policy is not an object");
  const code = input.api_response_code;
  if (code !== 200 && code !== 400) throw fail(`input.api_response_code ${String(code)}`);
  const message = input.api_response_body?.message;
  if (code === 400 && typeof message !== "string") throw fail("a rejection without api_response_body.message");
  return {
    id: head.test_id,
    category,
    description: typeof head.description === "string" ? head.description : "",
    policy: raw as Record<string, unknown>,
    accepted: code === 200,
    message: code === 200 ? null : (message as string),
  };
}

/**
 * The capture's top-level fields up to and including `input`. A capture is up to a few MB (the netmaps
 * follow `input`), the corpus ~270 MB: only the head of each file is read, growing until `input` closes.
 */
function readCaptureHead(path: string): CaptureHead {
  const fd = openSync(path, "r");
  try {
    let size = 16 * 1024; // `input` ends within the first 6 KB of every capture at v0.29.2
    let text = "";
    for (;;) {
      const buf = Buffer.alloc(size);
      const n = readSync(fd, buf, 0, size, 0);
      text = buf.subarray(0, n).toString("utf8");
      const end = inputEnd(text);
      if (end !== undefined) return parseHead(`${text.slice(0, end)}}`, path);
      if (n < size) return parseHead(text, path); // the whole file: let the parser say what is wrong
      size *= 4;
    }
  } finally {
    closeSync(fd);
  }
}

/** Offset just past the value of the top-level `input` property, or undefined when `text` ends first. */
function inputEnd(text: string): number | undefined {
  let depth = 0;
  let inInput = false;
  let end: number | undefined;
  let firstError = Number.POSITIVE_INFINITY;
  visit(
    text,
    {
      onObjectBegin: () => {
        depth++;
      },
      onObjectProperty: (name) => {
        if (depth === 1 && name === "input") inInput = true;
      },
      onObjectEnd: (offset, length) => {
        depth--;
        if (inInput && depth === 1 && end === undefined) end = offset + length;
      },
      // A text cut inside `input` still "closes" it at its end while recovering: only a close before any
      // error (the cut shows as an unterminated string or a missing brace) is the real one.
      onError: (_error, offset) => {
        firstError = Math.min(firstError, offset);
      },
    },
    { allowTrailingComma: true },
  );
  return end !== undefined && end <= firstError ? end : undefined;
}

function parseHead(text: string, path: string): CaptureHead {
  const errors: ParseError[] = [];
  const value = parse(text, errors, { allowTrailingComma: true }) as CaptureHead;
  if (errors.length > 0) {
    const e = errors[0] as ParseError;
    throw new Error(`${path}: not HuJSON at offset ${e.offset}: ${printParseErrorCode(e.error)}`);
  }
  return value;
}
