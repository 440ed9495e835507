/**
 * The versions docs/OPERATIONS.md claims are the ones src/real-versions.json pins and the real-world
 * suite runs: the default images, the tested Headscale, and the oldest supported tailscale, which the
 * pod runner maps to its own build (test/real/oldest.test.ts boots it).
 */
import assert from "node:assert/strict";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import versions from "../../src/real-versions.json" with { type: "json" };
import { bins, REPO } from "../real/bins.js";
import { mapImage } from "../real/pods.js";

const section = readFileSync(join(REPO, "docs", "OPERATIONS.md"), "utf8")
  .split("**Supported images.**")[1]
  ?.split("\n- **")[0];

describe("docs/OPERATIONS.md supported images follow src/real-versions.json", () => {
  it("names the pinned images, the tested Headscale and the oldest supported tailscale", () => {
    assert.ok(section, "the Supported images paragraph is there");
    assert.ok(section.includes(`\`tailscale/tailscale:${versions.tailscale}\``), section);
    assert.ok(section.includes(`\`coredns/coredns:${versions.coredns}\``), section);
    assert.ok(section.includes(`on ${versions.headscale.replace(/^v/, "")}`), section);
    assert.ok(section.includes(`${versions.tailscaleOldest} or newer`), section);
    assert.ok(section.includes(`**${versions.tailscaleOldest}**`), section);
    assert.ok(existsSync(join(REPO, "test", "real", "oldest.test.ts")), "the test the table cites exists");
  });

  it("the pod runner runs the oldest tailscale tag on its own binaries, the pin on the pinned ones, nothing else", () => {
    const oldest = mapImage(`tailscale/tailscale:${versions.tailscaleOldest}`, true);
    assert.equal(oldest.paths["/usr/local/bin/tailscaled"], bins.tailscaledOldest);
    assert.equal(oldest.paths["/usr/local/bin/containerboot"], bins.containerbootOldest);
    assert.match(bins.tailscaledOldest, new RegExp(`tailscale-${versions.tailscaleOldest}/tailscaled$`));
    const pinned = mapImage(`tailscale/tailscale:${versions.tailscale}`, true);
    assert.equal(pinned.paths["/usr/local/bin/tailscaled"], bins.tailscaled);
    assert.throws(() => mapImage("tailscale/tailscale:v1.80.0", true), /the real world runs tailscale\/tailscale:/);
  });
});
