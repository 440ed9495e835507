/**
 * `tailnet-operator headscale snapshot --url <url> --api-key-file <file> [--ca-file <file>]`:
 * a read-only snapshot of a live Headscale for `render --headscale`. Only GETs and the
 * non-mutating policy/check probe are sent.
 */
import { readFileSync } from "node:fs";
import { type Command, InputError, packageVersion, parseCommand, UsageError, usageHint } from "../args.js";
import type { HeadscaleSnapshot } from "../emulator/headscale/in-memory.js";
import { isEmptyDatabasePolicy, PROBE_POLICY } from "../headscale/capabilities.js";
import { createHeadscaleClient } from "../headscale/client.js";
import { HeadscaleError } from "../headscale/errors.js";

const strip = <T extends object>(o: T): Record<string, unknown> => {
  const { shape: _shape, ...rest } = o as T & { shape?: unknown };
  return rest as Record<string, unknown>;
};

export async function fetchSnapshot(opts: {
  url: string;
  apiKey: string;
  ca?: string;
  timeoutMs?: number;
}): Promise<HeadscaleSnapshot> {
  const client = createHeadscaleClient({
    url: opts.url,
    apiKey: opts.apiKey,
    ca: opts.ca,
    timeoutMs: opts.timeoutMs ?? 10000,
  });
  try {
    const [nodes, users, apiKeys, preAuthKeys] = await Promise.all([
      client.nodes.list(),
      client.users.list(),
      client.apiKeys.list(),
      client.preAuthKeys.list(),
    ]);
    let policy: HeadscaleSnapshot["policy"] = null;
    try {
      policy = await client.policy.get();
    } catch (e) {
      // Only "acl policy not found" means none is stored; any other database error has the same prefix.
      if (!isEmptyDatabasePolicy(e)) throw e;
    }
    let version: HeadscaleSnapshot["version"] = "0.29";
    try {
      await client.policy.check(PROBE_POLICY);
    } catch (e) {
      if (e instanceof HeadscaleError && e.status === 404) version = "0.28";
      else throw e;
    }
    return {
      version,
      policyMode: policy && policy.updatedAt === null ? "file" : "database",
      nodes: nodes.map(strip),
      users: users.map(strip),
      policy,
      apiKeys: apiKeys.map(strip),
      preAuthKeys: preAuthKeys.map((k) => ({ ...strip(k), key: "" })),
    };
  } finally {
    await client.close();
  }
}

export const SNAPSHOT: Command = {
  name: "headscale snapshot",
  usage: `usage: tailnet-operator headscale snapshot --url <url> --api-key-file <file> [--ca-file <file>]

Prints (JSON, on stdout) a read-only snapshot of a live Headscale for \`render --headscale\`: nodes,
users, the policy, API keys and pre-auth keys (their secret parts blanked). Only GET requests and the
non-mutating POST /api/v1/policy/check probe are sent.

options:
  --url <url>             Headscale's URL, e.g. https://headscale.example.com
  --api-key-file <file>   file holding an API key (\`headscale apikeys create --expiration 90d\`)
  --ca-file <file>        PEM CA bundle for a Headscale behind a private CA
  -h, --help              print this help and exit
  --version               print the version and exit

exit status: 0 snapshot printed; 1 Headscale could not be read (the message names the call and the fix);
             2 bad command line or unreadable file
`,
  options: { url: { type: "string" }, "api-key-file": { type: "string" }, "ca-file": { type: "string" } },
};

const HEADSCALE_USAGE = `usage: tailnet-operator headscale snapshot --url <url> --api-key-file <file> [--ca-file <file>]
`;

/** What to do about a failed call, in one sentence (the message already names the call). */
export function snapshotFix(e: HeadscaleError, url: string): string {
  // First: a 0.29 server whose database is down answers 401 to every key (see ../headscale/http.ts).
  if (e.classification === "databaseDown")
    return "Headscale's database is down (GET /health fails), so no API key can be checked: keep your key, fix the database Headscale uses, then retry";
  if (e.kind === "unauthorized" || e.status === 401 || e.status === 403)
    return "the API key was refused (expired, revoked with `headscale apikeys expire`, or made for another server): create one with `headscale apikeys create --expiration 90d` and pass it with --api-key-file";
  if (e.status === 404)
    return `${url} answered 404: --url must be Headscale's own address (the one clients use as --login-server), not a UI or a path under it`;
  if (e.kind === "transport") {
    if (/certificate|self[- ]signed|issuer|CERT|TLS|SSL/i.test(e.detail))
      return "the TLS certificate is not trusted: pass the CA that signed it with --ca-file <ca.pem>";
    if (e.classification === "timeout")
      return `no answer from ${url} in time: check the URL, the port, and that this machine may reach it`;
    return `cannot connect to ${url}: check the URL and port (Headscale listens on :8080 unless listen_addr says otherwise) and that it runs`;
  }
  if (e.kind === "decode") return `${url} answered something that is not Headscale's API: check --url`;
  return "see Headscale's log for this call";
}

function readFileArg(path: string, flag: string): string {
  try {
    return readFileSync(path, "utf8");
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    throw new InputError(
      `headscale snapshot: ${flag} ${path}: ${code === "ENOENT" ? "no such file or directory" : (e as Error).message}`,
    );
  }
}

export async function runHeadscale(
  args: string[],
  io: { out: (s: string) => void; err: (s: string) => void } = {
    out: (s) => process.stdout.write(s),
    err: (s) => process.stderr.write(s),
  },
): Promise<number> {
  const [sub, ...rest] = args;
  if (sub === "--help" || sub === "-h" || sub === undefined) {
    (sub === undefined ? io.err : io.out)(`${HEADSCALE_USAGE}\n${SNAPSHOT.usage}`);
    return sub === undefined ? 2 : 0;
  }
  if (sub === "--version") {
    io.out(`${packageVersion()}\n`);
    return 0;
  }
  if (sub !== "snapshot") {
    io.err(`headscale: unknown subcommand "${sub}"\n${HEADSCALE_USAGE}`);
    return 2;
  }
  try {
    const parsed = parseCommand(SNAPSHOT, rest);
    if (parsed.kind !== "run") {
      io.out(parsed.kind === "help" ? SNAPSHOT.usage : `${packageVersion()}\n`);
      return 0;
    }
    const url = parsed.values.url as string | undefined;
    const keyFile = parsed.values["api-key-file"] as string | undefined;
    if (!url || !keyFile)
      throw new UsageError("headscale snapshot: --url and --api-key-file are required", "headscale snapshot");
    try {
      new URL(url);
    } catch {
      throw new UsageError(
        `headscale snapshot: --url ${url}: not a URL (e.g. https://headscale.example.com)`,
        "headscale snapshot",
      );
    }
    const apiKey = readFileArg(keyFile, "--api-key-file").trim();
    if (!apiKey) throw new InputError(`headscale snapshot: --api-key-file ${keyFile}: the file is empty`);
    const caFile = parsed.values["ca-file"] as string | undefined;
    const ca = caFile ? readFileArg(caFile, "--ca-file") : undefined;
    try {
      const snap = await fetchSnapshot({ url, apiKey, ca });
      io.out(`${JSON.stringify(snap, null, 2)}\n`);
      return 0;
    } catch (e) {
      if (e instanceof HeadscaleError) {
        io.err(`${e.message}\n  fix: ${snapshotFix(e, url)}\n`);
        return 1;
      }
      // Never print the error object: it may carry request options. Its message names no secret.
      io.err(`headscale snapshot: ${(e as Error).message.split("\n")[0]}\n`);
      return 1;
    }
  } catch (e) {
    if (e instanceof UsageError) {
      io.err(`${e.message}\n${usageHint("headscale snapshot")}\n`);
      return 2;
    }
    if (e instanceof InputError) {
      io.err(`${e.message}\n`);
      return 2;
    }
    throw e;
  }
}
