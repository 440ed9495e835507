/**
 * The upstream loader: captures become the records the policy tests use whatever form `full_policy` takes
 * and wherever `input` ends, a broken capture is an error naming the file, and a machine without Go gets
 * one line saying what to install instead of a bare ENOENT.
 */
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { after, describe, test } from "node:test";
import { fileURLToPath } from "node:url";
import { captureRecord, goModuleDir, HEADSCALE_MODULE, headscalePin } from "./upstream.js";

const POLICY = { acls: [{ action: "accept", src: ["*"], dst: ["*:*"] }], tagOwners: { "tag:b": [], "tag:a": [] } };

function capture(input: Record<string, unknown>, tail = ""): string {
  const head = `// acl-x01\n//\n// acl x01\n{\n\t"schema_version": 1,\n\t"test_id": "acl-x01",\n\t"description": "acl x01",\n\t"category": "acl",\n`;
  return `${head}\t"input": ${JSON.stringify(input, null, "\t")},\n\t"captures": {${tail}},\n}\n`;
}

describe("captureRecord", () => {
  const dir = mkdtempSync(join(tmpdir(), "upstream-"));
  const file = (name: string, text: string) => {
    const path = join(dir, name);
    writeFileSync(path, text);
    return path;
  };
  after(() => rmSync(dir, { recursive: true, force: true }));

  test("a policy stored as a JSON string is decoded, keys in the captured order", () => {
    const rec = captureRecord(
      file("a.hujson", capture({ full_policy: JSON.stringify(POLICY), api_response_code: 200 })),
      "acl",
    );
    assert.deepEqual(rec, {
      id: "acl-x01",
      category: "acl",
      description: "acl x01",
      policy: POLICY,
      accepted: true,
      message: null,
    });
    assert.deepEqual(Object.keys(rec.policy.tagOwners as object), ["tag:b", "tag:a"]);
  });

  test("a rejection keeps the server's message; a policy stored as an object is taken as is", () => {
    const path = file(
      "b.hujson",
      capture({
        api_response_code: 400,
        api_response_body: { message: 'src=tag not found: "tag:x"' },
        full_policy: POLICY,
      }),
    );
    const rec = captureRecord(path, "acl");
    assert.deepEqual([rec.accepted, rec.message, rec.policy], [false, 'src=tag not found: "tag:x"', POLICY]);
  });

  test("an input past the first read and megabytes of captures after it", () => {
    const big = {
      ...POLICY,
      hosts: Object.fromEntries(Array.from({ length: 3000 }, (_, i) => [`h${i}`, `10.0.${i % 250}.1`])),
    };
    const tail = `"n": "${"x".repeat(2_000_000)}"`;
    const rec = captureRecord(file("c.hujson", capture({ api_response_code: 200, full_policy: big }, tail)), "acl");
    assert.deepEqual(rec.policy, big);
  });

  const broken: Array<[string, string, RegExp]> = [
    ["no input", `{"test_id": "acl-x01", "category": "acl"}`, /no input/],
    [
      "another category",
      capture({ api_response_code: 200, full_policy: POLICY }).replace('"acl",', '"ssh",'),
      /category ssh/,
    ],
    ["a policy that is a list", capture({ api_response_code: 200, full_policy: "[1]" }), /not an object/],
    [
      "a rejection without message",
      capture({ api_response_code: 400, full_policy: POLICY }),
      /without api_response_body/,
    ],
    ["an unknown status", capture({ api_response_code: 500, full_policy: POLICY }), /api_response_code 500/],
    ["not HuJSON", `{"test_id": "acl-x01", "input": {"full_policy": ]}`, /not HuJSON/],
  ];
  for (const [name, text, want] of broken) {
    test(`refuses ${name}, naming the file`, () => {
      const path = file(`${name.replaceAll(" ", "-")}.hujson`, text);
      assert.throws(
        () => captureRecord(path, "acl"),
        (e: Error) => want.test(e.message) && e.message.startsWith(path),
      );
    });
  }
});

describe("goModuleDir", () => {
  test("the pin's module is in the Go module cache", () => {
    assert.match(goModuleDir(HEADSCALE_MODULE, headscalePin()), /github\.com\/juanfont\/headscale@v\d+\.\d+\.\d+$/);
  });

  test("without Go on PATH: one line saying what to install", () => {
    const helper = fileURLToPath(new URL("./upstream.ts", import.meta.url));
    const script = `import(${JSON.stringify(helper)}).then((m) => m.goModuleDir("example.com/none", "v0.0.1")).catch((e) => console.log(e.message))`;
    const out = execFileSync(process.execPath, ["--import", "tsx", "-e", script], {
      env: { PATH: dirname(process.execPath), HOME: tmpdir() },
      cwd: fileURLToPath(new URL("../../", import.meta.url)),
      encoding: "utf8",
    });
    assert.match(
      out.trim(),
      /^Go is missing: the tests read example\.com\/none@v0\.0\.1 from the Go module cache; install Go >= 1\.26/,
    );
    assert.equal(out.trim().split("\n").length, 1);
  });
});
