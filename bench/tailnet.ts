// The Tailnet's whole decide path for N workload objects, as on every resync: read inputs from
// related, blocked sites, collect + render + hash the policy, DNS records, conditions and children.
// The indented text for policy/check and PUT is built only once per new rendered hash (the check
// verdict is memoised), so it is not part of the steady state. Run `npx tsx bench/tailnet.ts`;
// `benchTailnetDecide()` is exported for bench/run.ts.
import { pathToFileURL } from "node:url";
import type { K8sObject } from "../src/k8s/objects.js";
import { composeTailnetPolicy } from "../src/kinds/composite/tailnet/compose.js";
import { decideTailnet } from "../src/kinds/composite/tailnet/decide.js";
import { readInputs } from "../src/kinds/composite/tailnet/inputs.js";
import { planTailnet } from "../src/kinds/composite/tailnet/plan.js";
import { parentObject, toMaps } from "../test/fixtures/hooks.js";
import {
  apiKeySecret,
  baseConfigMap,
  checkOk,
  healthyHs,
  hsNode,
  NOW,
  ok,
  tailnet,
  tailnetSpec,
} from "../test/kinds/composite/tailnet/fixtures.js";
import { medianMs } from "./measure.js";

const SIZES = [1_000, 5_000, 10_000];
const RUNS = 5;

const ipOf = (i: number) => `100.${64 + ((i >> 16) & 63)}.${(i >> 8) & 255}.${i & 255}`;

/** N objects of this Tailnet: 40% egress, 30% ingress, 20% sites (2% overlapping), 10% gateways. */
export function syntheticWorld(objects: number): { related: K8sObject[]; nodes: ReturnType<typeof hsNode>[] } {
  const related: K8sObject[] = [apiKeySecret(), baseConfigMap()];
  const nodes = [];
  for (let i = 0; i < objects; i++) {
    const namespace = `ns-${i % 50}`;
    const name = `obj-${i}`;
    const tailnetRef = { name: "home" };
    const kind = i % 10;
    nodes.push(
      hsNode({
        id: String(i + 1),
        givenName: `node-${i}`,
        ipAddresses: [ipOf(i)],
        tags: [`tag:k8s-${namespace}-${name}`],
      }),
    );
    if (kind < 4) {
      related.push(
        parentObject(
          "TailnetEgress",
          name,
          {
            tailnetRef,
            targets: [
              { name: "a", host: `node-${i}`, ports: [{ port: 5432 }] },
              { name: "b", host: ipOf(i), ports: [{ port: 22 }, { port: 443 }] },
            ],
          },
          { namespace },
        ),
      );
    } else if (kind < 7) {
      related.push(
        parentObject(
          "TailnetIngress",
          name,
          {
            tailnetRef,
            hostname: `h-${i}`,
            mode: "http",
            allowFrom: ["group:eng"],
            exposes: [{ name: "web", port: 443, backend: { service: "web", port: 80 }, aliases: [`a-${i}`] }],
          },
          { namespace },
        ),
      );
    } else if (kind < 9) {
      const prefix = i % 50 === 7 ? "10.0.0.0/8" : `10.${(i >> 8) & 255}.${i & 255}.0/24`;
      related.push(
        parentObject(
          "TailnetSite",
          name,
          { tailnetRef, prefixes: [prefix], advertiserTags: [`tag:router-${i % 20}`], allowFrom: ["group:eng"] },
          { namespace },
        ),
      );
    } else {
      related.push(
        parentObject("TailnetGateway", name, { tailnetRef, routes: [`172.${16 + (i % 16)}.0.0/16`] }, { namespace }),
      );
    }
  }
  return { related, nodes };
}

export async function benchTailnetDecide(): Promise<{ objects: number; ms: number }[]> {
  const parent = tailnet(tailnetSpec());
  const results: { objects: number; ms: number }[] = [];
  for (const objects of SIZES) {
    const world = syntheticWorld(objects);
    const related = toMaps(world.related);
    const hs = healthyHs({ nodes: ok(world.nodes) });
    const once = (): void => {
      const inputs = readInputs(parent, related);
      const render = composeTailnetPolicy(inputs, hs.nodes.ok ? hs.nodes.value : null);
      if (!render.ok) throw new Error(`bench render failed: ${render.reason}: ${render.message}`);
      const input = {
        parent,
        observed: { inputs, apiKey: { source: "spec" as const, published: true }, hs, render, check: checkOk },
        operatorNamespace: "tailnet-system",
        now: NOW,
      };
      decideTailnet({ ...input, children: {}, plan: planTailnet(input), outcome: {} });
    };
    results.push({ objects, ms: medianMs(once, RUNS) });
  }
  return results;
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  void benchTailnetDecide().then((results) => {
    for (const { objects, ms } of results) {
      console.log(
        `tailnet decide: ${String(objects).padStart(6)} objects  ${ms.toFixed(2).padStart(8)} ms (median of ${RUNS})`,
      );
    }
  });
}
