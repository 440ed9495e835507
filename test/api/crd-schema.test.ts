/**
 * What `kubectl explain` and admission get from the CRDs (issue 33): a description on every field of every
 * CRD, the same text docs/reference/fields.md shows; CEL rules where the API server can judge by itself,
 * each with a TypeScript twin the hook-time validation runs, and bounded inputs so the rules' cost estimate
 * stays within the API server's limits. test/real/kube/explain.test.ts checks the same on the real server.
 */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { describe, it } from "node:test";
import { newAjv } from "../../src/api/ajv.js";
import { type CelRule, twinOf } from "../../src/api/cel.js";
import { allCrds, CRD_KINDS } from "../../src/api/crd.js";
import { validateSpec } from "../../src/api/validate.js";

type Node = Record<string, unknown>;
const root = new URL("../../", import.meta.url);

/** Every property of a schema as [path, node], depth first (array items as `field[]`). */
function properties(node: Node, path: string, out: [string, Node][] = []): [string, Node][] {
  const inner = node.type === "array" ? ((node.items ?? {}) as Node) : node;
  const prefix = node.type === "array" ? `${path}[]` : path;
  for (const [k, v] of Object.entries((inner.properties ?? {}) as Record<string, Node>)) {
    out.push([`${prefix}.${k}`, v]);
    properties(v, `${prefix}.${k}`, out);
  }
  return out;
}

/** Every schema node carrying CEL rules, with its path. */
function ruled(node: Node, path: string, out: [string, Node][] = []): [string, Node][] {
  if (node["x-kubernetes-validations"]) out.push([path, node]);
  if (node.items) ruled(node.items as Node, `${path}[]`, out);
  for (const [k, v] of Object.entries((node.properties ?? {}) as Record<string, Node>)) ruled(v, `${path}.${k}`, out);
  return out;
}

const schemaOf = (crd: Record<string, unknown>) =>
  (crd as { spec: { versions: { schema: { openAPIV3Schema: Node } }[] } }).spec.versions[0].schema.openAPIV3Schema;

describe("CRD schemas: descriptions everywhere, CEL rules with twins", () => {
  it("every field of every CRD has a description (what kubectl explain prints)", () => {
    const missing: string[] = [];
    let fields = 0;
    for (const crd of allCrds()) {
      const kind = (crd.spec as { names: { kind: string } }).names.kind;
      const top = schemaOf(crd);
      if (!top.description) missing.push(kind);
      for (const [path, node] of properties(top, kind)) {
        // the API server allows nothing but `type` on metadata and explains it with ObjectMeta's own text
        if (path === `${kind}.metadata`) continue;
        fields++;
        if (typeof node.description !== "string" || node.description.length < 8) missing.push(path);
      }
    }
    assert.deepEqual(missing, [], `${missing.length} fields without a description`);
    // and metadata carries nothing but its type: the API server refuses a CRD that says more of it
    for (const crd of allCrds())
      assert.deepEqual(schemaOf(crd).properties, {
        ...(schemaOf(crd).properties as object),
        metadata: { type: "object" },
      });
    assert.ok(fields > 300, `${fields} fields walked`);
  });

  it("docs/reference/fields.md shows each field's description (the same source as the CRDs)", () => {
    const page = readFileSync(new URL("docs/reference/fields.md", root), "utf8");
    const sections = new Map(page.split("\n## ").map((s) => [s.slice(0, s.indexOf("\n")), s]));
    for (const info of CRD_KINDS) {
      const section = sections.get(info.kind) ?? "";
      assert.ok(section.includes(info.description), `${info.kind}'s description`);
      const all = [...properties(info.spec, "spec"), ...(info.status ? properties(info.status, "status") : [])];
      for (const [path, node] of all) {
        const row = section.split("\n").find((l) => l.startsWith(`| \`${path}\` |`));
        assert.ok(row, `${info.kind} ${path} has a row`);
        const text = String(node.description).replace(/\.$/, "").replaceAll("|", "\\|");
        assert.ok(row.includes(text), `${info.kind} ${path}: the row carries the description`);
      }
    }
  });

  it("CEL rules where the API server can judge: CIDR syntax and host bits, exclusive fields, mode rules", () => {
    const byKind = new Map(
      allCrds().map((c) => [
        (c.spec as { names: { kind: string } }).names.kind,
        ruled(schemaOf(c), "").map(([p, n]) => `${p}: ${(n["x-kubernetes-validations"] as CelRule[]).length}`),
      ]),
    );
    assert.deepEqual(byKind.get("TailnetSite"), [".spec.prefixes[]: 2"]);
    assert.deepEqual(byKind.get("TailnetGateway"), [".spec.routes[]: 3"]);
    assert.deepEqual(byKind.get("Tailnet"), [".spec.headscale.apiKeyRotation: 1", ".spec.reservedNetworks[]: 2"]);
    assert.deepEqual(byKind.get("TailnetAuthKey"), [".spec: 3"]);
    assert.deepEqual(byKind.get("TailnetIngress"), [
      ".spec: 5",
      ".spec.exposes[].paths[]: 1",
      ".spec.exposes[].tls: 1",
    ]);
  });

  it("every rule has a twin, and every string or list a rule reads is bounded (the API server's cost estimate)", () => {
    for (const crd of allCrds()) {
      for (const [path, node] of ruled(schemaOf(crd), "")) {
        for (const r of node["x-kubernetes-validations"] as CelRule[]) {
          assert.equal(typeof twinOf(r.rule), "function", `${path}: ${r.rule}`);
          assert.ok(r.message.length > 10, `${path}: a message`);
        }
        if (node.type === "string") assert.ok(Number(node.maxLength) <= 64, `${path}: maxLength`);
        const read = new Set(
          (node["x-kubernetes-validations"] as CelRule[]).flatMap((r) =>
            [...r.rule.matchAll(/\.(\w+)/g)].map((m) => m[1]),
          ),
        );
        for (const [p, child] of properties(node, path)) {
          const key = p.slice(p.lastIndexOf(".") + 1);
          if (child.type === "array" && read.has(key)) assert.ok(Number(child.maxItems) > 0, `${p}: maxItems`);
        }
      }
    }
    // a rule nobody wrote a twin for is refused when a schema compiles
    assert.throws(
      () => newAjv().compile({ type: "string", "x-kubernetes-validations": [{ rule: "self != ''", message: "x" }] }),
      /without a TypeScript twin/,
    );
  });

  it("the twins judge CIDRs as the kube-apiserver's CEL library does (Go's netip.ParsePrefix)", () => {
    const site = (prefix: string) =>
      validateSpec("site", { tailnetRef: { name: "home" }, prefixes: [prefix], advertiserTags: ["tag:r"] });
    const cases: [string, RegExp | undefined][] = [
      ["192.168.10.0/24", undefined],
      ["fd7a:115c:a1e0::/48", undefined],
      ["0.0.0.0/0", undefined],
      [
        "192.168.10.1/24",
        /^spec\.prefixes\[0\]: 192\.168\.10\.1\/24 has non-address bits set; expected 192\.168\.10\.0\/24$/,
      ],
      ["fd7a:115c:a1e0::1/48", /expected fd7a:115c:a1e0::\/48$/],
      ["10.0.0.0/33", /bits must be 0\.\.32/],
      ["010.0.0.0/8", /bad address/],
      ["10.0.0.0/08", /bits must be/],
      ["::ffff:10.0.0.0/104", /must be an IPv4 or IPv6 CIDR/],
      ["256.0.0.0/8", /bad address/],
    ];
    for (const [prefix, expected] of cases) {
      const got = site(prefix);
      if (expected) assert.match(got ?? "", expected, prefix);
      else assert.equal(got, undefined, prefix);
    }
    assert.match(
      validateSpec("gateway", { tailnetRef: { name: "home" }, routes: ["0.0.0.0/0"] }) ?? "",
      /^spec\.routes\[0\]: a default route .* use spec\.exitNode$/,
    );
  });

  it("mutually exclusive fields and the ingress modes, refused with the field and the rule's message", () => {
    const ref = { name: "home" };
    assert.equal(
      validateSpec("authkey", { tailnetRef: ref, secretName: "k", tags: ["tag:a"], user: { name: "u" } }),
      "spec: exactly one of spec.tags and spec.user",
    );
    assert.equal(
      validateSpec("authkey", { tailnetRef: ref, secretName: "k" }),
      "spec: exactly one of spec.tags and spec.user",
    );
    assert.equal(validateSpec("authkey", { tailnetRef: ref, secretName: "k", tags: ["tag:a"] }), undefined);
    // durations as CEL's duration() reads them (Go's time.ParseDuration): the twins name the field
    const key = (extra: Record<string, unknown>) =>
      validateSpec("authkey", { tailnetRef: ref, secretName: "k", tags: ["tag:a"], ...extra });
    assert.equal(key({ expiry: "59s" }), "spec.expiry: must be at least 60s");
    assert.equal(key({ expiry: "0.5h", renewBefore: "10m" }), undefined);
    assert.equal(
      key({ expiry: "1h", renewBefore: "1h" }),
      "spec.renewBefore: must be more than 0 and less than spec.expiry",
    );
    assert.equal(key({ renewBefore: "169h" }), "spec.renewBefore: must be more than 0 and less than spec.expiry");
    assert.equal(key({ renewBefore: "0s" }), "spec.renewBefore: must be more than 0 and less than spec.expiry");
    assert.match(
      key({ expiry: "2562048h" }) ?? "",
      /^spec\.expiry: is longer than a duration can be/,
      "past 2^63-1 ns",
    );
    assert.equal(key({ expiry: "2562047h" }), undefined);
    const ingress = (mode: string | undefined, expose: Record<string, unknown>) =>
      validateSpec("ingress", {
        tailnetRef: ref,
        hostname: "h",
        ...(mode ? { mode } : {}),
        exposes: [{ name: "a", ...expose }],
      });
    const backend = { service: "web", port: 80 };
    assert.equal(ingress(undefined, { port: 80, backend }), undefined);
    // the twins name the expose, as the operator's own checks did before the rules
    assert.equal(ingress(undefined, { backend }), "spec.exposes[0].port: required in mode tcp");
    assert.equal(ingress("tcp", { port: 80 }), "spec.exposes[0].backend: required in mode tcp");
    assert.equal(ingress("http", { backend, tls: { secretName: "t" } }), undefined);
    assert.equal(
      ingress("http", { backend }),
      "spec.exposes[0].tls: required in mode http (secretName, issuerRef, or {} for the Tailnet's spec.certificates.issuerRef)",
    );
    // cert-manager: an issuerRef, or {} for the Tailnet's default; never a Secret and an issuer at once
    assert.equal(ingress("http", { backend, tls: { issuerRef: { name: "ca" } } }), undefined);
    assert.equal(ingress("http", { backend, tls: {} }), undefined);
    assert.match(
      ingress("http", { backend, tls: { secretName: "t", issuerRef: { name: "ca" } } }) ?? "",
      /^spec\.exposes\[0\]\.tls: secretName or issuerRef, not both/,
    );
    assert.match(
      ingress("http", { backend, tls: { issuerRef: { name: "ca", kind: "Certificate" } } }) ?? "",
      /^spec\.exposes\[0\]\.tls\.issuerRef\.kind/,
    );
    assert.equal(ingress("kube-api", { port: 443 }), undefined);
    // kube-api serves HTTPS when it has a certificate
    assert.equal(
      ingress("kube-api", { port: 443, tls: { issuerRef: { name: "ca", kind: "ClusterIssuer" } } }),
      undefined,
    );
    assert.match(
      ingress("kube-api", { port: 443, backend }) ?? "",
      /^spec\.exposes\[0\]\.backend: not allowed in mode kube-api/,
    );
    assert.match(ingress("kube-api", { port: 443, aliases: ["x"] }) ?? "", /^spec\.exposes\[0\]\.aliases: not allowed/);
    const rotation = (r: Record<string, unknown>) =>
      validateSpec("tailnet", {
        headscale: { url: "http://hs", apiKeySecretRef: { namespace: "a", name: "b" }, apiKeyRotation: r },
      });
    assert.equal(rotation({ enabled: true }), undefined);
    assert.match(rotation({ renewBeforeSeconds: 7776000 }) ?? "", /^spec\.headscale\.apiKeyRotation: renewBefore/);
  });
});
