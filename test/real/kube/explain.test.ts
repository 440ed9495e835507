/**
 * What a user learns from the real kube-apiserver before the operator ever runs (issue 33):
 * - `kubectl explain` prints a description for every field of every CRD, the text of
 *   docs/reference/fields.md (both come from src/api/schemas); the fields are enumerated with
 *   `kubectl explain --recursive`, and each object's FIELDS listing gives its children's descriptions.
 * - the CEL rules (src/api/cel.ts) refuse bad values at `kubectl apply` with their message: a prefix with
 *   host bits set, mutually exclusive fields, the ingress modes, the renewal window; the good twin of each
 *   is admitted, so the refusal is the rule's and nothing else's.
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { CRD_KINDS } from "../../../src/api/crd.js";
import type { Schema } from "../../../src/api/schemas.js";
import type { K8sObject } from "../../chart/helm.js";
import { apply, applyClean, ensureNamespace } from "./apply.js";
import { type Cluster, startCluster } from "./cluster.js";

let cluster: Cluster;
const NS = "explain";
const API = "tailnet.internal/v1alpha1";

/** Field paths under a kind as `kubectl explain --recursive` lists them (metadata's own fields left out). */
function recursiveFields(plural: string): string[] {
  const out = cluster.kubectl(["explain", plural, "--recursive"]);
  const lines = out.slice(out.indexOf("FIELDS:") + "FIELDS:".length).split("\n");
  const paths: string[] = [];
  const stack: string[] = [];
  for (const line of lines) {
    const m = /^( +)(\S+)\t</.exec(line);
    if (!m) continue;
    const depth = m[1].length / 2 - 1;
    stack.length = depth;
    stack.push(m[2]);
    if (stack[0] !== "metadata" || stack.length === 1) paths.push(stack.join("."));
  }
  return paths;
}

/** field name → its description in `kubectl explain <path>`'s FIELDS listing (whitespace collapsed). */
function childDescriptions(path: string): Map<string, string> {
  const out = cluster.kubectl(["explain", path]);
  const fields = out.slice(out.indexOf("FIELDS:") + "FIELDS:".length).split("\n");
  const described = new Map<string, string>();
  let current: string | undefined;
  for (const line of fields) {
    const m = /^ {2}(\S+)\t</.exec(line);
    if (m) {
      current = m[1];
      described.set(current, "");
    } else if (current && line.trim() && !line.trim().startsWith("enum:")) {
      described.set(current, `${described.get(current)} ${line.trim()}`.trim());
    }
  }
  return described;
}

/** The schema node at a dotted path below a kind's root (array items are transparent, as in explain). */
function schemaAt(root: Schema, path: string[]): Schema | undefined {
  let node: Schema | undefined = root;
  for (const key of path) {
    const inner: Schema = node?.type === "array" ? ((node.items ?? {}) as Schema) : (node ?? {});
    node = (inner.properties as Record<string, Schema> | undefined)?.[key];
  }
  return node;
}

const words = (s: string) => s.replace(/\s+/g, " ").trim();

describe("the CRDs on a real API server: explain and admission", { timeout: 600_000 }, () => {
  before(async () => {
    cluster = await startCluster();
    applyClean(cluster, cluster.kubectl(["kustomize", "manifests/crds"]));
    cluster.kubectl(["wait", "--for=condition=Established", "--timeout=60s", "crd", "--all"]);
    ensureNamespace(cluster, NS);
  });
  after(async () => {
    await cluster?.stop();
  });

  for (const info of CRD_KINDS) {
    it(`kubectl explain ${info.plural}: every field has the description the docs show`, () => {
      const paths = recursiveFields(info.plural);
      assert.ok(paths.includes("spec") && paths.length > 10, `${paths.length} fields listed`);
      const root = {
        type: "object",
        properties: {
          spec: info.spec,
          ...(info.status ? { status: info.status } : {}),
        },
      } as Schema;
      const parents = new Set(paths.map((p) => p.split(".").slice(0, -1).join(".")));
      const missing: string[] = [];
      let checked = 0;
      for (const parent of parents) {
        const described = childDescriptions(parent ? `${info.plural}.${parent}` : info.plural);
        for (const [name, text] of described) {
          const path = parent ? `${parent}.${name}` : name;
          if (!text || text === "<no description>") missing.push(path);
          checked++;
          const node = schemaAt(root, path.split("."));
          if (node?.description) {
            assert.ok(
              words(text).startsWith(words(String(node.description)).slice(0, 60)),
              `${info.kind} ${path}: explain says ${JSON.stringify(text.slice(0, 80))}`,
            );
          }
        }
      }
      assert.deepEqual(missing, [], `${info.kind}: ${missing.length} of ${checked} fields without a description`);
      assert.ok(checked >= paths.length, `${checked} descriptions checked for ${paths.length} fields`);
      const top = cluster.kubectl(["explain", info.plural]);
      assert.ok(words(top).includes(words(info.description).slice(0, 60)), `${info.kind}: the kind's description`);
    });
  }

  /** A refusal by the API server must carry the rule's message; its good twin must be admitted. */
  function refused(bad: K8sObject, good: K8sObject, message: RegExp): void {
    const r = apply(cluster, [bad], { dryRun: true });
    assert.notEqual(r.status, 0, `${bad.kind} ${bad.metadata.name} admitted: ${r.stdout}`);
    assert.match(r.stderr, message);
    const ok = apply(cluster, [good], { dryRun: true });
    assert.equal(ok.status, 0, ok.stderr);
  }
  const ref = { name: "home" };
  const object = (kind: string, name: string, spec: Record<string, unknown>, namespaced = true): K8sObject =>
    ({ apiVersion: API, kind, metadata: { name, ...(namespaced ? { namespace: NS } : {}) }, spec }) as K8sObject;

  it("a prefix with host bits set (192.168.10.1/24) is refused at apply, with the rule's message", () => {
    const site = (prefix: string) =>
      object("TailnetSite", "lan", { tailnetRef: ref, prefixes: [prefix], advertiserTags: ["tag:router"] });
    refused(
      site("192.168.10.1/24"),
      site("192.168.10.0/24"),
      /spec\.prefixes\[0\]: Invalid value: "192\.168\.10\.1\/24": must not have host bits set: write the network address/,
    );
    refused(site("10.0.0.0/33"), site("10.0.0.0/8"), /must be an IPv4 or IPv6 CIDR prefix/);
    refused(site("fd7a:115c::1/48"), site("fd7a:115c::/48"), /must not have host bits set/);
    const gateway = (route: string) => object("TailnetGateway", "gw", { tailnetRef: ref, routes: [route] });
    refused(gateway("0.0.0.0/0"), gateway("10.96.0.0/12"), /use spec\.exitNode/);
    refused(gateway("10.96.0.1/12"), gateway("10.96.0.0/12"), /must not have host bits set/);
    const tailnet = (reserved: string) =>
      object(
        "Tailnet",
        "home",
        {
          headscale: { url: "https://hs.example.com", apiKeySecretRef: { namespace: "tailnet-system", name: "hs" } },
          reservedNetworks: [reserved],
        },
        false,
      );
    refused(tailnet("10.244.0.1/16"), tailnet("10.244.0.0/16"), /spec\.reservedNetworks\[0\].*host bits/);
  });

  it("mutually exclusive fields are refused: a TailnetAuthKey with both tags and user, or neither", () => {
    const key = (extra: Record<string, unknown>) =>
      object("TailnetAuthKey", "ci", { tailnetRef: ref, secretName: "ci-key", ...extra });
    refused(
      key({ tags: ["tag:ci"], user: { name: "alice" } }),
      key({ tags: ["tag:ci"] }),
      /exactly one of spec\.tags and spec\.user/,
    );
    refused(key({}), key({ user: { name: "alice" } }), /exactly one of spec\.tags and spec\.user/);
    // durations, as CEL's duration() reads them
    const tagged = (extra: Record<string, unknown>) => key({ tags: ["tag:ci"], ...extra });
    refused(tagged({ expiry: "30s" }), tagged({ expiry: "1m" }), /spec\.expiry must be at least 1m/);
    refused(
      tagged({ expiry: "1h", renewBefore: "2h" }),
      tagged({ expiry: "1h", renewBefore: "20m" }),
      /spec\.renewBefore must be more than 0 and less than spec\.expiry/,
    );
  });

  it("the ingress modes: kube-api takes no backend, tcp needs one, http needs tls", () => {
    const ingress = (mode: string, expose: Record<string, unknown>) =>
      object("TailnetIngress", "web", { tailnetRef: ref, hostname: "web", mode, exposes: [{ name: "a", ...expose }] });
    const backend = { service: "web", port: 8080 };
    refused(ingress("kube-api", { port: 443, backend }), ingress("kube-api", { port: 443 }), /takes no backend/);
    refused(ingress("tcp", { port: 80 }), ingress("tcp", { port: 80, backend }), /every expose needs a backend/);
    refused(
      ingress("http", { backend }),
      ingress("http", { backend, tls: { secretName: "web-tls" } }),
      /needs tls \(the agent terminates TLS\)/,
    );
    // a certificate from a Secret or from a cert-manager issuer, never both; kube-api may serve HTTPS with one
    refused(
      ingress("http", { backend, tls: { secretName: "web-tls", issuerRef: { name: "ca", kind: "ClusterIssuer" } } }),
      ingress("http", { backend, tls: { issuerRef: { name: "ca", kind: "ClusterIssuer" } } }),
      /secretName or issuerRef, not both/,
    );
    refused(
      ingress("kube-api", { port: 443, tls: { issuerRef: { name: "ca", kind: "Secret" } } }),
      ingress("kube-api", { port: 443, tls: { issuerRef: { name: "ca", kind: "ClusterIssuer" } } }),
      /kind/,
    );
  });

  it("the API key renewal window: renewBeforeSeconds below expirationSeconds (with the defaults)", () => {
    const tailnet = (rotation: Record<string, unknown>) =>
      object(
        "Tailnet",
        "home",
        {
          headscale: {
            url: "https://hs.example.com",
            apiKeySecretRef: { namespace: "tailnet-system", name: "hs" },
            apiKeyRotation: { enabled: true, ...rotation },
          },
        },
        false,
      );
    refused(
      tailnet({ expirationSeconds: 86400 }),
      tailnet({ expirationSeconds: 86400, renewBeforeSeconds: 3600 }),
      /renewBeforeSeconds must be less than expirationSeconds/,
    );
  });
});
