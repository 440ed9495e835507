// Shared plumbing for the agent tests: start an agent that is closed after the test, talk to its ports,
// read its metrics.

import { createHash } from "node:crypto";
import { request } from "node:http";
import { connect, type Socket } from "node:net";
import type { TestContext } from "node:test";
import { type RunningAgent, startAgent } from "../../src/agent/main.js";
import type { AgentConfigInput } from "../../src/contract/agent-config.js";

/** Starts an agent without timers or default metrics (tests drive refresh()), closed after the test. */
export async function agentFor(t: TestContext, config: AgentConfigInput): Promise<RunningAgent> {
  const agent = await startAgent(config, { timers: false, defaultMetrics: false });
  t.after(() => agent.close());
  return agent;
}

export interface HttpAnswer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

export function httpGet(port: number, path: string): Promise<HttpAnswer> {
  return new Promise((resolve, reject) => {
    const req = request({ host: "127.0.0.1", port, path, agent: false }, (res) => {
      let body = "";
      res.setEncoding("utf8");
      res.on("data", (chunk: string) => (body += chunk));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
    });
    req.on("error", reject);
    req.end();
  });
}

/** The value of one sample in Prometheus text format, or undefined when absent. */
export function sample(text: string, name: string, labels: Record<string, string> = {}): number | undefined {
  for (const line of text.split("\n")) {
    if (line.startsWith("#")) continue;
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (.+)$/.exec(line);
    if (!match || match[1] !== name) continue;
    const have = Object.fromEntries(
      [...(match[2] ?? "").matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)].map((m) => [m[1], m[2]]),
    );
    if (
      Object.entries(labels).every(([k, v]) => have[k] === v) &&
      Object.keys(have).length === Object.keys(labels).length
    ) {
      return Number(match[3]);
    }
  }
  return undefined;
}

export async function metricsText(agent: RunningAgent): Promise<string> {
  return (await httpGet(agent.metricsPort, "/metrics")).body;
}

export function connectTo(port: number, host = "127.0.0.1"): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host, port, allowHalfOpen: true });
    socket.once("connect", () => {
      socket.off("error", reject);
      // Resets are expected outcomes in these tests; what the socket received is asserted instead.
      socket.on("error", () => {});
      resolve(socket);
    });
    socket.once("error", reject);
  });
}

/** Connects and reads until the connection is over; a reset (even during connect) is an outcome, not a failure. */
export function attempt(port: number, host = "127.0.0.1"): Promise<Collected> {
  const socket = connect({ host, port, allowHalfOpen: true });
  return collect(socket);
}

export interface Collected {
  bytes: number;
  sha256: string;
  /** How the socket ended: "end" (FIN), "close" (closed without FIN, e.g. reset or destroy). */
  how: "end" | "close";
}

/** Reads a socket until it ends or closes. */
export function collect(socket: Socket): Promise<Collected> {
  return new Promise((resolve) => {
    const hash = createHash("sha256");
    let bytes = 0;
    let ended = false;
    socket.on("data", (chunk: Buffer) => {
      bytes += chunk.length;
      hash.update(chunk);
    });
    socket.on("end", () => {
      ended = true;
      socket.end(); // nothing more to say either: let the connection close
    });
    socket.on("error", () => {});
    socket.once("close", () => resolve({ bytes, sha256: hash.digest("hex"), how: ended ? "end" : "close" }));
  });
}

export function sha256(data: Buffer): string {
  return createHash("sha256").update(data).digest("hex");
}

/** Resolves when `predicate` holds, checking after each event-loop turn (no timing assumptions). */
export async function until(
  predicate: () => boolean | Promise<boolean>,
  what: string,
  maxTurns = 20_000,
): Promise<void> {
  for (let i = 0; i < maxTurns; i++) {
    if (await predicate()) return;
    await new Promise((resolve) => setTimeout(resolve, 1));
  }
  throw new Error(`gave up waiting for ${what}`);
}
