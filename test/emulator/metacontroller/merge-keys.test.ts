/**
 * Every list any kind returns must merge correctly under Metacontroller's dynamic apply
 * (src/emulator/metacontroller/apply.ts): a list of maps whose guessed merge key (containerPort, port, mountPath,
 * name, …) has a value twice collapses on every update (issue 24: a TailnetGateway's DNS ports
 * 53/UDP and 53/TCP, refused by the API server). Children of an OnDelete type are never merged.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { fileURLToPath } from "node:url";
import { parse } from "yaml";
import { kindInfoByKind } from "../../../src/api/schemas.js";
import { detectListMapKey } from "../../../src/emulator/metacontroller/apply.js";
import { childTypes } from "../../../src/emulator/metacontroller/controllers.js";
import { typeKey } from "../../../src/k8s/objects.js";
import { exampleDirs, renderExample } from "../../../src/render/examples.js";

const root = fileURLToPath(new URL("../../../", import.meta.url));

/** Every list of maps in v whose guessed merge key repeats a value, as `path: key=value`. */
export function ambiguousLists(v: unknown, path = ""): string[] {
  if (Array.isArray(v)) {
    const out = v.flatMap((x, i) => ambiguousLists(x, `${path}[${i}]`));
    const key = detectListMapKey(v);
    if (!key) return out;
    const seen = new Set<string>();
    for (const item of v as Record<string, unknown>[]) {
      const k = String(item[key]);
      if (seen.has(k)) out.push(`${path}: ${key}=${k} twice`);
      seen.add(k);
    }
    return out;
  }
  if (v && typeof v === "object") {
    return Object.entries(v).flatMap(([k, x]) => ambiguousLists(x, `${path}.${k}`));
  }
  return [];
}

describe("every list a kind returns has an unambiguous merge key under dynamic apply", () => {
  it("the check finds the collapse of issue 24", () => {
    const ports = [
      { name: "dns", port: 53, protocol: "UDP" },
      { name: "dns-tcp", port: 53, protocol: "TCP" },
    ];
    assert.deepEqual(ambiguousLists({ spec: { ports } }), [".spec.ports: port=53 twice"]);
  });

  it("the check finds the collapse of http exposes that all carry port 443 (why an Ingress's attachment leaves it out)", () => {
    const exposes = [
      { name: "grafana", port: 443, backend: { service: "grafana", port: 3000 } },
      { name: "wiki", port: 443, backend: { service: "wiki", port: 8080 } },
    ];
    assert.deepEqual(ambiguousLists({ spec: { exposes } }), [".spec.exposes: port=443 twice"]);
    assert.deepEqual(ambiguousLists({ spec: { exposes: exposes.map(({ port, ...e }) => e) } }), []);
  });

  for (const dir of exampleDirs(root)) {
    it(dir.slice(root.length), async () => {
      const { output } = await renderExample(dir);
      const parsed = parse(output.replace(/^# .*\n/, "")) as {
        objects: { kind: string; children?: { apiVersion: string; kind: string; metadata: { name: string } }[] }[];
      };
      const found: string[] = [];
      let checked = 0;
      for (const o of parsed.objects) {
        const info = kindInfoByKind(o.kind);
        // an annotated Service's or an Ingress's attachments come from a DecoratorController (InPlace)
        if (!info && o.kind !== "Service" && o.kind !== "Ingress") continue;
        const types = info ? childTypes(info.hookKind) : [];
        for (const c of o.children ?? []) {
          const method = types.find((t) => t.type === typeKey(c.apiVersion, c.kind))?.method;
          if (method === "OnDelete") continue;
          checked++;
          for (const a of ambiguousLists(c)) found.push(`${o.kind} → ${c.kind} ${c.metadata.name}${a}`);
        }
      }
      assert.ok(checked > 0, "the example renders children");
      assert.deepEqual(found, []);
    });
  }
});
