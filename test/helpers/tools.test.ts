import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { execTool, missingToolMessage, toolPackages } from "./tools.js";

describe("missing system tools name their package", () => {
  it("every tool the tests run is mapped to a package", () => {
    const pkgs = toolPackages();
    for (const cmd of ["promtool", "named-checkzone", "haproxy", "socat", "openssl"]) assert.ok(pkgs[cmd], cmd);
    assert.equal(pkgs["named-checkzone"], "bind9utils");
    assert.equal(pkgs.promtool, "prometheus");
  });
  it("a missing command is one line naming the package", () => {
    assert.equal(
      missingToolMessage("named-checkzone"),
      "named-checkzone is not installed: install the Debian/Ubuntu package bind9utils (apt-get install bind9utils), or run bash scripts/ci-deps.sh",
    );
    assert.throws(() => execTool("no-such-tool-h6", [], { encoding: "utf8" }), {
      message:
        "no-such-tool-h6 is not installed (and scripts/ci-deps.sh does not list it: add it there with its package)",
    });
  });
});
