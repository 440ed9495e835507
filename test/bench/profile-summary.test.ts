// bench/profile-summary.ts: self and inclusive time per frame from a CPU profile, idle left out, by window.
import assert from "node:assert/strict";
import test from "node:test";
import { summarizeProfile } from "../../bench/profile-summary.js";

const frame = (id: number, functionName: string, children: number[] = []) => ({
  id,
  callFrame: { functionName, url: `file:///app/dist/kinds/${functionName}.js`, lineNumber: id },
  children,
});

test("self time goes to the sampled frame, inclusive time to it and every caller once; idle is not busy", () => {
  const profile = {
    nodes: [frame(1, "(root)", [2, 4]), frame(2, "sync", [3]), frame(3, "decide"), frame(4, "(idle)")],
    // each sample's time is the delta to the next sample
    samples: [3, 3, 2, 4, 3],
    timeDeltas: [0, 1000, 1000, 1000, 1000],
  };
  const s = summarizeProfile(profile);
  assert.equal(s.busyMs, 3, "decide 2 ms + sync 1 ms; the idle sample and the last sample's zero gap add nothing");
  assert.deepEqual(
    s.self.map((f) => [f.frame, f.ms]),
    [
      ["decide dist/kinds/decide.js:3", 2],
      ["sync dist/kinds/sync.js:2", 1],
    ],
  );
  const inclusive = new Map(s.inclusive.map((f) => [f.frame.split(" ")[0], f.ms]));
  assert.deepEqual([...inclusive].sort(), [
    ["(root)", 3],
    ["decide", 2],
    ["sync", 3],
  ]);
  const late = summarizeProfile(profile, 0.6, 1);
  assert.deepEqual(
    late.self.map((f) => f.frame.split(" ")[0]),
    ["decide"],
    "only the samples in the window count",
  );
});
