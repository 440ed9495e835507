/**
 * The repository needs nothing beside it: a user's clone sits in an empty folder, so no tracked file may
 * load or cite the development workspace next to the checkout (reference notes, Swagger copies, the policy
 * corpus). Upstream data comes from the published modules (test/helpers/upstream.ts); comments cite upstream
 * files by repository path. Our own `src/kinds/shared/` is the one `shared` folder a file may reach.
 */
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { existsSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { describe, test } from "node:test";
import { fileURLToPath } from "node:url";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
// Spelled in pieces so this file does not name what it forbids.
const SHARED = "shared";
const WORKSPACE_DIRS = ["headscale", "tailscale", "metacontroller", "seeds", "spec", "hooks"];
const UP_REF = new RegExp(`((?:\\.\\./)+)${SHARED}\\b`, "g");
const WORKSPACE_REF = new RegExp(`(?:^|[^\\w-])([\\w.]+/)?${SHARED}/(?:${WORKSPACE_DIRS.join("|")})\\b`, "g");

/** Every reference in `text` (of the file at repo path `file`) to a folder outside the repository. */
function outsideRefs(root: string, file: string, text: string): string[] {
  const found: string[] = [];
  for (const m of text.matchAll(UP_REF)) {
    const target = resolve(root, dirname(file), `${m[1]}${SHARED}`);
    const inside = !relative(root, target).startsWith("..") && existsSync(target) && statSync(target).isDirectory();
    if (!inside) found.push(`${file}:${lineOf(text, m.index)}: ${m[0]}`);
  }
  for (const m of text.matchAll(WORKSPACE_REF)) {
    if (m[1] === "kinds/") continue; // src/kinds/shared/: ours
    if (m[1] === "../") continue; // a relative reference: resolved above
    found.push(`${file}:${lineOf(text, m.index)}: ${m[0].trim()}`);
  }
  return found;
}

function lineOf(text: string, index: number): number {
  return text.slice(0, index).split("\n").length;
}

/** Tracked files and new ones not ignored: what a commit would hand to a clone. */
function repoFiles(): string[] {
  const out = execFileSync("git", ["ls-files", "-z", "--cached", "--others", "--exclude-standard"], {
    cwd: ROOT,
    encoding: "utf8",
  });
  return out.split("\0").filter((f) => f !== "" && existsSync(join(ROOT, f)) && statSync(join(ROOT, f)).isFile());
}

describe("the repository needs nothing beside it", () => {
  test("no file names a folder beside the checkout", () => {
    const files = repoFiles();
    assert.ok(files.length > 300 && files.includes("README.md"), `${files.length} files listed`);
    const found = files.flatMap((f) => {
      const bytes = readFileSync(join(ROOT, f));
      return bytes.includes(0) ? [] : outsideRefs(ROOT, f, bytes.toString("utf8"));
    });
    assert.deepEqual(found, []);
  });

  test("the check finds workspace references and lets our own shared folder pass", () => {
    const up = `../${SHARED}`;
    const bad: Array<[string, string]> = [
      ["README.md", `- \`${up}/spec/\` holds the contract`],
      ["src/headscale/client.ts", ` * shapes follow ${up}/headscale/headscale.swagger.json`],
      ["test/policy/corpus.test.ts", `new URL("../${up}/headscale/policies/", import.meta.url)`],
      ["test/kinds/composite/tailnet/x.test.ts", `// Real policies (${SHARED}/headscale/policies)`],
      ["docs/x.md", `see /work/${SHARED}/tailscale/NOTES.md`],
      ["scripts/x.sh", `cat "$root/../${SHARED}/seeds/a"`],
    ];
    for (const [file, text] of bad) assert.equal(outsideRefs(ROOT, file, text).length, 1, `${file}: ${text}`);
    const good: Array<[string, string]> = [
      ["src/kinds/composite/egress/act.ts", `import { ensureAuthKey } from "../${up}/authkey.js";`],
      ["src/kinds/composite/gateway/children.ts", ` * ../${up}/authkey.ts (authKeySecret)`],
      ["docs/x.md", `src/kinds/${SHARED}/workload.ts`],
      ["docs/x.md", `a ${SHARED} folder; juanfont/headscale hscontrol/policy/v2/testdata`],
    ];
    for (const [file, text] of good) assert.deepEqual(outsideRefs(ROOT, file, text), [], `${file}: ${text}`);
  });
});
