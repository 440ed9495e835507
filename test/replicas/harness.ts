/**
 * Two (or more) operator replicas as the install runs them: separate `tailnet-operator serve` OS processes,
 * each with its own Headscale views, caches, policy-check verdicts and write backoff, against one fake
 * Headscale. The Metacontroller emulator (src/emulator/metacontroller/loop.ts) drives them through a round robin: every hook
 * call goes to the next replica, as a Service spreads Metacontroller's calls; `pin` sends the next calls to
 * one replica, `post` sends a recorded request to a chosen one.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import type { FastifyInstance } from "fastify";
import type { K8sObject } from "../../src/k8s/objects.js";
import { b64 } from "../../src/kinds/shared/secrets.js";
import type { FakeHeadscale } from "../fakes/headscale/index.js";
import { FakeMetacontroller } from "../fakes/metacontroller.js";
import { parentObject } from "../fixtures/hooks.js";

export const API = "tailnet.internal/v1alpha1";
const ROOT = fileURLToPath(new URL("../..", import.meta.url));

export type Ctx = { after: (fn: () => Promise<void> | void) => void };

export interface Replica {
  url: string;
  process: ChildProcess;
  /** Hook calls this replica answered. */
  calls: number;
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

/** One `serve` process (Node through tsx, as `npm start`); resolves once /healthz answers. */
export async function startReplica(t: Ctx, config: string): Promise<Replica> {
  const dir = mkdtempSync(join(tmpdir(), "replica-"));
  const file = join(dir, "config.yaml");
  writeFileSync(file, config);
  const port = await freePort();
  const child = spawn(process.execPath, ["--import", "tsx", "src/cli.ts", "serve", "--config", file], {
    cwd: ROOT,
    env: { ...process.env, PORT: String(port), LOG_LEVEL: "warn", ALLOW_UNAUTHENTICATED_HOOKS: "true" },
    stdio: ["ignore", "ignore", "pipe"],
  });
  let stderr = "";
  child.stderr?.on("data", (d: Buffer) => {
    stderr = (stderr + d.toString()).slice(-4000);
  });
  t.after(async () => {
    if (child.exitCode === null) {
      const exited = new Promise((r) => child.once("exit", r));
      child.kill("SIGTERM");
      await Promise.race([exited, new Promise((r) => setTimeout(r, 5000))]);
      if (child.exitCode === null) child.kill("SIGKILL");
    }
    rmSync(dir, { recursive: true, force: true });
  });
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`replica exited (${child.exitCode}): ${stderr}`);
    const up = await fetch(`${url}/healthz`).then(
      (r) => r.ok,
      () => false,
    );
    if (up) break;
    if (Date.now() > deadline) throw new Error(`replica not up within 60 s: ${stderr}`);
    await new Promise((r) => setTimeout(r, 100));
  }
  return { url, process: child, calls: 0 };
}

/** Hook calls spread over the replicas in turn (or pinned to one), in the shape the loop's `app.inject` has. */
export class RoundRobin {
  private next = 0;
  private pinned: number | undefined;
  /** Which replica answered each call, in order. */
  readonly answeredBy: number[] = [];

  constructor(readonly replicas: Replica[]) {}

  /** Send every following call to replica `i` (undefined: round robin again). */
  pin(i: number | undefined): void {
    this.pinned = i;
  }

  /** POST a hook body to replica `i`; the raw response text (for byte-for-byte comparison). */
  async post(i: number, url: string, body: unknown): Promise<{ status: number; text: string }> {
    const r = this.replicas[i];
    r.calls++;
    const res = await fetch(`${r.url}${url}`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(body),
    });
    return { status: res.status, text: await res.text() };
  }

  /** The loop's view of a server: `inject` over HTTP to the next replica. */
  asApp(): FastifyInstance {
    const inject = async (opts: { url: string; payload: string }) => {
      const i = this.pinned ?? this.next++ % this.replicas.length;
      this.answeredBy.push(i);
      const r = this.replicas[i];
      r.calls++;
      const res = await fetch(`${r.url}${opts.url}`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: opts.payload,
      });
      return { statusCode: res.status, body: await res.text() };
    };
    return { inject } as unknown as FastifyInstance;
  }
}

export const REPLICA_CONFIG = "logLevel: warn\nheadscale: { timeoutSeconds: 5, cacheTTLSeconds: 10 }\n";

/** `n` replicas (started in parallel), a round robin over them and a Metacontroller emulator driving it. */
export async function replicas(t: Ctx, n = 2, config = REPLICA_CONFIG) {
  const list = await Promise.all(Array.from({ length: n }, () => startReplica(t, config)));
  const rr = new RoundRobin(list);
  const mc = new FakeMetacontroller({ app: rr.asApp() });
  return { replicas: list, rr, mc };
}

/** The base policy: the groups the workloads name. */
export const BASE_POLICY = `{
  "groups": { "group:eng": ["alice@"], "group:platform": ["bob@"] },
  "acls": [ { "action": "accept", "src": ["group:eng"], "dst": ["*:*"] } ],
}`;

/** The Tailnet `home` in Apply mode (base policy, tag owner group:platform) and its credentials, pointing at the fake. */
export function applyTailnet(mc: FakeMetacontroller, fake: FakeHeadscale, spec: Record<string, unknown> = {}): void {
  mc.apply(
    parentObject("Tailnet", "home", {
      headscale: { url: fake.url, apiKeySecretRef: { namespace: "tailnet-system", name: "hs" } },
      policy: {
        mode: "Apply",
        baseConfigMapRef: { namespace: "tailnet-system", name: "tailnet-policy-base" },
        tagOwners: ["group:platform"],
      },
      allowedIngressSources: ["group:eng"],
      allowedEgressTargets: ["100.64.0.0/10"],
      dns: { baseDomain: "ts.example.com" },
      ...spec,
    }),
  );
  mc.apply({
    apiVersion: "v1",
    kind: "ConfigMap",
    metadata: { name: "tailnet-policy-base", namespace: "tailnet-system" },
    data: { "policy.hujson": BASE_POLICY },
  });
  const secret = (name: string, data: Record<string, string>): K8sObject => ({
    apiVersion: "v1",
    kind: "Secret",
    metadata: { name, namespace: "tailnet-system" },
    data,
  });
  mc.apply(secret("hs", { apiKey: b64(fake.apiKey) }));
  mc.apply(secret("tailnet-home-credentials", { url: b64(fake.url), apiKey: b64(fake.apiKey) }));
}

/** The last request the loop sent for this parent's sync hook. */
export function lastSyncBody(mc: FakeMetacontroller, kind: string, name: string): unknown {
  const call = mc.calls.filter((c) => c.hook === "sync" && c.kind === kind && c.parent === name).at(-1);
  if (!call) throw new Error(`no sync of ${kind} ${name}`);
  return call.body;
}

/** Every parent's status, serialised (a status change anywhere shows as a different string). */
export function statuses(mc: FakeMetacontroller): string {
  return JSON.stringify(mc.parents().map((p) => [p.kind, p.metadata.namespace, p.metadata.name, p.status]));
}
