/**
 * The operator validates each parent's spec at hook time with the JSON Schema its CRD carries (ajv,
 * src/api/validate.ts), so a spec the API server admitted is never refused by the operator with a
 * different verdict. This checks both verdicts agree on a real kube-apiserver: every leaf of every
 * example's spec is replaced by values at and past the usual limits (empty, upper case, too long,
 * bad CIDR/duration/tag, out-of-range and fractional numbers), and every member is deleted in turn; the
 * server's answer (strict server-side apply, dry run) is compared with ajv's for each. Ajv runs the CRDs'
 * CEL rules through their TypeScript twins (src/api/cel.ts), so this is also where twin and rule must agree.
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { newAjv } from "../../../src/api/ajv.js";
import { CRD_KINDS } from "../../../src/api/crd.js";
import type { K8sObject } from "../../chart/helm.js";
import { apply, applyClean, documentedObjects, ensureNamespace, examples } from "./apply.js";
import { type Cluster, startCluster } from "./cluster.js";

let cluster: Cluster;
const NS = "cases";
// host bits, a default route, a duration under a minute and one past what Go (and so CEL) can hold
const STRINGS = [
  "",
  "UPPER",
  "a".repeat(254),
  "tag:Bad",
  "10.0.0.0/33",
  "10.0.0.1/8",
  "1d",
  "x y",
  "-x",
  "::/0",
].concat(["59s", "2562048h", "fd7a::1/48"]);
const NUMBERS = [-1, 0, 65535, 65536, 2147483648, 1.5];

type Json = unknown;
/** Every path to a string or number leaf of v. */
function leaves(v: Json, path: (string | number)[] = []): (string | number)[][] {
  if (Array.isArray(v)) return v.flatMap((x, i) => leaves(x, [...path, i]));
  if (v && typeof v === "object") return Object.entries(v).flatMap(([k, x]) => leaves(x, [...path, k]));
  return typeof v === "string" || typeof v === "number" ? [path] : [];
}
/** Every path to an object member of v (what a deletion can test: required fields, the CEL rules' has()). */
function members(v: Json, path: (string | number)[] = []): (string | number)[][] {
  if (Array.isArray(v)) return v.flatMap((x, i) => members(x, [...path, i]));
  if (v && typeof v === "object")
    return Object.entries(v).flatMap(([k, x]) => [[...path, k], ...members(x, [...path, k])]);
  return [];
}
function without(v: Json, path: (string | number)[]): Json {
  const copy = (Array.isArray(v) ? [...v] : { ...(v as object) }) as Record<string | number, Json>;
  if (path.length === 1) delete copy[path[0]];
  else copy[path[0]] = without(copy[path[0]], path.slice(1));
  return copy;
}
function withLeaf(v: Json, path: (string | number)[], value: Json): Json {
  if (!path.length) return value;
  const copy = (Array.isArray(v) ? [...v] : { ...(v as object) }) as Record<string | number, Json>;
  copy[path[0]] = withLeaf(copy[path[0]], path.slice(1), value);
  return copy;
}

describe("spec validation: the operator (ajv) and the real API server agree", { timeout: 300_000 }, () => {
  before(async () => {
    cluster = await startCluster();
    applyClean(cluster, cluster.kubectl(["kustomize", "manifests/crds"]));
    cluster.kubectl(["wait", "--for=condition=Established", "--timeout=60s", "crd", "--all"]);
    ensureNamespace(cluster, NS);
  });
  after(async () => {
    await cluster?.stop();
  });

  const ajv = newAjv({ allErrors: false, strict: false });
  const samples = new Map<string, K8sObject>();
  const objects = [...examples().flatMap((e) => e.inputs), ...documentedObjects().map((d) => d.object)];
  for (const o of objects)
    if (o.apiVersion.startsWith("tailnet.internal/") && !samples.has(o.kind)) samples.set(o.kind, o);

  for (const info of CRD_KINDS) {
    it(`${info.kind}: every mutated spec gets the same verdict from both`, () => {
      const sample = samples.get(info.kind);
      assert.ok(sample, `an example has a ${info.kind}`);
      const validate = ajv.compile(info.spec);
      const cases: { name: string; path: string; value: Json; ours: boolean; object: K8sObject }[] = [];
      for (const path of leaves(sample.spec)) {
        const original = path.reduce<Json>((v, k) => (v as Record<string | number, Json>)[k], sample.spec);
        for (const value of typeof original === "number" ? NUMBERS : STRINGS) {
          const spec = withLeaf(sample.spec, path, value);
          const name = `case-${cases.length}`;
          const namespaced = info.scope === "Namespaced";
          const metadata = namespaced ? { name, namespace: NS } : { name };
          const object = { apiVersion: sample.apiVersion, kind: sample.kind, metadata, spec } as K8sObject;
          cases.push({ name, path: path.join("."), value, ours: validate(spec) === true, object });
        }
      }
      // each member deleted in turn: a required field, or one a CEL rule asks has() of (tags XOR user, an
      // expose's backend or tls in its mode)
      for (const path of members(sample.spec)) {
        const spec = without(sample.spec, path);
        const name = `case-${cases.length}`;
        const metadata = info.scope === "Namespaced" ? { name, namespace: NS } : { name };
        const object = { apiVersion: sample.apiVersion, kind: sample.kind, metadata, spec } as K8sObject;
        cases.push({
          name,
          path: `${path.join(".")} (deleted)`,
          value: undefined,
          ours: validate(spec) === true,
          object,
        });
      }
      assert.ok(cases.length > 0);
      const r = apply(
        cluster,
        cases.map((c) => c.object),
        { dryRun: true },
      );
      const admitted = new Set([...r.stdout.matchAll(/\/(case-\d+) serverside-applied/g)].map((m) => m[1]));
      const differ = cases
        .filter((c) => c.ours !== admitted.has(c.name))
        .map(
          (c) =>
            `spec.${c.path} = ${JSON.stringify(c.value)}: server ${admitted.has(c.name) ? "admits" : "refuses"}, ajv ${c.ours ? "admits" : "refuses"}`,
        );
      // Both verdicts occur, so the comparison is not vacuous (e.g. nothing parsed from kubectl).
      assert.ok(admitted.size > 0 && admitted.size < cases.length, `${admitted.size} of ${cases.length} admitted`);
      assert.deepEqual(differ, [], `${differ.length} of ${cases.length} verdicts differ:\n${r.stderr.slice(0, 3000)}`);
    });
  }
});
