import assert from "node:assert/strict";
import { describe, it } from "node:test";
import fc from "fast-check";
import { collectGenerated } from "../../src/policy/generated.js";
import type { CollectInput, CollectResult } from "../../src/policy/generated-types.js";

/** An empty Tailnet (owners group:platform, egress allowed to the tailnet CGNAT range and tag:db) plus overrides. */
function input(over: Partial<CollectInput> = {}): CollectInput {
  return {
    tagOwners: ["group:platform"],
    allowedEgressTargets: ["100.64.0.0/10", "192.168.10.0/24", "tag:db"],
    egresses: [],
    ingresses: [],
    sites: [],
    gateways: [],
    nodes: [
      { givenName: "db-1", name: "db-1", ipAddresses: ["100.64.0.7", "fd7a:115c:a1e0::7"], tags: [] },
      { givenName: "nas", name: "nas", ipAddresses: ["fd7a:115c:a1e0::9"], tags: ["tag:db"] },
      { givenName: "laptop", name: "laptop", ipAddresses: ["fd7a:115c:a1e0::3"], tags: [] },
    ],
    baseDomain: "ts.example.com",
    ...over,
  };
}

type Egress = CollectInput["egresses"][number];
function egress(host: string, ports = [5432], tag = "tag:k8s-shop-db", target = "postgres"): Egress {
  return {
    namespace: "shop",
    name: "db",
    tag,
    targets: [{ name: target, host, ports: ports.map((port) => ({ port })) }],
  };
}

/** The generated parts as plain objects, for deepEqual. */
function plain(r: CollectResult) {
  return {
    tagOwners: Object.fromEntries(r.generated.tagOwners),
    grants: r.generated.grants,
    routes: Object.fromEntries(r.generated.autoApproverRoutes),
  };
}

describe("collectGenerated: tags", () => {
  it("owns every effective tag and every advertiser tag of a non-blocked site", () => {
    const r = collectGenerated(
      input({
        tagOwners: ["group:platform", "alice@", "group:platform"],
        egresses: [egress("db-1")],
        ingresses: [
          { namespace: "mon", name: "grafana", tag: "tag:k8s-mon-grafana", allowFrom: [], ports: [443], denied: false },
        ],
        sites: [
          {
            namespace: "net",
            name: "home",
            prefixes: ["192.168.10.0/24"],
            advertiserTags: ["tag:router-home"],
            allowFrom: [],
            blocked: false,
          },
        ],
        gateways: [{ namespace: "net", name: "gw", tag: "tag:k8s-net-gw", routes: [] }],
      }),
    );
    assert.deepEqual(plain(r).tagOwners, {
      "tag:k8s-mon-grafana": ["alice@", "group:platform"],
      "tag:k8s-net-gw": ["alice@", "group:platform"],
      "tag:k8s-shop-db": ["alice@", "group:platform"],
      "tag:router-home": ["alice@", "group:platform"],
    });
    assert.deepEqual(
      [...r.generated.tagOwners.keys()],
      ["tag:k8s-mon-grafana", "tag:k8s-net-gw", "tag:k8s-shop-db", "tag:router-home"],
    );
  });

  it("writes an empty owner list when the Tailnet names no owners", () => {
    const r = collectGenerated(input({ tagOwners: [], egresses: [egress("db-1")] }));
    assert.deepEqual(plain(r).tagOwners, { "tag:k8s-shop-db": [] });
  });

  it("leaves out invalid tags and reports them", () => {
    const r = collectGenerated(
      input({
        egresses: [egress("db-1", [5432], "tag:Bad_Tag")],
        gateways: [{ namespace: "net", name: "gw", tag: "k8s-gw", routes: ["10.96.0.0/12"] }],
      }),
    );
    assert.deepEqual(plain(r), { tagOwners: {}, grants: [], routes: {} });
    assert.deepEqual(r.invalid, [
      { namespace: "net", name: "gw", field: "tag", value: "k8s-gw" },
      { namespace: "shop", name: "db", field: "tag", value: "tag:Bad_Tag" },
    ]);
  });
});

describe("collectGenerated: ingress grants", () => {
  const ing = {
    namespace: "mon",
    name: "grafana",
    tag: "tag:k8s-mon-grafana",
    allowFrom: ["group:eng", "autogroup:member"],
    ports: [443, 80, 443],
    denied: false,
  };
  it("grants allowFrom to the tag on the exposed ports", () => {
    assert.deepEqual(plain(collectGenerated(input({ ingresses: [ing] }))).grants, [
      { src: ["autogroup:member", "group:eng"], dst: ["tag:k8s-mon-grafana"], ip: ["tcp:80", "tcp:443"] },
    ]);
  });
  it("grants nothing when allowFrom is outside the allowlist, but still owns the tag", () => {
    const r = plain(collectGenerated(input({ ingresses: [{ ...ing, denied: true }] })));
    assert.deepEqual(r.grants, []);
    assert.deepEqual(r.tagOwners, { "tag:k8s-mon-grafana": ["group:platform"] });
  });
  it("grants nothing with an empty allowFrom", () => {
    assert.deepEqual(plain(collectGenerated(input({ ingresses: [{ ...ing, allowFrom: [] }] }))).grants, []);
  });
  it("sorts ports numerically and drops repeats", () => {
    const grants = (ports: number[]) => plain(collectGenerated(input({ ingresses: [{ ...ing, ports }] }))).grants;
    assert.deepEqual(grants([443, 80])[0].ip, ["tcp:80", "tcp:443"]);
    assert.deepEqual(grants([443, 443])[0].ip, ["tcp:443"]);
    assert.deepEqual(grants([9090, 22, 443, 22])[0].ip, ["tcp:22", "tcp:443", "tcp:9090"]);
  });
  it("unions ip specs of two objects granting the same src to the same dst; * wins", () => {
    const twin = { ...ing, name: "grafana-2", ports: [3000] };
    assert.deepEqual(plain(collectGenerated(input({ ingresses: [ing, twin] }))).grants, [
      { src: ["autogroup:member", "group:eng"], dst: ["tag:k8s-mon-grafana"], ip: ["tcp:80", "tcp:443", "tcp:3000"] },
    ]);
    const site = {
      namespace: "net",
      name: "s",
      prefixes: ["10.1.0.0/16"],
      advertiserTags: [],
      allowFrom: ["group:eng"],
      blocked: false,
    };
    const egressToSame: Egress = {
      namespace: "x",
      name: "y",
      tag: "tag:k8s-x-y",
      targets: [{ name: "t", host: "10.1.0.0/16", ports: [{ port: 22 }] }],
    };
    const r = collectGenerated(
      input({
        allowedEgressTargets: ["10.0.0.0/8"],
        sites: [site, { ...site, name: "t", allowFrom: ["tag:k8s-x-y"] }],
        egresses: [egressToSame],
      }),
    );
    assert.deepEqual(plain(r).grants, [
      { src: ["group:eng"], dst: ["10.1.0.0/16"], ip: ["*"] },
      { src: ["tag:k8s-x-y"], dst: ["10.1.0.0/16"], ip: ["*"] },
    ]);
  });
  it("skips and reports invalid ports", () => {
    const r = collectGenerated(input({ ingresses: [{ ...ing, ports: [0, 443, 70000] }] }));
    assert.deepEqual(plain(r).grants[0].ip, ["tcp:443"]);
    assert.deepEqual(
      r.invalid.map((x) => x.value),
      ["0", "70000"],
    );
  });
});

describe("collectGenerated: egress grants", () => {
  const rows: {
    name: string;
    host: string;
    allowed?: string[];
    dst: string | null;
    address: string | null;
    unresolved?: boolean;
  }[] = [
    { name: "node name inside the CIDR allowlist", host: "db-1", dst: "100.64.0.7", address: "100.64.0.7" },
    { name: "MagicDNS FQDN", host: "db-1.ts.example.com", dst: "100.64.0.7", address: "100.64.0.7" },
    { name: "MagicDNS FQDN with trailing dot", host: "db-1.ts.example.com.", dst: "100.64.0.7", address: "100.64.0.7" },
    { name: "node allowed by its tag", host: "nas", dst: "fd7a:115c:a1e0::9", address: "fd7a:115c:a1e0::9" },
    { name: "node outside every CIDR without an allowed tag", host: "laptop", dst: null, address: "fd7a:115c:a1e0::3" },
    { name: "IP inside an allowed CIDR", host: "192.168.10.5", dst: "192.168.10.5", address: "192.168.10.5" },
    { name: "IP outside the allowlist", host: "192.168.11.5", dst: null, address: "192.168.11.5" },
    {
      name: "CIDR inside an allowed CIDR",
      host: "192.168.10.0/28",
      dst: "192.168.10.0/28",
      address: "192.168.10.0/28",
    },
    { name: "CIDR wider than the allowlist", host: "192.168.0.0/16", dst: null, address: "192.168.0.0/16" },
    { name: "empty allowlist", host: "db-1", allowed: [], dst: null, address: "100.64.0.7" },
    { name: "unknown node name", host: "ghost", dst: null, address: null, unresolved: true },
    { name: "FQDN of another domain", host: "db-1.example.org", dst: null, address: null, unresolved: true },
  ];
  for (const row of rows) {
    it(row.name, () => {
      const over: Partial<CollectInput> = { egresses: [egress(row.host)] };
      if (row.allowed) over.allowedEgressTargets = row.allowed;
      const r = collectGenerated(input(over));
      assert.deepEqual(
        plain(r).grants,
        row.dst ? [{ src: ["tag:k8s-shop-db"], dst: [row.dst], ip: ["tcp:5432"] }] : [],
      );
      assert.deepEqual(r.egressTargets, [
        { namespace: "shop", name: "db", target: "postgres", host: row.host, address: row.address, granted: !!row.dst },
      ]);
      assert.deepEqual(
        r.unresolved,
        row.unresolved ? [{ namespace: "shop", name: "db", target: "postgres", host: row.host }] : [],
      );
      // the egress tag is owned either way
      assert.deepEqual(plain(r).tagOwners, { "tag:k8s-shop-db": ["group:platform"] });
    });
  }

  it("writes the tailnet IP, never the name, and merges ports of targets on the same address", () => {
    const e: Egress = {
      namespace: "shop",
      name: "db",
      tag: "tag:k8s-shop-db",
      targets: [
        { name: "pg", host: "db-1.ts.example.com.", ports: [{ port: 5432, protocol: "TCP" }] },
        { name: "pg-admin", host: "db-1", ports: [{ port: 8080 }, { port: 443 }] },
        { name: "lan", host: "192.168.10.20", ports: [{ port: 22 }] },
      ],
    };
    assert.deepEqual(plain(collectGenerated(input({ egresses: [e] }))).grants, [
      { src: ["tag:k8s-shop-db"], dst: ["100.64.0.7"], ip: ["tcp:443", "tcp:5432", "tcp:8080"] },
      { src: ["tag:k8s-shop-db"], dst: ["192.168.10.20"], ip: ["tcp:22"] },
    ]);
  });
});

describe("collectGenerated: sites and gateways", () => {
  const site = {
    namespace: "net",
    name: "home",
    prefixes: ["192.168.10.0/24", "2001:DB8::/48"],
    advertiserTags: ["tag:router-home", "tag:router-backup"],
    allowFrom: ["group:eng"],
    blocked: false,
  };
  it("grants allowFrom to the prefixes and auto-approves them for the advertiser tags", () => {
    const r = plain(collectGenerated(input({ sites: [site] })));
    assert.deepEqual(r.grants, [{ src: ["group:eng"], dst: ["192.168.10.0/24", "2001:db8::/48"], ip: ["*"] }]);
    assert.deepEqual(r.routes, {
      "192.168.10.0/24": ["tag:router-backup", "tag:router-home"],
      "2001:db8::/48": ["tag:router-backup", "tag:router-home"],
    });
  });
  it("a blocked site contributes nothing", () => {
    assert.deepEqual(plain(collectGenerated(input({ sites: [{ ...site, blocked: true }] }))), {
      tagOwners: {},
      grants: [],
      routes: {},
    });
  });
  it("a site without allowFrom still approves its routes", () => {
    const r = plain(collectGenerated(input({ sites: [{ ...site, allowFrom: [] }] })));
    assert.deepEqual(r.grants, []);
    assert.equal(Object.keys(r.routes).length, 2);
  });
  it("gateway routes are approved for the gateway tag; a prefix shared with a site unions its tags", () => {
    const r = collectGenerated(
      input({
        sites: [{ ...site, prefixes: ["10.96.0.0/12"], advertiserTags: ["tag:router-home"] }],
        gateways: [{ namespace: "net", name: "gw", tag: "tag:k8s-net-gw", routes: ["10.96.0.0/12", "10.244.0.1/16"] }],
      }),
    );
    assert.deepEqual(plain(r).routes, { "10.96.0.0/12": ["tag:k8s-net-gw", "tag:router-home"] });
    assert.deepEqual(r.invalid, [{ namespace: "net", name: "gw", field: "routes", value: "10.244.0.1/16" }]);
  });

  // Headscale 0.29 refuses a default route as a grant destination and approves exit routes only through
  // autoApprovers.exitNode (hscontrol/policy/v2/types.go, policy.go NodeCanApproveRoute).
  const exit = { ...site, name: "exit", prefixes: ["::/0", "0.0.0.0/0"], advertiserTags: ["tag:exit-b", "tag:exit-a"] };
  it("an exit-node site (exactly 0.0.0.0/0 and ::/0): exitNode approvers, a grant to autogroup:internet", () => {
    const r = collectGenerated(input({ sites: [exit] }));
    assert.deepEqual(r.generated.autoApproverExitNode, ["tag:exit-a", "tag:exit-b"]);
    assert.deepEqual(plain(r).routes, {}, "no routes key: a 0.0.0.0/0 key approves no exit node");
    assert.deepEqual(r.generated.grants, [{ src: ["group:eng"], dst: ["autogroup:internet"], ip: ["*"] }]);
    assert.deepEqual(Object.keys(plain(r).tagOwners), ["tag:exit-a", "tag:exit-b"]);
    assert.deepEqual(r.invalid, []);
  });
  it("a blocked or allowFrom-less exit site: nothing, or the approvers only", () => {
    assert.deepEqual(
      collectGenerated(input({ sites: [{ ...exit, blocked: true }] })).generated.autoApproverExitNode,
      [],
    );
    const quiet = collectGenerated(input({ sites: [{ ...exit, allowFrom: [] }] }));
    assert.deepEqual(quiet.generated.grants, []);
    assert.deepEqual(quiet.generated.autoApproverExitNode, ["tag:exit-a", "tag:exit-b"]);
  });
  it("a default route beside other prefixes, or one family alone, is left out and reported; the rest renders", () => {
    const r = collectGenerated(
      input({
        sites: [
          { ...site, name: "mixed", prefixes: ["192.168.10.0/24", "::/0"] },
          { ...site, name: "half", prefixes: ["0.0.0.0/0"], advertiserTags: ["tag:exit-a"] },
        ],
      }),
    );
    assert.deepEqual(r.generated.grants, [{ src: ["group:eng"], dst: ["192.168.10.0/24"], ip: ["*"] }]);
    assert.deepEqual(plain(r).routes, { "192.168.10.0/24": ["tag:router-backup", "tag:router-home"] });
    assert.deepEqual(r.generated.autoApproverExitNode, []);
    assert.deepEqual(r.invalid, [
      { namespace: "net", name: "half", field: "prefixes", value: "0.0.0.0/0" },
      { namespace: "net", name: "mixed", field: "prefixes", value: "::/0" },
    ]);
  });
  it("a default route in a gateway's routes approves nothing: it is left out (spec.exitNode is the way)", () => {
    const r = collectGenerated(
      input({
        gateways: [{ namespace: "net", name: "gw", tag: "tag:k8s-net-gw", routes: ["10.96.0.0/12", "0.0.0.0/0"] }],
      }),
    );
    assert.deepEqual(plain(r).routes, { "10.96.0.0/12": ["tag:k8s-net-gw"] });
    assert.deepEqual(r.generated.autoApproverExitNode, [], "no exit node without spec.exitNode and its tenancy");
    assert.deepEqual(r.invalid, [{ namespace: "net", name: "gw", field: "routes", value: "0.0.0.0/0" }]);
  });
  it("a gateway's admitted exitNode: autoApprovers.exitNode for its tag and a grant from allowFrom to autogroup:internet", () => {
    const gw = { namespace: "net", name: "gw", tag: "tag:k8s-net-gw", routes: ["10.96.0.0/12"] };
    const r = collectGenerated(input({ gateways: [{ ...gw, exitNode: { allowFrom: ["group:eng", "alice@"] } }] }));
    assert.deepEqual(r.generated.autoApproverExitNode, ["tag:k8s-net-gw"]);
    assert.deepEqual(r.generated.grants, [{ src: ["alice@", "group:eng"], dst: ["autogroup:internet"], ip: ["*"] }]);
    assert.deepEqual(plain(r).routes, { "10.96.0.0/12": ["tag:k8s-net-gw"] }, "never a 0.0.0.0/0 routes key");
    assert.deepEqual(r.invalid, []);
    // without allowFrom: the approver only (the base policy grants); a site's grant to the same sources merges
    const quiet = collectGenerated(input({ gateways: [{ ...gw, exitNode: { allowFrom: [] } }] }));
    assert.deepEqual(quiet.generated.autoApproverExitNode, ["tag:k8s-net-gw"]);
    assert.deepEqual(quiet.generated.grants, []);
    const both = collectGenerated(
      input({
        gateways: [{ ...gw, exitNode: { allowFrom: ["group:eng"] } }],
        sites: [
          {
            namespace: "net",
            name: "exit",
            prefixes: ["0.0.0.0/0", "::/0"],
            advertiserTags: ["tag:exit-home"],
            allowFrom: ["group:eng"],
            blocked: false,
          },
        ],
      }),
    );
    assert.deepEqual(both.generated.autoApproverExitNode, ["tag:exit-home", "tag:k8s-net-gw"]);
    assert.deepEqual(both.generated.grants, [{ src: ["group:eng"], dst: ["autogroup:internet"], ip: ["*"] }]);
  });
});

describe("collectGenerated: a default route in pieces is an exit route (issue 31 item 5)", () => {
  const HALVES = ["0.0.0.0/1", "128.0.0.0/1", "::/1", "8000::/1"];
  const gw = { namespace: "net", name: "gw", tag: "tag:k8s-net-gw", routes: ["10.96.0.0/12"] };
  const site = {
    namespace: "net",
    name: "home",
    prefixes: ["192.168.10.0/24"],
    advertiserTags: ["tag:router-home"],
    allowFrom: ["group:eng"],
    blocked: false,
  };
  it("a gateway whose routes cover the address space approves no route of the covered families", () => {
    const r = collectGenerated(input({ gateways: [{ ...gw, routes: ["10.96.0.0/12", ...HALVES] }] }));
    assert.deepEqual(plain(r).routes, {});
    assert.deepEqual(r.generated.autoApproverExitNode, []);
    assert.deepEqual(
      r.invalid.map((x) => x.value),
      ["0.0.0.0/1", "10.96.0.0/12", "128.0.0.0/1", "8000::/1", "::/1"],
    );
    assert.ok(r.invalid.every((x) => x.field === "routes" && x.name === "gw"));
  });
  it("IPv6 halves alone, and /0 split into many: the covered family is left out", () => {
    const v6 = collectGenerated(input({ gateways: [{ ...gw, routes: ["10.96.0.0/12", "::/1", "8000::/1"] }] }));
    assert.deepEqual(plain(v6).routes, { "10.96.0.0/12": ["tag:k8s-net-gw"] });
    const eighths = [0, 32, 64, 96, 128, 160, 192, 224].map((a) => `${a}.0.0.0/3`);
    const many = collectGenerated(input({ sites: [{ ...site, prefixes: ["2001:db8::/48", ...eighths] }] }));
    assert.deepEqual(plain(many).routes, { "2001:db8::/48": ["tag:router-home"] });
    assert.deepEqual(many.generated.grants, [{ src: ["group:eng"], dst: ["2001:db8::/48"], ip: ["*"] }]);
    assert.equal(many.invalid.length, 8);
  });
  it("halves across two objects approved for one tag: the second object's half is left out", () => {
    const r = collectGenerated(
      input({
        sites: [
          { ...site, name: "a", prefixes: ["0.0.0.0/1"] },
          { ...site, name: "b", prefixes: ["128.0.0.0/1", "192.168.10.0/24"] },
        ],
      }),
    );
    assert.deepEqual(plain(r).routes, {
      "0.0.0.0/1": ["tag:router-home"],
      "192.168.10.0/24": ["tag:router-home"],
    });
    assert.deepEqual(r.invalid, [{ namespace: "net", name: "b", field: "prefixes", value: "128.0.0.0/1" }]);
  });
  it("a site naming a gateway's tag cannot complete the gateway's half into a default route", () => {
    const r = collectGenerated(
      input({
        sites: [{ ...site, name: "other", prefixes: ["128.0.0.0/1"], advertiserTags: ["tag:k8s-net-gw"] }],
        gateways: [{ ...gw, routes: ["0.0.0.0/1"] }],
      }),
    );
    // sites come before gateways: the gateway's half completes the cover and is left out
    assert.deepEqual(plain(r).routes, { "128.0.0.0/1": ["tag:k8s-net-gw"] });
    assert.deepEqual(r.invalid, [{ namespace: "net", name: "gw", field: "routes", value: "0.0.0.0/1" }]);
  });
  it("a half written with host bits is refused as a value, so it completes no cover", () => {
    const r = collectGenerated(input({ gateways: [{ ...gw, routes: ["0.0.0.0/1", "128.0.0.1/1"] }] }));
    assert.deepEqual(plain(r).routes, { "0.0.0.0/1": ["tag:k8s-net-gw"] });
    assert.deepEqual(r.invalid, [{ namespace: "net", name: "gw", field: "routes", value: "128.0.0.1/1" }]);
  });
  it("halves for different tags are no exit route: each node routes half", () => {
    const r = collectGenerated(
      input({
        sites: [
          { ...site, name: "a", prefixes: ["0.0.0.0/1"], advertiserTags: ["tag:router-a"] },
          { ...site, name: "b", prefixes: ["128.0.0.0/1"], advertiserTags: ["tag:router-b"] },
        ],
      }),
    );
    assert.deepEqual(plain(r).routes, { "0.0.0.0/1": ["tag:router-a"], "128.0.0.0/1": ["tag:router-b"] });
    assert.deepEqual(r.invalid, []);
  });
});

describe("collectGenerated: determinism", () => {
  const full = input({
    egresses: [
      egress("db-1"),
      { ...egress("192.168.10.9", [22], "tag:k8s-ops-ssh", "box"), namespace: "ops", name: "ssh" },
      { ...egress("ghost", [80], "tag:k8s-a-b", "x"), namespace: "a", name: "b" },
    ],
    ingresses: [
      { namespace: "mon", name: "g", tag: "tag:k8s-mon-g", allowFrom: ["group:eng"], ports: [443], denied: false },
      {
        namespace: "mon",
        name: "p",
        tag: "tag:k8s-mon-p",
        allowFrom: ["tag:ci", "group:eng"],
        ports: [9090],
        denied: false,
      },
    ],
    sites: [
      {
        namespace: "net",
        name: "a",
        prefixes: ["192.168.20.0/24"],
        advertiserTags: ["tag:r-a"],
        allowFrom: ["group:eng"],
        blocked: false,
      },
      {
        namespace: "net",
        name: "b",
        prefixes: ["192.168.30.0/24"],
        advertiserTags: ["tag:r-b"],
        allowFrom: ["autogroup:member"],
        blocked: false,
      },
    ],
    gateways: [{ namespace: "net", name: "gw", tag: "tag:k8s-net-gw", routes: ["10.96.0.0/12", "10.244.0.0/16"] }],
  });
  const expected = JSON.stringify(plainAll(collectGenerated(full)));

  function plainAll(r: CollectResult) {
    return { ...plain(r), unresolved: r.unresolved, egressTargets: r.egressTargets, invalid: r.invalid };
  }

  it("gives the same output for any order of objects, targets, lists and nodes", () => {
    fc.assert(
      fc.property(fc.infiniteStream(fc.double({ min: 0, max: 1, noNaN: true })), (rand) => {
        const it = rand[Symbol.iterator]();
        const shuffle = <T>(xs: readonly T[]): T[] =>
          xs
            .map((x) => ({ x, k: it.next().value as number }))
            .sort((a, b) => a.k - b.k)
            .map(({ x }) => x);
        const shuffled: CollectInput = {
          ...full,
          tagOwners: shuffle(full.tagOwners),
          allowedEgressTargets: shuffle(full.allowedEgressTargets),
          egresses: shuffle(full.egresses).map((e) => ({ ...e, targets: shuffle(e.targets) })),
          ingresses: shuffle(full.ingresses).map((i) => ({ ...i, allowFrom: shuffle(i.allowFrom) })),
          sites: shuffle(full.sites).map((s) => ({ ...s, prefixes: shuffle(s.prefixes) })),
          gateways: shuffle(full.gateways).map((g) => ({ ...g, routes: shuffle(g.routes) })),
          nodes: shuffle(full.nodes),
        };
        assert.equal(JSON.stringify(plainAll(collectGenerated(shuffled))), expected);
      }),
      { numRuns: 50 },
    );
  });

  it("sorts grants by src, then dst", () => {
    const grants = collectGenerated(full).generated.grants;
    assert.deepEqual(
      grants.map((g) => `${g.src.join(",")} -> ${g.dst.join(",")}`),
      [
        "autogroup:member -> 192.168.30.0/24",
        "group:eng -> 192.168.20.0/24",
        "group:eng -> tag:k8s-mon-g",
        "group:eng,tag:ci -> tag:k8s-mon-p",
        "tag:k8s-ops-ssh -> 192.168.10.9",
        "tag:k8s-shop-db -> 100.64.0.7",
      ],
    );
  });
});
