/** Every `tailnet-operator render …` / `headscale snapshot …` the docs show uses flags the CLI accepts. */
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import { parseCommand } from "../../src/args.js";
import { SNAPSHOT } from "../../src/render/fetch-snapshot.js";
import { RENDER } from "../../src/render/main.js";

const root = new URL("../../", import.meta.url).pathname;
const pages = [
  "README.md",
  ...readdirSync(join(root, "docs"))
    .filter((f) => f.endsWith(".md"))
    .map((f) => `docs/${f}`),
];

function invocations(): { page: string; args: string[]; cmd: typeof RENDER }[] {
  const out: { page: string; args: string[]; cmd: typeof RENDER }[] = [];
  for (const page of pages) {
    // Join shell continuations, then read each command up to a backtick, pipe, redirect or end of line.
    const text = readFileSync(join(root, page), "utf8")
      .replace(/\\\n\s*/g, " ")
      .replace(/<[^<>\n]+>/g, "PLACEHOLDER");
    for (const m of text.matchAll(/tailnet-operator (render|headscale snapshot)((?: [^`|>\n]*)?)/g)) {
      const args = m[2]
        .trim()
        .split(/\s+/)
        .filter((a) => a && a !== "…" && a !== "...");
      out.push({ page, args, cmd: m[1] === "render" ? RENDER : SNAPSHOT });
    }
  }
  return out;
}

describe("commands in the docs", () => {
  it("parse with the CLI's own option tables", () => {
    const found = invocations();
    assert.ok(found.filter((f) => f.cmd === RENDER).length >= 5, `${found.length} invocations`);
    for (const { page, args, cmd } of found) {
      // A bare mention (`tailnet-operator render`) has no flags to check.
      assert.doesNotThrow(() => parseCommand(cmd, args), `${page}: tailnet-operator ${cmd.name} ${args.join(" ")}`);
    }
  });
});
