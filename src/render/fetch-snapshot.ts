/**
 * `tailnet-operator headscale snapshot --url <url> --api-key-file <file> [--ca-file <file>]`:
 * a read-only snapshot of a live Headscale for `render --headscale`. Only GETs and the
 * non-mutating policy/check probe are sent.
 */
import { readFileSync } from "node:fs";
import { PROBE_POLICY } from "../headscale/capabilities.js";
import { createHeadscaleClient } from "../headscale/client.js";
import { HeadscaleError } from "../headscale/errors.js";
import type { HeadscaleSnapshot } from "./snapshot.js";

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
      if (!(e instanceof HeadscaleError && /acl policy not found|loading ACL from database/i.test(e.detail))) throw e;
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

export async function runHeadscale(args: string[]): Promise<number> {
  const [sub, ...rest] = args;
  const get = (n: string) => {
    const i = rest.indexOf(n);
    return i >= 0 ? rest[i + 1] : undefined;
  };
  const url = get("--url");
  const keyFile = get("--api-key-file");
  if (sub !== "snapshot" || !url || !keyFile) {
    process.stderr.write(
      "usage: tailnet-operator headscale snapshot --url <url> --api-key-file <file> [--ca-file <file>]\n",
    );
    return 2;
  }
  const apiKey = readFileSync(keyFile, "utf8").trim();
  const caFile = get("--ca-file");
  try {
    const snap = await fetchSnapshot({ url, apiKey, ca: caFile ? readFileSync(caFile, "utf8") : undefined });
    process.stdout.write(`${JSON.stringify(snap, null, 2)}\n`);
    return 0;
  } catch (e) {
    process.stderr.write(`${e instanceof HeadscaleError ? e.message : "snapshot failed"}\n`);
    return 1;
  }
}
