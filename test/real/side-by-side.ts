/**
 * A fresh real Headscale and a fresh fake for one suite, side by side (test/real/headscale.test.ts,
 * policy-size.test.ts): both started in `before`, closed in `after`, with a dispatcher that trusts the real
 * one's test CA.
 */
import { after, before } from "node:test";
import { Agent } from "undici";
import { type FakeHeadscale, startFakeHeadscale } from "../fakes/headscale/index.js";
import { type bins, requireBins } from "./bins.js";
import { type HeadscaleOptions, type RealHeadscale, startHeadscale } from "./headscale.js";
import { TestNet } from "./net.js";

export interface SideBySide {
  net: TestNet;
  hs: RealHeadscale;
  fake: FakeHeadscale;
  dispatcher: Agent;
}

/** `started` gets the four once they run (assign them to the suite's own variables). */
export function sideBySide(
  id: string,
  opts: { bins: (keyof typeof bins)[]; headscale?: HeadscaleOptions },
  started: (s: SideBySide) => void,
): void {
  const s = {} as SideBySide;
  before(async () => {
    requireBins(opts.bins);
    s.net = await TestNet.create({ id });
    s.hs = await startHeadscale(s.net, opts.headscale);
    s.fake = await startFakeHeadscale({});
    s.dispatcher = new Agent({ connect: { ca: s.hs.caPem } });
    started(s);
  });
  after(async () => {
    await s.dispatcher?.close();
    await s.fake?.close();
    await s.hs?.close();
    await s.net?.close();
  });
}
