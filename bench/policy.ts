// Policy rendering speed: collectGenerated + mergePolicy (merge, canonical form,
// hash) from N workload objects over a realistic base policy. Target: 5,000 objects
// in ≤ 100 ms. Run alone with `npx tsx bench/policy.ts`; bench/run.ts calls
// benchPolicy().

import { pathToFileURL } from "node:url";
import { collectGenerated } from "../src/policy/generated.js";
import type { CollectInput } from "../src/policy/generated-types.js";
import { mergePolicy } from "../src/policy/merge.js";
import { medianMs } from "./measure.js";

const SIZES = [1_000, 5_000, 10_000];
const RUNS = 5;

function ipOf(i: number): string {
  return `100.${64 + ((i >> 16) & 63)}.${(i >> 8) & 255}.${i & 255}`;
}

/** N objects: 40% egress (2 targets: a node name, a MagicDNS FQDN or an IP), 30% ingress, 20% sites, 10% gateways. */
export function syntheticInput(objects: number): CollectInput {
  const input: CollectInput = {
    tagOwners: ["group:platform"],
    allowedEgressTargets: ["100.64.0.0/10", "192.168.0.0/16", "tag:db"],
    egresses: [],
    ingresses: [],
    sites: [],
    gateways: [],
    nodes: [],
    baseDomain: "ts.example.com",
  };
  for (let i = 0; i < objects; i++) {
    input.nodes.push({
      givenName: `node-${i}`,
      name: `host-${i}`,
      ipAddresses: [ipOf(i)],
      tags: i % 7 ? [] : ["tag:db"],
    });
  }
  for (let i = 0; i < objects; i++) {
    const namespace = `ns-${i % 50}`;
    const name = `obj-${i}`;
    const tag = `tag:k8s-${namespace}-${name}`;
    const kind = i % 10;
    if (kind < 4) {
      input.egresses.push({
        namespace,
        name,
        tag,
        targets: [
          { name: "a", host: i % 2 ? `node-${i}` : `node-${i}.ts.example.com.`, ports: [{ port: 5432 }] },
          { name: "b", host: `192.168.${i & 255}.${(i >> 8) & 255}`, ports: [{ port: 22 }, { port: 443 }] },
        ],
      });
    } else if (kind < 7) {
      input.ingresses.push({
        namespace,
        name,
        tag,
        allowFrom: ["group:eng", "tag:ci"],
        ports: [443, 80],
        denied: false,
      });
    } else if (kind < 9) {
      input.sites.push({
        namespace,
        name,
        prefixes: [`10.${(i >> 8) & 255}.${i & 255}.0/24`],
        advertiserTags: [`tag:router-${i % 20}`],
        allowFrom: ["group:eng"],
        blocked: i % 50 === 0,
      });
    } else {
      input.gateways.push({ namespace, name, tag, routes: ["10.96.0.0/12", `172.${16 + (i % 16)}.0.0/16`] });
    }
  }
  return input;
}

/** A hand-written-looking base: comments, trailing commas, 200 acls and grants, groups, hosts, ssh. */
export function syntheticBase(): string {
  const lines = ["// base policy", "{", '  "groups": {'];
  for (let i = 0; i < 50; i++) lines.push(`    "group:g${i}": ["user${i}@example.com", "admin@example.com"],`);
  lines.push("  },", '  "tagOwners": {', '    "tag:ci": ["group:g1"],', '    "tag:db": ["group:g2"],');
  for (let i = 0; i < 20; i++) lines.push(`    "tag:router-${i}": ["group:g3"], // site routers`);
  lines.push("  },", '  "hosts": {');
  for (let i = 0; i < 50; i++) lines.push(`    "h${i}": "192.168.${i}.0/24",`);
  lines.push("  },", '  "acls": [');
  for (let i = 0; i < 100; i++)
    lines.push(`    { "action": "accept", "src": ["group:g${i % 50}"], "dst": ["h${i % 50}:*"] },`);
  lines.push("  ],", '  "grants": [');
  for (let i = 0; i < 100; i++)
    lines.push(`    { "src": ["group:g${i % 50}"], "dst": ["tag:ci"], "ip": ["tcp:${1000 + i}"] },`);
  lines.push(
    "  ],",
    '  "ssh": [ { "action": "accept", "src": ["group:g0"], "dst": ["tag:ci"], "users": ["root"] } ],',
    "}",
  );
  return lines.join("\n");
}

/** Median wall time of collect + render, per size. */
export async function benchPolicy(): Promise<{ objects: number; ms: number }[]> {
  const base = syntheticBase();
  const results: { objects: number; ms: number }[] = [];
  for (const objects of SIZES) {
    const input = syntheticInput(objects);
    const once = (): void => {
      const { generated } = collectGenerated(input);
      const r = mergePolicy(base, generated);
      if (!r.ok) throw new Error(`bench render failed: ${r.reason}: ${r.message}`);
    };
    results.push({ objects, ms: medianMs(once, RUNS) });
  }
  return results;
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  // no top-level await: this file is also imported from CommonJS-compiled callers
  void benchPolicy().then((results) => {
    for (const { objects, ms } of results) {
      console.log(
        `policy render: ${String(objects).padStart(6)} objects  ${ms.toFixed(2).padStart(8)} ms (median of ${RUNS})`,
      );
    }
  });
}
