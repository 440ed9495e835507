// The Tailnet settings every workload reads: no agent key outlives spec.maxAuthKeyLifetime (issue 31).
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { tailnetSettings } from "../../../src/kinds/shared/workload.js";
import { parentObject } from "../../fixtures/hooks.js";

const settings = (spec: Record<string, unknown>) =>
  tailnetSettings(parentObject("Tailnet", "home", { headscale: { url: "https://hs.example.com" }, ...spec }));

describe("tailnetSettings: key lifetimes", () => {
  it("agent keys live min(authKeyTTL, maxAuthKeyLifetime); the bound defaults to 720h", () => {
    assert.equal(settings({}).authKeyTTLSeconds, 24 * 3600);
    assert.equal(settings({}).maxAuthKeyLifetimeSeconds, 720 * 3600);
    assert.equal(settings({}).maxAuthKeyLifetime, "720h");
    assert.equal(settings({ authKeyTTL: "8760h" }).authKeyTTLSeconds, 720 * 3600);
    assert.equal(settings({ authKeyTTL: "48h", maxAuthKeyLifetime: "12h" }).authKeyTTLSeconds, 12 * 3600);
    assert.equal(settings({ authKeyTTL: "1h", maxAuthKeyLifetime: "12h" }).authKeyTTLSeconds, 3600);
  });
});
