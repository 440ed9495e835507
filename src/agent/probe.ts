// Reachability probes: a plain TCP dial (through SOCKS5 for egress targets) to every port of every target,
// and to every expose's backend, closed as soon as it connects. Results feed /status; they never touch the
// data path.

import type { ProbeResult } from "../contract/agent-status.js";
import { DialError, type Dialer } from "./dial.js";

export interface ProbeSpec {
  /** Target or expose name (the /status entry). */
  name: string;
  /** One dialer per port; all must connect for the entry to be reachable. */
  dials: Dialer[];
}

/** Dials every port of one entry in parallel; the first failure (in port order) is the error. */
export async function probeOnce(spec: ProbeSpec): Promise<ProbeResult> {
  const outcomes = await Promise.all(
    spec.dials.map(async (dial) => {
      try {
        const socket = await dial();
        socket.destroy();
        return "";
      } catch (err) {
        return err instanceof DialError ? err.message : `dial failed: ${(err as Error).message}`;
      }
    }),
  );
  const error = outcomes.find((outcome) => outcome !== "") ?? "";
  return { reachable: error === "", error };
}

/** Probes every entry; results keyed by name. */
export async function probeAll(specs: readonly ProbeSpec[]): Promise<Map<string, ProbeResult>> {
  const results = await Promise.all(specs.map(async (spec) => [spec.name, await probeOnce(spec)] as const));
  return new Map(results);
}
