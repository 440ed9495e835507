/**
 * What the hook server may hold at once: request slots and the bytes of request bodies. Both are
 * taken before a body is read (a slot in onRequest, bytes as they arrive), so a caller that
 * announces a huge Content-Length, or many callers at once, cannot push the process past its
 * container's memory: the budget is derived from the memory the container has.
 */
import { readFileSync } from "node:fs";
import { getHeapStatistics } from "node:v8";
import type { OperatorConfig } from "../config.js";

/** Every request may hold this much without drawing on the shared pool (small syncs pass under load). */
export const RESERVE_BYTES = 128 * 1024;

export interface MemoryLimit {
  bytes: number;
  source: "cgroup v2 memory.max" | "cgroup v1 memory.limit_in_bytes" | "V8 heap limit";
}

// cgroup v1 reports "no limit" as a page-rounded 2^63-1; anything past 2^50 (1 PiB) is no limit.
const UNLIMITED = 2 ** 50;

/** The container's memory limit (cgroup v2, then v1), else the V8 heap limit. */
export function containerMemory(read: (path: string) => string = (p) => readFileSync(p, "utf8")): MemoryLimit {
  const tryRead = (path: string): number | undefined => {
    try {
      const v = read(path).trim();
      const n = Number(v);
      return v !== "max" && Number.isFinite(n) && n > 0 && n < UNLIMITED ? n : undefined;
    } catch {
      return undefined;
    }
  };
  const v2 = tryRead("/sys/fs/cgroup/memory.max");
  if (v2) return { bytes: v2, source: "cgroup v2 memory.max" };
  const v1 = tryRead("/sys/fs/cgroup/memory/memory.limit_in_bytes");
  if (v1) return { bytes: v1, source: "cgroup v1 memory.limit_in_bytes" };
  return { bytes: getHeapStatistics().heap_size_limit, source: "V8 heap limit" };
}

export interface HookLimits {
  maxInFlight: number;
  /** Bytes of request bodies held at once, across all requests (reserves included). */
  bodyBudgetBytes: number;
  /** Per-request body limits, never above what the budget can hold for one request. */
  bodyLimitBytes: number;
  tailnetBodyLimitBytes: number;
  headersTimeoutMs: number;
  bodyTimeoutMs: number;
  memory: MemoryLimit;
}

/**
 * The budget is a sixth of the container's memory: a body is parsed into objects several times
 * the size of its kept text (docs/OPERATIONS.md, "Large tailnets"), and the runtime itself needs
 * ~100 MiB. The budget counts what a request holds, not what crosses the socket: a large body is
 * parsed as it arrives (src/server/stream-body.ts), its lease drawn for the kept text of the
 * objects parsed so far, the rest of the body and the bytes in flight. So the Tailnet's limit
 * bounds only the transfer (a 74 MiB body holds about 12 MiB); the other kinds' limit stays capped
 * by what one request can draw (its reserve plus the shared pool).
 */
export function hookLimits(config: OperatorConfig, memory: MemoryLimit = containerMemory()): HookLimits {
  const h = config.hooks;
  // a derived budget never leaves a request less than 1 MiB beyond its reserve
  const budget = h.bodyBudgetBytes ?? Math.max(Math.floor(memory.bytes / 6), h.maxInFlight * RESERVE_BYTES + 2 ** 20);
  const oneRequest = budget - (h.maxInFlight - 1) * RESERVE_BYTES;
  return {
    maxInFlight: h.maxInFlight,
    bodyBudgetBytes: budget,
    bodyLimitBytes: Math.min(h.bodyLimitBytes, oneRequest),
    tailnetBodyLimitBytes: h.tailnetBodyLimitBytes,
    headersTimeoutMs: h.headersTimeoutMs,
    bodyTimeoutMs: h.bodyTimeoutMs,
    memory,
  };
}

/** 503: the bytes in flight are at the budget; Metacontroller retries the hook. */
export class OverloadedError extends Error {
  readonly statusCode = 503;
  readonly code = "TAILNET_OVERLOADED";
}

/**
 * The shared byte pool: every request has RESERVE_BYTES of its own (carved out of the budget
 * for all slots), and draws anything beyond it from the pool. A draw that does not fit fails at
 * once (no waiting: the caller answers 503 and Metacontroller retries), so memory is never
 * allocated beyond the budget.
 */
export class ByteBudget {
  private pool: number;
  constructor(
    readonly budget: number,
    slots: number,
  ) {
    this.pool = budget - slots * RESERVE_BYTES;
    if (this.pool < 0) throw new Error(`hook body budget ${budget} is below ${slots} slots × ${RESERVE_BYTES} bytes`);
  }

  /** A request's account: `take(n)` before allocating n bytes, `give(n)` after freeing; `close()` returns the rest. */
  lease(): Lease {
    let held = 0;
    let drawn = 0; // from the pool
    const settle = () => {
      const want = Math.max(0, held - RESERVE_BYTES);
      this.pool += drawn - want;
      drawn = want;
    };
    return {
      take: (n: number) => {
        const want = Math.max(0, held + n - RESERVE_BYTES);
        if (want - drawn > this.pool) return false;
        held += n;
        settle();
        return true;
      },
      give: (n: number) => {
        held = Math.max(0, held - n);
        settle();
      },
      close: () => {
        held = 0;
        settle();
      },
      get held() {
        return held;
      },
    };
  }

  /** Pool bytes free right now (tests and the overload message). */
  get free(): number {
    return this.pool;
  }
}

export interface Lease {
  take(n: number): boolean;
  give(n: number): void;
  close(): void;
  readonly held: number;
}
