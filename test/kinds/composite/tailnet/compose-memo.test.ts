import assert from "node:assert/strict";
import { describe, it } from "node:test";
import fc from "fast-check";
import type { HsNode } from "../../../../src/headscale/types.js";
import type { K8sObject } from "../../../../src/k8s/objects.js";
import {
  collectInput,
  composeTailnetPolicy,
  dnsRecords,
  lazyCollectInput,
} from "../../../../src/kinds/composite/tailnet/compose.js";
import { ComposeMemo, MEMO_TAILNETS } from "../../../../src/kinds/composite/tailnet/compose-memo.js";
import { readInputs } from "../../../../src/kinds/composite/tailnet/inputs.js";
import { collectGenerated, combineContributions } from "../../../../src/policy/generated.js";
import { parentObject, toMaps } from "../../../fixtures/hooks.js";
import { apiKeySecret, BASE, baseConfigMap, hsNode, tailnet, tailnetSpec } from "./fixtures.js";

const tailnetRef = { name: "home" };
/** One memo for the file, as one server holds one. */
const memo = new ComposeMemo();
const namespaces = ["shop", "ops"];
const ports = fc.array(fc.constantFrom(22, 443, 5432, 0, 70000), { minLength: 1, maxLength: 2 });
const host = fc.constantFrom("node-1", "node-2", "100.64.0.9", "10.0.0.1", "nope", "node-1.ts.example.com");
const cidr = fc.constantFrom("10.1.0.0/24", "10.2.0.0/16", "0.0.0.0/0", "::/0", "fd00::/8", "bad", "172.16.0.0/12");
const source = fc.constantFrom("group:eng", "group:platform", "tag:x");
const tag = fc.constantFrom("tag:router-a", "tag:router-b", "tag:Bad");

/** The spec of one workload object of each kind, as arbitrary values (valid and not). */
const specOf: Record<string, fc.Arbitrary<Record<string, unknown>>> = {
  TailnetEgress: fc.record({
    tailnetRef: fc.constant(tailnetRef),
    targets: fc.array(
      fc.record({ name: fc.constantFrom("a", "b"), host, ports: ports.map((ps) => ps.map((port) => ({ port }))) }),
      {
        maxLength: 2,
      },
    ),
  }),
  TailnetIngress: fc.record({
    tailnetRef: fc.constant(tailnetRef),
    mode: fc.constantFrom("http", "tcp"),
    allowFrom: fc.array(source, { maxLength: 2 }),
    exposes: ports.map((ps) => ps.map((port, i) => ({ name: `p${i}`, port, backend: { service: "web", port: 80 } }))),
  }),
  TailnetSite: fc.record({
    tailnetRef: fc.constant(tailnetRef),
    prefixes: fc.array(cidr, { minLength: 1, maxLength: 2 }),
    advertiserTags: fc.array(tag, { maxLength: 2 }),
    allowFrom: fc.array(source, { maxLength: 1 }),
  }),
  TailnetGateway: fc.record({
    tailnetRef: fc.constant(tailnetRef),
    routes: fc.array(cidr, { maxLength: 2 }),
  }),
};
const kinds = Object.keys(specOf);

/** One step of a random history: add or change an object (by kind and slot), remove one, or move the world. */
const step = fc.oneof(
  {
    weight: 6,
    arbitrary: fc
      .record({
        op: fc.constant("put" as const),
        kind: fc.constantFrom(...kinds),
        slot: fc.nat(5),
        ns: fc.constantFrom(...namespaces),
        spec: fc.constant(null),
      })
      .chain((s) => specOf[s.kind].map((spec) => ({ ...s, spec }))),
  },
  { weight: 2, arbitrary: fc.record({ op: fc.constant("remove" as const), slot: fc.nat(30) }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant("nodes" as const), online: fc.boolean(), ip: fc.nat(3) }) },
  {
    weight: 1,
    arbitrary: fc.record({ op: fc.constant("base" as const), extra: fc.constantFrom("", "group:ops", "*") }),
  },
  {
    weight: 1,
    arbitrary: fc.record({ op: fc.constant("owners" as const), owners: fc.array(source, { maxLength: 2 }) }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      op: fc.constant("settings" as const),
      tagPrefix: fc.constantFrom("tag:k8s-", "tag:kube-"),
      sources: fc.array(source, { maxLength: 2 }),
      egressTargets: fc.constantFrom(["100.64.0.0/10"], ["10.0.0.0/8", "tag:x"]),
    }),
  },
);

function nodeList(online: boolean, ip: number): HsNode[] {
  return [
    hsNode({
      id: "1",
      givenName: "node-1",
      ipAddresses: [`100.64.0.${1 + ip}`],
      tags: ["tag:k8s-shop-egress-0"],
      online,
    }),
    hsNode({ id: "2", givenName: "node-2", ipAddresses: ["100.64.0.2"], tags: [], online: !online }),
  ];
}

const baseWith = (extra: string) =>
  extra ? BASE.replace(`"group:eng": ["alice@"]`, `"group:eng": ["alice@"], "${extra}": ["carol@"]`) : BASE;

describe("Tailnet render memo (issue 25)", () => {
  it("the memoised render equals the fresh render byte for byte over random add/change/remove sequences", () => {
    fc.assert(
      // with versions: objects as the API server sends them (a stable uid, a new resourceVersion on every write),
      // keyed by those; without: keyed by their collector entries
      fc.property(fc.array(step, { minLength: 1, maxLength: 25 }), fc.uuid(), fc.boolean(), (steps, uid, versioned) => {
        const objects = new Map<string, K8sObject>();
        let nodes = nodeList(true, 0);
        let base = BASE;
        let owners: string[] = ["group:platform"];
        let settings: Record<string, unknown> = {};
        let version = 0;
        try {
          for (const s of steps) {
            if (s.op === "put") {
              const name = `${s.kind.slice(7).toLowerCase()}-${s.slot}`;
              const id = `${s.kind}/${s.ns}/${name}`;
              const o = parentObject(s.kind, name, s.spec, { namespace: s.ns, uid: `uid-${id}` });
              if (versioned) o.metadata.resourceVersion = String(1000 + version);
              objects.set(id, o);
            } else if (s.op === "remove") {
              const key = [...objects.keys()][s.slot % Math.max(1, objects.size)];
              if (key) objects.delete(key);
            } else if (s.op === "nodes") {
              nodes = nodeList(s.online, s.ip); // a fresh read: a new array
            } else if (s.op === "base") {
              base = baseWith(s.extra);
            } else if (s.op === "owners") {
              owners = s.owners;
            } else {
              settings = {
                tagPrefix: s.tagPrefix,
                allowedIngressSources: s.sources,
                allowedEgressTargets: s.egressTargets,
              };
            }
            version++;
            const spec = tailnetSpec(settings);
            const policy = { ...(spec.policy as Record<string, unknown>), tagOwners: owners };
            const related = [
              apiKeySecret(),
              { ...baseConfigMap(), data: { "policy.hujson": base } },
              ...objects.values(),
            ];
            const inputs = readInputs(tailnet({ ...spec, policy }), toMaps(related));
            const fresh = JSON.stringify(composeTailnetPolicy(inputs, nodes));
            const memoised = JSON.stringify(composeTailnetPolicy(inputs, nodes, undefined, { memo, tailnet: uid }));
            assert.equal(memoised, fresh, `step ${version}: ${JSON.stringify(s)}`);
            // the memo keeps exactly the objects of the last render
            const rendered =
              inputs.egresses.length + inputs.ingresses.length + inputs.sites.length + inputs.gateways.length;
            assert.equal(memo.size(uid).objects, rendered);
          }
        } finally {
          memo.forget(uid);
        }
      }),
      { numRuns: 150 },
    );
  });

  it("a resync where nothing changed returns the previous render; one changed object recomputes one contribution", () => {
    const uid = "render-memo-reuse";
    const make = (port: number) =>
      [0, 1, 2].map((i) =>
        parentObject(
          "TailnetIngress",
          `web-${i}`,
          {
            tailnetRef,
            mode: "http",
            allowFrom: ["group:eng"],
            exposes: [{ name: "w", port: i === 1 ? port : 443, backend: { service: "web", port: 80 } }],
          },
          { namespace: "shop" },
        ),
      );
    const inputsOf = (port: number) => readInputs(tailnet(), toMaps([apiKeySecret(), baseConfigMap(), ...make(port)]));
    const nodes = nodeList(true, 0);
    let renders = 0;
    const render = (inputs: ReturnType<typeof inputsOf>) =>
      memo.policy(uid, lazyCollectInput(inputs, nodes), "base", (c) => {
        renders++;
        return combineContributions(inputs.tagOwners, c);
      });
    try {
      const first = render(inputsOf(443));
      const again = render(inputsOf(443));
      assert.equal(again, first, "nothing changed: the very same render");
      assert.equal(renders, 1);
      const changed = render(inputsOf(8443));
      assert.equal(renders, 2);
      assert.notEqual(changed, first);
      // the two unchanged ingresses' contributions are shared with the previous render's
      assert.deepEqual(changed, collectGenerated(collectInput(inputsOf(8443), nodes)));
      assert.equal(memo.size(uid).objects, 3);
      render(readInputs(tailnet(), toMaps([apiKeySecret(), baseConfigMap(), ...make(443).slice(0, 1)])));
      assert.equal(memo.size(uid).objects, 1, "objects not in the last render are dropped");
    } finally {
      memo.forget(uid);
    }
  });

  it("the memoised DNS records equal the fresh ones over random ingress and node changes", () => {
    const ingressSpec = fc.record({
      hostname: fc.constantFrom("web", "api", "node-1"),
      alias: fc.constantFrom("a", "b", ""),
    });
    const dnsStep = fc.oneof(
      fc.record({
        op: fc.constant("put" as const),
        slot: fc.nat(3),
        ns: fc.constantFrom(...namespaces),
        spec: ingressSpec,
      }),
      fc.record({ op: fc.constant("remove" as const), slot: fc.nat(3) }),
      fc.record({ op: fc.constant("nodes" as const), online: fc.boolean(), ip: fc.nat(3) }),
    );
    fc.assert(
      fc.property(fc.array(dnsStep, { minLength: 1, maxLength: 20 }), fc.uuid(), (steps, uid) => {
        const objects = new Map<string, K8sObject>();
        let nodes = nodeList(true, 0);
        let rv = 0;
        try {
          for (const s of steps) {
            if (s.op === "put") {
              const name = `ingress-${s.slot}`;
              const o = parentObject(
                "TailnetIngress",
                name,
                {
                  tailnetRef,
                  mode: "http",
                  hostname: s.spec.hostname,
                  allowFrom: ["group:eng"],
                  exposes: [
                    {
                      name: "w",
                      port: 443,
                      backend: { service: "web", port: 80 },
                      ...(s.spec.alias ? { aliases: [s.spec.alias] } : {}),
                    },
                  ],
                },
                { namespace: s.ns, uid: `uid-${s.ns}-${name}` },
              );
              // the API server gives every write a new resourceVersion
              objects.set(`${s.ns}/${name}`, { ...o, metadata: { ...o.metadata, resourceVersion: String(++rv) } });
            } else if (s.op === "remove") {
              objects.delete([...objects.keys()][s.slot % Math.max(1, objects.size)] ?? "");
            } else {
              nodes = nodeList(s.online, s.ip).map((n) => ({ ...n, tags: [...n.tags, "tag:k8s-shop-ingress-0"] }));
            }
            const inputs = readInputs(tailnet(), toMaps([apiKeySecret(), baseConfigMap(), ...objects.values()]));
            assert.equal(
              JSON.stringify(dnsRecords(inputs, nodes, { memo, tailnet: uid })),
              JSON.stringify(dnsRecords(inputs, nodes)),
            );
          }
        } finally {
          memo.forget(uid);
        }
      }),
      { numRuns: 150 },
    );
  });

  it(`keeps at most ${MEMO_TAILNETS} Tailnets, dropping the least recently rendered`, () => {
    const inputs = readInputs(tailnet(), toMaps([apiKeySecret(), baseConfigMap()]));
    const before = memo.size().tailnets;
    const uids = Array.from({ length: MEMO_TAILNETS + 3 }, (_, i) => `bound-${i}`);
    for (const uid of uids) composeTailnetPolicy(inputs, [], undefined, { memo, tailnet: uid });
    assert.ok(memo.size().tailnets <= MEMO_TAILNETS);
    assert.ok(memo.size().tailnets >= Math.min(MEMO_TAILNETS, before));
    for (const uid of uids) memo.forget(uid);
  });
});
