/**
 * decideIngress, one row per (condition, reason): named builders over the real decide input
 * (healthyInput and the NO_TAILNET / NO_API_KEY overrides), rows { name, input, expect }; the last test
 * checks that the rows, with the hook's InvalidSpec answer, produce exactly what INGRESS_REASONS allows.
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import type { ConditionInput } from "../../../../src/conditions/condition.js";
import { INGRESS_REASONS } from "../../../../src/conditions/tables/ingress.js";
import { ingressConditions } from "../../../../src/kinds/composite/ingress/conditions.js";
import { decideIngress, type IngressDecideInput } from "../../../../src/kinds/composite/ingress/decide.js";
import { readIngressSpec } from "../../../../src/kinds/composite/ingress/spec.js";
import type { TailnetSettings } from "../../../../src/kinds/shared/workload.js";
import { invalidSpecConditions } from "../../../../src/pipeline/status.js";
import type { ScrapeResult } from "../../../../src/pipeline/types.js";
import { assertCoversTable } from "../../../helpers/reason-coverage.js";
import { failed, hsNode, ok, policy } from "../../shared/fixtures.js";
import { leftOutText } from "../../shared/left-out-fixture.js";
import { certificateRows } from "./certificate-inputs.js";
import { ingress, NOT_SERVED, scraped, TAG, tcpIngress, tlsSecret, WEB } from "./fixtures.js";
import { grantRows } from "./grant-inputs.js";
import {
  agentNode,
  type Certificates,
  certificates,
  conditionsOf,
  healthyInput,
  identityInputs,
  NO_API_KEY,
  NO_PROXY_CLASS,
  NO_TAILNET,
  type Over,
} from "./inputs.js";

let certs: Certificates;
before(async () => {
  certs = await certificates();
});
after(() => certs.pki.cleanup());

const input = (over: Over = {}) => healthyInput(certs.good, over);

const HEALTHY = {
  TagKnown: "Known",
  PolicyGranted: "Granted",
  Registered: "Registered",
  BackendsReachable: "Reachable",
  TLSReady: "Valid",
  DNSServed: "Served",
  Ready: "Ready",
};

type ConditionType = keyof typeof HEALTHY;

interface Row {
  name: string;
  input: () => IngressDecideInput;
  expect: {
    /** Reasons by condition type that differ from HEALTHY. */
    reasons: Partial<Record<ConditionType, string>>;
    /** Verbatim messages by condition type. */
    messages?: Partial<Record<ConditionType, string>>;
  };
}

const older = () =>
  ingress("old", { namespace: "team", created: "2026-10-01T00:00:00Z", exposes: [{ ...WEB, aliases: [] }] });

/** Three agent nodes of the ingress (Headscale suffixes the shared host name), the first `online` of them online. */
const replicaNodes = (online: number) =>
  ["grafana", "grafana-1", "grafana-2"].map((name, i) =>
    agentNode({ id: String(9 + i), name, tags: [TAG], online: i < online }),
  );

/** One scrape per agent pod: whether it reaches the backend of expose web. */
const replicaScrapes = (reach: boolean[]) =>
  reach.map((reachable, i) => scraped([{ name: "web", reachable }], `grafana-agent-${i}`));

// One row per reason, in the reasons page order (TagKnown, PolicyGranted, Registered,
// BackendsReachable, TLSReady, then the Ready reasons that come before the ordered blockers).
const rows: Row[] = [
  {
    name: "all healthy (http)",
    input: () => input(),
    expect: {
      reasons: {},
      messages: {
        PolicyGranted: `group:eng may connect to ${TAG} on tcp:443`,
        Registered: `1 node carries ${TAG}: grafana`,
        BackendsReachable: "the agent reaches the backend of the expose",
        TLSReady:
          "the certificate covers the names of the expose; the first expires at 2027-01-01T00:00:00Z (Secret monitoring/grafana-tls)",
        Ready: "serving web on grafana.ts.example.com",
      },
    },
  },
  {
    name: "the live policy cannot be read",
    input: () => input({ policy: failed("GET /api/v1/policy", "connect ECONNREFUSED 127.0.0.1:1") }),
    expect: {
      reasons: { TagKnown: "Unknown", Ready: "TagUnknown" },
      messages: {
        TagKnown: "the live policy could not be read: Headscale GET /api/v1/policy: connect ECONNREFUSED 127.0.0.1:1",
      },
    },
  },
  {
    name: "the tag is not in the live policy's tagOwners yet",
    input: () => input({ policy: ok(policy({ "tag:other": [] })) }),
    expect: { reasons: { TagKnown: "PolicyPending", Ready: "TagUnknown" } },
  },
  {
    name: "no policy is stored in Headscale yet",
    input: () => input({ policy: ok(null) }),
    expect: { reasons: { TagKnown: "PolicyPending", Ready: "TagUnknown" } },
  },
  {
    name: "the Tailnet left the ingress's grant out of the policy (issue 31 item 4)",
    input: () => input({ leftOut: leftOutText() }),
    expect: {
      reasons: { PolicyGranted: "LeftOutOfPolicy", Ready: "LeftOutOfPolicy" },
      messages: { PolicyGranted: leftOutText(), Ready: leftOutText() },
    },
  },
  {
    name: "allowFrom names a source outside the Tailnet's allowedIngressSources",
    input: () => input({ parent: ingress("grafana", { allowFrom: ["group:eng", "group:ops", "autogroup:member"] }) }),
    expect: {
      reasons: { PolicyGranted: "PolicyDenied", Ready: "PolicyDenied" },
      messages: {
        PolicyGranted: `allowFrom group:ops, autogroup:member are not in Tailnet home's allowedIngressSources, so no grant to ${TAG} is rendered`,
      },
    },
  },
  {
    name: "no Headscale node carries the tag",
    input: () => input({ nodes: ok([hsNode({ id: "3", name: "laptop", tags: [] })]) }),
    expect: {
      reasons: { Registered: "NotRegistered", Ready: "NotRegistered" },
      messages: { Registered: `no Headscale node carries ${TAG} yet` },
    },
  },
  {
    name: "the node list cannot be read",
    input: () => input({ nodes: failed("GET /api/v1/node", "500 boom", { status: 500 }) }),
    expect: { reasons: { Registered: "Unknown", Ready: "Unknown" } },
  },
  {
    name: "the agent cannot reach a backend",
    input: () =>
      input({
        scrapes: [
          scraped([
            { name: "web", reachable: false, error: "dial grafana.monitoring.svc.cluster.local:3000: ECONNREFUSED" },
          ]),
        ],
      }),
    expect: {
      reasons: { BackendsReachable: "Unreachable", Ready: "Unreachable" },
      messages: {
        BackendsReachable:
          "the agent cannot reach the backend of expose web (Service monitoring/grafana port 3000): dial grafana.monitoring.svc.cluster.local:3000: ECONNREFUSED",
      },
    },
  },
  {
    name: "the backend Service does not exist",
    input: () =>
      input({ services: new Set(), scrapes: [scraped([{ name: "web", reachable: false, error: "ENOTFOUND" }])] }),
    expect: {
      reasons: { BackendsReachable: "Unreachable", Ready: "Unreachable" },
      messages: {
        BackendsReachable:
          "the agent cannot reach the backend of expose web (Service monitoring/grafana port 3000): ENOTFOUND, and Service monitoring/grafana does not exist",
      },
    },
  },
  {
    name: "the agent pod cannot be scraped",
    input: () => input({ scrapes: [{ ok: false, pod: "grafana-agent-0", error: "GET /status: ECONNREFUSED" }] }),
    expect: {
      reasons: { BackendsReachable: "ProbeFailed", DNSServed: "ProbeFailed", Ready: "ProbeFailed" },
      messages: {
        BackendsReachable:
          "the agent could not be scraped (grafana-agent-0: GET /status: ECONNREFUSED); check the agent pod and its NetworkPolicy (TCP 9080 from the operator namespace)",
        DNSServed: "no agent pod could be scraped (grafana-agent-0: GET /status: ECONNREFUSED)",
      },
    },
  },
  {
    name: "no agent pod runs yet",
    input: () => input({ scrapes: [] }),
    expect: {
      reasons: { BackendsReachable: "ProbeFailed", DNSServed: "ProbeFailed", Ready: "ProbeFailed" },
      messages: {
        BackendsReachable:
          "no pod of agent monitoring/grafana-agent (StatefulSets grafana-agent-<i>) is running yet, so no backend was probed",
        DNSServed: "no agent pod could be scraped",
      },
    },
  },
  {
    name: "the agent does not report the expose (older configuration)",
    input: () => input({ scrapes: [scraped([{ name: "old", reachable: true }])] }),
    expect: {
      reasons: { BackendsReachable: "ProbeFailed", Ready: "ProbeFailed" },
      messages: {
        BackendsReachable: "the agent does not report expose web yet (its pod still runs an older configuration)",
      },
    },
  },
  {
    name: "all healthy (tcp): TLS is not terminated",
    input: () =>
      input({
        parent: tcpIngress("pg"),
        nodes: ok([agentNode({ id: "9", name: "pg", tags: ["tag:k8s-monitoring-pg"] })]),
        policy: ok(policy({ "tag:k8s-monitoring-pg": [] })),
        scrapes: [scraped([{ name: "postgres", reachable: true }])],
        services: new Set(["postgres"]),
        tlsSecrets: new Map(),
      }),
    expect: { reasons: { TLSReady: "TLSNotRequired" } },
  },
  {
    name: "the TLS Secret does not exist",
    input: () => input({ tlsSecrets: new Map() }),
    expect: {
      reasons: { TLSReady: "TLSSecretMissing", Ready: "TLSSecretMissing" },
      messages: { TLSReady: "Secret monitoring/grafana-tls (spec.exposes[0].tls) does not exist" },
    },
  },
  {
    name: "the TLS Secret is not of type kubernetes.io/tls",
    input: () =>
      input({ tlsSecrets: new Map([["grafana-tls", tlsSecret("grafana-tls", certs.good, { type: "Opaque" })]]) }),
    expect: {
      reasons: { TLSReady: "TLSSecretInvalid", Ready: "TLSSecretInvalid" },
      messages: {
        TLSReady: "Secret monitoring/grafana-tls (spec.exposes[0].tls) is of type Opaque, not kubernetes.io/tls",
      },
    },
  },
  {
    name: "the certificate does not cover an alias",
    input: () => input({ tlsSecrets: new Map([["grafana-tls", tlsSecret("grafana-tls", certs.dashOnly)]]) }),
    expect: {
      reasons: { TLSReady: "TLSNameMismatch", Ready: "TLSNameMismatch" },
      messages: {
        TLSReady:
          "the certificate in Secret monitoring/grafana-tls (spec.exposes[0].tls) does not cover grafana-eu.ts.example.com (it covers dash.ts.example.com)",
      },
    },
  },
  {
    name: "the certificate has expired",
    input: () => input({ tlsSecrets: new Map([["grafana-tls", tlsSecret("grafana-tls", certs.expired)]]) }),
    expect: {
      reasons: { TLSReady: "TLSExpired", Ready: "TLSExpired" },
      messages: {
        TLSReady:
          "the certificate in Secret monitoring/grafana-tls (spec.exposes[0].tls) expired at 2026-11-28T00:00:00Z",
      },
    },
  },
  {
    // the one prerequisite Headscale's API cannot show: its dns.extra_records_path (Ready is not held back)
    name: "Headscale does not hand out the published names (no records file read)",
    input: () => input({ scrapes: [scraped([{ name: "web", reachable: true }], "grafana-agent-0", NOT_SERVED)] }),
    expect: {
      reasons: { DNSServed: "NotServed" },
      messages: {
        DNSServed:
          "Headscale does not hand out grafana.ts.example.com (NXDOMAIN), dash.ts.example.com (NXDOMAIN), grafana-eu.ts.example.com (NXDOMAIN) to the agent's node; a new name takes a minute or two (the kubelet updates ConfigMap tailnet-home-dns-records, Headscale reloads the file); if it stays, Headscale does not read that file: check dns.extra_records_path in Headscale's config (docs/troubleshooting.md, \"A name does not resolve\")",
        Ready: "serving web on grafana.ts.example.com",
      },
    },
  },
  {
    name: "Headscale hands out the names, checked on one replica's node of two",
    input: () =>
      input({
        parent: ingress("grafana", { replicas: 2 }),
        nodes: ok(replicaNodes(2)),
        scrapes: [
          scraped([{ name: "web", reachable: true }], "grafana-agent-0", NOT_SERVED),
          scraped([{ name: "web", reachable: true }], "grafana-agent-1"),
        ],
      }),
    expect: {
      reasons: {},
      messages: {
        DNSServed:
          "Headscale hands out grafana.ts.example.com (100.64.0.9), dash.ts.example.com (100.64.0.9), grafana-eu.ts.example.com (100.64.0.9) to the agent's node",
      },
    },
  },
  {
    name: "the agent's tailscaled is not running yet (its resolver has no records to give)",
    input: () => {
      const starting = scraped([{ name: "web", reachable: true }], "grafana-agent-0", NOT_SERVED);
      return input({
        scrapes: [{ ...starting, status: { ...(starting.ok ? starting.status : {}), ready: false } }] as ScrapeResult[],
      });
    },
    expect: {
      reasons: { DNSServed: "ProbeFailed" },
      messages: { DNSServed: "no agent pod's tailscaled is running yet, so its resolver has no records" },
    },
  },
  {
    name: "the agent does not report names (an older agent image)",
    input: () => input({ scrapes: [scraped([{ name: "web", reachable: true }], "grafana-agent-0", null)] }),
    expect: {
      reasons: { DNSServed: "ProbeFailed" },
      messages: { DNSServed: "the agent does not report names (an older agent image)" },
    },
  },
  {
    name: "the agent cannot ask its resolver (tailscaled refuses the LocalAPI call)",
    input: () =>
      input({
        scrapes: [
          scraped([{ name: "web", reachable: true }], "grafana-agent-0", [
            { name: "grafana.ts.example.com", addresses: [], error: "LocalAPI GET /localapi/v0/dns-query: 403" },
          ]),
        ],
      }),
    expect: {
      reasons: { DNSServed: "ProbeFailed" },
      messages: { DNSServed: "the agent could not ask its resolver: LocalAPI GET /localapi/v0/dns-query: 403" },
    },
  },
  {
    name: "the only node carrying the tag is offline",
    input: () => input({ nodes: ok([agentNode({ id: "9", name: "grafana", tags: [TAG], online: false })]) }),
    expect: {
      reasons: { Ready: "NodesOffline" },
      messages: {
        Ready: `the node carrying ${TAG} is offline in Headscale (grafana); check the agent pods and their connection to the control server`,
      },
    },
  },
  {
    name: "replicas 3, every node offline",
    input: () => input({ parent: ingress("grafana", { replicas: 3 }), nodes: ok(replicaNodes(0)) }),
    expect: {
      reasons: { Ready: "NodesOffline" },
      messages: {
        Ready: `all 3 nodes carrying ${TAG} are offline in Headscale (grafana, grafana-1, grafana-2); check the agent pods and their connection to the control server`,
      },
    },
  },
  {
    name: "replicas 3, two nodes online: Ready, and says so",
    input: () =>
      input({
        parent: ingress("grafana", { replicas: 3 }),
        nodes: ok(replicaNodes(2)),
        scrapes: replicaScrapes([true, true]),
      }),
    expect: {
      reasons: {},
      messages: {
        Registered: `3 nodes carry ${TAG}: grafana, grafana-1, grafana-2`,
        Ready: "serving web on grafana.ts.example.com (2 of 3 nodes online)",
      },
    },
  },
  {
    name: "replicas 3, all online",
    input: () =>
      input({
        parent: ingress("grafana", { replicas: 3 }),
        nodes: ok(replicaNodes(3)),
        scrapes: replicaScrapes([true, true, true]),
      }),
    expect: { reasons: {}, messages: { Ready: "serving web on grafana.ts.example.com (3 nodes online)" } },
  },
  {
    name: "replicas 2, one pod cannot reach the backend: still reachable through the other, the message names it",
    input: () =>
      input({
        parent: ingress("grafana", { replicas: 2 }),
        nodes: ok(replicaNodes(2)),
        scrapes: replicaScrapes([true, false]),
      }),
    expect: {
      reasons: {},
      messages: {
        BackendsReachable:
          "the agent reaches the backend of the expose; not web from grafana-agent-1 (dial failed): those pods are not Ready",
      },
    },
  },
  {
    name: "replicas 2, no pod reaches the backend",
    input: () =>
      input({
        parent: ingress("grafana", { replicas: 2 }),
        nodes: ok(replicaNodes(2)),
        scrapes: replicaScrapes([false, false]),
      }),
    expect: { reasons: { BackendsReachable: "Unreachable", Ready: "Unreachable" } },
  },
  {
    name: "one replica, two pods during a rollout, one cannot reach the backend: unreachable (every pod must)",
    input: () => input({ scrapes: replicaScrapes([true, false]) }),
    expect: { reasons: { BackendsReachable: "Unreachable", Ready: "Unreachable" } },
  },
  {
    name: "the Tailnet does not exist",
    input: () => input(NO_TAILNET),
    expect: {
      reasons: {
        TagKnown: "NoTailnet",
        PolicyGranted: "NoTailnet",
        Registered: "NoTailnet",
        TLSReady: "NoTailnet",
        DNSServed: "NoTailnet",
        Ready: "NoTailnet",
      },
      messages: { Ready: 'Tailnet "home" not found', TagKnown: 'not evaluated: Tailnet "home" not found' },
    },
  },
  {
    name: "the Tailnet has not published its credentials",
    input: () => input(NO_API_KEY),
    expect: { reasons: { TagKnown: "NoAPIKey", Registered: "NoAPIKey", DNSServed: "NoAPIKey", Ready: "NoAPIKey" } },
  },
  {
    name: "its TailnetProxyClass does not exist",
    input: () => input(NO_PROXY_CLASS),
    expect: {
      reasons: {
        TagKnown: "ProxyClassMissing",
        Registered: "ProxyClassMissing",
        DNSServed: "ProxyClassMissing",
        Ready: "ProxyClassMissing",
      },
    },
  },
  ...(["NamespaceNotAllowed", "TagNotGranted", "TagInUse"] as const).map((reason) => ({
    name: `refused by the Tailnet's tenancy: ${reason}`,
    input: () =>
      input({
        ...NO_PROXY_CLASS,
        tailnet: {
          ok: false as const,
          reason,
          message: `refused: ${reason}`,
          settings: (NO_PROXY_CLASS.tailnet as { settings: TailnetSettings }).settings,
        },
      }),
    expect: { reasons: { TagKnown: reason, Registered: reason, DNSServed: reason, Ready: reason } },
  })),
  {
    name: "a host is not a DNS label",
    input: () =>
      input({ parent: ingress("grafana", { exposes: [{ ...WEB, host: "Dash", aliases: ["eu.grafana"] }] }) }),
    expect: {
      reasons: { TLSReady: "TLSNameMismatch", DNSServed: "NothingPublished", Ready: "InvalidDNSName" },
      messages: {
        Ready:
          'not a DNS label: spec.exposes[0].host "Dash", spec.exposes[0].aliases[0] "eu.grafana" (a host or alias is one lower-case label; the Tailnet\'s baseDomain is appended); nothing is published',
      },
    },
  },
  {
    name: "a host is the name of another machine (a user's node named dash)",
    input: () =>
      input({
        nodes: ok([agentNode({ id: "9", name: "grafana", tags: [TAG] }), hsNode({ id: "3", name: "Dash" })]),
      }),
    expect: {
      reasons: { Ready: "DNSNameReserved" },
      messages: {
        Ready:
          "the name of another machine: dash.ts.example.com (Headscale node 3); a record under it would take that machine's connections, so these names are not published for this ingress",
      },
    },
  },
  {
    name: "an older ingress already claims a name",
    input: () => {
      const parent = ingress();
      return input({ parent, ingresses: [older(), parent] });
    },
    expect: {
      reasons: { Ready: "DNSNameConflict" },
      messages: {
        Ready:
          "already claimed by an older TailnetIngress: dash.ts.example.com (team/old); these names are not published for this ingress",
      },
    },
  },
];

/** Ready's message is the first blocker's (the ordered conditions'), except for the Tailnet's own reasons. */
function assertReadyRepeats(got: Map<string, ConditionInput>): void {
  const ready = got.get("Ready");
  const ordered = ["Registered", "PolicyGranted", "TLSReady", "BackendsReachable"];
  const blocker = ordered.map((t) => got.get(t)).find((c) => c?.status !== "True" && c?.reason === ready?.reason);
  const fromTailnet = [
    "NoTailnet",
    "NoAPIKey",
    "ProxyClassMissing",
    "NamespaceNotAllowed",
    "TagNotGranted",
    "TagInUse",
  ].includes(ready?.reason ?? "");
  if (ready?.status !== "True" && blocker && !fromTailnet) assert.equal(ready?.message, blocker.message);
}

describe("decideIngress: one row per reason", () => {
  for (const row of rows) {
    it(row.name, () => {
      const i = row.input();
      const got = conditionsOf(i);
      const want: Record<string, string> = { ...HEALTHY, ...row.expect.reasons };
      if (i.spec.mode === "tcp") want.TLSReady = row.expect.reasons.TLSReady ?? "TLSNotRequired";
      // NodeIdentity has its own rows (identityInputs) and its own tests (e2e-identity.test.ts)
      const byType = Object.fromEntries([...got].filter(([t]) => t !== "NodeIdentity").map(([t, c]) => [t, c.reason]));
      assert.deepEqual(byType, want, "reasons by condition type");
      for (const [type, message] of Object.entries(row.expect.messages ?? {})) {
        assert.equal(got.get(type)?.message, message, `${type} message`);
      }
      assertReadyRepeats(got);
      for (const c of got.values()) assert.doesNotMatch(c.message, /hskey|BEGIN|PRIVATE/, "no key material");
    });
  }
});

// The Ready staircase: each step fixes the blocker the previous one reported, so Ready walks
// NoTailnet → NoAPIKey → TagUnknown → InvalidDNSName → DNSNameConflict → Registered → PolicyGranted
// → TLSReady → BackendsReachable → Ready. Each step's input is built from scratch (no mutated world).
const broken = () => ingress("grafana", { allowFrom: ["group:ops"], exposes: [{ ...WEB, host: "Dash" }] });
const fixedName = () => ingress("grafana", { allowFrom: ["group:ops"] });

/** The input after the first `fixed` fixes. */
function stair(fixed: number): IngressDecideInput {
  const parent = fixed < 4 ? broken() : fixed < 7 ? fixedName() : ingress("grafana");
  const tailnetOver: Over = fixed === 0 ? NO_TAILNET : fixed === 1 ? NO_API_KEY : {};
  return {
    ...input({
      parent,
      ingresses: fixed < 5 ? [older(), parent] : [parent],
      policy: ok(policy(fixed < 3 ? {} : { [TAG]: [] })),
      nodes: ok(fixed < 6 ? [] : [agentNode({ id: "9", name: "grafana", tags: [TAG] })]),
      tlsSecrets: fixed < 8 ? new Map() : new Map([["grafana-tls", tlsSecret("grafana-tls", certs.good)]]),
      scrapes: [scraped([{ name: "web", reachable: fixed >= 9, error: "ECONNREFUSED" }])],
      authKey: {},
      ...tailnetOver,
    }),
    spec: readIngressSpec(parent),
  };
}

const STAIRS = [
  "NoTailnet",
  "NoAPIKey",
  "TagUnknown",
  "InvalidDNSName",
  "DNSNameConflict",
  "NotRegistered",
  "PolicyDenied",
  "TLSSecretMissing",
  "Unreachable",
  "Ready",
];

const staircase: Row[] = STAIRS.map((reason, fixed) => ({
  name: `staircase step ${fixed}: Ready is ${reason}`,
  input: () => stair(fixed),
  expect: { reasons: { Ready: reason } },
}));

describe("decideIngress: the Ready staircase", () => {
  for (const row of staircase) {
    it(row.name, () => {
      const ready = conditionsOf(row.input()).get("Ready");
      assert.equal(ready?.reason, row.expect.reasons.Ready);
      assert.equal(ready?.status, row.expect.reasons.Ready === "Ready" ? "True" : "False");
    });
  }
});

describe("decideIngress: conditions", () => {
  it("lists conditions in the api.md order, Unknown never True without an observation", () => {
    const d = decideIngress(input({ scrapes: [], nodes: failed("GET /api/v1/node", "timeout") }));
    assert.deepEqual(
      d.conditions.map((c) => c.type),
      [
        "TagKnown",
        "PolicyGranted",
        "Registered",
        "BackendsReachable",
        "TLSReady",
        "DNSServed",
        "NodeIdentity",
        "Ready",
      ],
    );
    const byType = new Map(d.conditions.map((c) => [c.type, c.status]));
    assert.equal(byType.get("Registered"), "Unknown");
    assert.equal(byType.get("BackendsReachable"), "Unknown");
    assert.equal(byType.get("DNSServed"), "Unknown");
  });

  it("the rows and the InvalidSpec answer produce exactly the (condition, reason, status) triples of INGRESS_REASONS", () => {
    const invalid = invalidSpecConditions(
      ingress(),
      "Ready",
      ingressConditions.types,
      "spec.exposes[0].tls: required in mode http (secretName, issuerRef, or {} for the Tailnet's spec.certificates.issuerRef)",
    );
    assertCoversTable(INGRESS_REASONS, [
      ...[...rows, ...staircase].map((r) => decideIngress(r.input()).conditions),
      ...identityInputs(certs.good).map((r) => decideIngress(r.input).conditions),
      ...certificateRows(() => certs).map((r) => decideIngress(r.input()).conditions),
      // a backend in another namespace (grants.test.ts)
      ...grantRows(input).map((r) => decideIngress(r.input()).conditions),
      invalid,
    ]);
  });
});
