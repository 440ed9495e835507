/**
 * What the Tailnet's render keeps of its place among other clusters' sections (policy/sections.ts), for
 * compose.ts and isolate.ts: a leaf, so that the render imports nothing of what plans and acts on it (shared.ts).
 */
import type { SharedInput, SharedRender } from "../../../policy/sections.js";

/** The shared render and what recomposing it against a fresher live policy needs (act.ts). */
export interface SharedCandidate extends Omit<SharedRender, "merged"> {
  input: SharedInput;
}

/** Who this cluster is and what the live policy holds, for the shared render; see policy/sections.ts. */
export type SharedContext = Omit<SharedInput, "baseText" | "gen">;

/** Everything of the shared context a render reads but the clock: a new first appearance is stamped once, then kept. */
export function sharedKey(shared: SharedContext): unknown {
  const live = shared.live;
  return [
    shared.self,
    shared.names ?? null,
    live ? [live.marked, live.base?.line ?? null, live.sections.map((x) => x.line)] : null,
  ];
}

export function sharedCandidate(s: SharedRender, input: SharedInput): SharedCandidate {
  const { merged: _merged, ...rest } = s;
  return { ...rest, input };
}
