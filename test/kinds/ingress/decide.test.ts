import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { decideIngress, type IngressInput } from "../../../src/kinds/ingress/decide.js";
import { readIngressSpec } from "../../../src/kinds/ingress/spec.js";
import { tailnetSettings } from "../../../src/kinds/shared/workload.js";
import { failed, hsNode, ok, policy } from "../shared/fixtures.js";
import { ingress, LOGIN, scraped, TAG, tailnet, tcpIngress, tlsSecret, WEB } from "./fixtures.js";
import { type Certificates, certificates, conditionsOf, healthyInput, type Over } from "./inputs.js";

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
  Ready: "Ready",
};

interface Row {
  name: string;
  input: () => IngressInput;
  want: Partial<typeof HEALTHY>;
  /** Verbatim messages by condition type. */
  messages?: Record<string, string>;
}

const older = () =>
  ingress("old", { namespace: "team", created: "2026-10-01T00:00:00Z", exposes: [{ ...WEB, aliases: [] }] });

// One row per reason, in the reasons page order (TagKnown, PolicyGranted, Registered,
// BackendsReachable, TLSReady, then the Ready reasons that come before the ordered blockers).
const rows: Row[] = [
  {
    name: "all healthy (http)",
    input: () => input(),
    want: {},
    messages: {
      PolicyGranted: `group:eng may connect to ${TAG} on tcp:443`,
      Registered: `1 node carries ${TAG}: grafana`,
      BackendsReachable: "the agent reaches the backend of the expose",
      TLSReady:
        "the certificate covers the names of the expose; the first expires at 2027-01-01T00:00:00Z (Secret monitoring/grafana-tls)",
      Ready: "serving web on grafana.ts.example.com",
    },
  },
  {
    name: "the live policy cannot be read",
    input: () => input({ policy: failed("GET /api/v1/policy", "connect ECONNREFUSED 127.0.0.1:1") }),
    want: { TagKnown: "Unknown", Ready: "TagUnknown" },
    messages: {
      TagKnown: "the live policy could not be read: Headscale GET /api/v1/policy: connect ECONNREFUSED 127.0.0.1:1",
    },
  },
  {
    name: "the tag is not in the live policy's tagOwners yet",
    input: () => input({ policy: ok(policy({ "tag:other": [] })) }),
    want: { TagKnown: "PolicyPending", Ready: "TagUnknown" },
  },
  {
    name: "no policy is stored in Headscale yet",
    input: () => input({ policy: ok(null) }),
    want: { TagKnown: "PolicyPending", Ready: "TagUnknown" },
  },
  {
    name: "allowFrom names a source outside the Tailnet's allowedIngressSources",
    input: () => input({ parent: ingress("grafana", { allowFrom: ["group:eng", "group:ops", "autogroup:member"] }) }),
    want: { PolicyGranted: "PolicyDenied", Ready: "PolicyDenied" },
    messages: {
      PolicyGranted: `allowFrom group:ops, autogroup:member are not in Tailnet home's allowedIngressSources, so no grant to ${TAG} is rendered`,
    },
  },
  {
    name: "no Headscale node carries the tag",
    input: () => input({ nodes: ok([hsNode({ id: "3", name: "laptop", tags: [] })]) }),
    want: { Registered: "NotRegistered", Ready: "NotRegistered" },
    messages: { Registered: `no Headscale node carries ${TAG} yet` },
  },
  {
    name: "the node list cannot be read",
    input: () => input({ nodes: failed("GET /api/v1/node", "500 boom", { status: 500 }) }),
    want: { Registered: "Unknown", Ready: "Unknown" },
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
    want: { BackendsReachable: "Unreachable", Ready: "Unreachable" },
    messages: {
      BackendsReachable:
        "the agent cannot reach the backend of expose web (Service monitoring/grafana port 3000): dial grafana.monitoring.svc.cluster.local:3000: ECONNREFUSED",
    },
  },
  {
    name: "the backend Service does not exist",
    input: () =>
      input({ services: new Set(), scrapes: [scraped([{ name: "web", reachable: false, error: "ENOTFOUND" }])] }),
    want: { BackendsReachable: "Unreachable", Ready: "Unreachable" },
    messages: {
      BackendsReachable:
        "the agent cannot reach the backend of expose web (Service monitoring/grafana port 3000): ENOTFOUND, and Service monitoring/grafana does not exist",
    },
  },
  {
    name: "the agent pod cannot be scraped",
    input: () => input({ scrapes: [{ ok: false, pod: "grafana-agent-0", error: "GET /status: ECONNREFUSED" }] }),
    want: { BackendsReachable: "ProbeFailed", Ready: "ProbeFailed" },
    messages: {
      BackendsReachable:
        "the agent could not be scraped (grafana-agent-0: GET /status: ECONNREFUSED); check the agent pod and its NetworkPolicy (TCP 9080 from the operator namespace)",
    },
  },
  {
    name: "no agent pod runs yet",
    input: () => input({ scrapes: [] }),
    want: { BackendsReachable: "ProbeFailed", Ready: "ProbeFailed" },
    messages: {
      BackendsReachable: "no agent pod of Deployment monitoring/grafana-agent is running yet, so no backend was probed",
    },
  },
  {
    name: "the agent does not report the expose (older configuration)",
    input: () => input({ scrapes: [scraped([{ name: "old", reachable: true }])] }),
    want: { BackendsReachable: "ProbeFailed", Ready: "ProbeFailed" },
    messages: {
      BackendsReachable: "the agent does not report expose web yet (its pod still runs an older configuration)",
    },
  },
  {
    name: "all healthy (tcp): TLS is not terminated",
    input: () =>
      input({
        parent: tcpIngress("pg"),
        nodes: ok([hsNode({ id: "9", name: "pg", tags: ["tag:k8s-monitoring-pg"] })]),
        policy: ok(policy({ "tag:k8s-monitoring-pg": [] })),
        scrapes: [scraped([{ name: "postgres", reachable: true }])],
        services: new Set(["postgres"]),
        tlsSecrets: new Map(),
      }),
    want: { TLSReady: "TLSNotRequired" },
  },
  {
    name: "the TLS Secret does not exist",
    input: () => input({ tlsSecrets: new Map() }),
    want: { TLSReady: "TLSSecretMissing", Ready: "TLSSecretMissing" },
    messages: { TLSReady: "Secret monitoring/grafana-tls (spec.exposes[0].tls) does not exist" },
  },
  {
    name: "the TLS Secret is not of type kubernetes.io/tls",
    input: () =>
      input({ tlsSecrets: new Map([["grafana-tls", tlsSecret("grafana-tls", certs.good, { type: "Opaque" })]]) }),
    want: { TLSReady: "TLSSecretInvalid", Ready: "TLSSecretInvalid" },
    messages: {
      TLSReady: "Secret monitoring/grafana-tls (spec.exposes[0].tls) is of type Opaque, not kubernetes.io/tls",
    },
  },
  {
    name: "the certificate does not cover an alias",
    input: () => input({ tlsSecrets: new Map([["grafana-tls", tlsSecret("grafana-tls", certs.dashOnly)]]) }),
    want: { TLSReady: "TLSNameMismatch", Ready: "TLSNameMismatch" },
    messages: {
      TLSReady:
        "the certificate in Secret monitoring/grafana-tls (spec.exposes[0].tls) does not cover grafana-eu.ts.example.com (it covers dash.ts.example.com)",
    },
  },
  {
    name: "the certificate has expired",
    input: () => input({ tlsSecrets: new Map([["grafana-tls", tlsSecret("grafana-tls", certs.expired)]]) }),
    want: { TLSReady: "TLSExpired", Ready: "TLSExpired" },
    messages: {
      TLSReady:
        "the certificate in Secret monitoring/grafana-tls (spec.exposes[0].tls) expired at 2026-11-28T00:00:00Z",
    },
  },
  {
    name: "the Tailnet does not exist",
    input: () =>
      input({
        tailnet: { ok: false, reason: "NoTailnet", message: 'Tailnet "home" not found' },
        policy: undefined,
        nodes: undefined,
        authKey: {},
      }),
    want: {
      TagKnown: "NoTailnet",
      PolicyGranted: "NoTailnet",
      Registered: "NoTailnet",
      TLSReady: "NoTailnet",
      Ready: "NoTailnet",
    },
    messages: { Ready: 'Tailnet "home" not found', TagKnown: 'not evaluated: Tailnet "home" not found' },
  },
  {
    name: "the Tailnet has not published its credentials",
    input: () =>
      input({
        tailnet: {
          ok: false,
          reason: "NoAPIKey",
          message: "Secret tailnet-system/tailnet-home-credentials not found yet",
          settings: tailnetSettings(tailnet()),
        },
        policy: undefined,
        nodes: undefined,
        authKey: {},
      }),
    want: { TagKnown: "NoAPIKey", Registered: "NoAPIKey", Ready: "NoAPIKey" },
  },
  {
    name: "a host is not a DNS label",
    input: () =>
      input({ parent: ingress("grafana", { exposes: [{ ...WEB, host: "Dash", aliases: ["eu.grafana"] }] }) }),
    want: { TLSReady: "TLSNameMismatch", Ready: "InvalidDNSName" },
    messages: {
      Ready:
        'not a DNS label: spec.exposes[0].host "Dash", spec.exposes[0].aliases[0] "eu.grafana" (a host or alias is one lower-case label; the Tailnet\'s baseDomain is appended); nothing is published',
    },
  },
  {
    name: "an older ingress already claims a name",
    input: () => {
      const parent = ingress();
      return input({ parent, ingresses: [older(), parent] });
    },
    want: { Ready: "DNSNameConflict" },
    messages: {
      Ready:
        "already claimed by an older TailnetIngress: dash.ts.example.com (team/old); these names are not published for this ingress",
    },
  },
];

describe("decideIngress: one row per reason", () => {
  for (const row of rows) {
    it(row.name, () => {
      const i = row.input();
      const got = conditionsOf(i);
      const want = { ...HEALTHY, ...row.want };
      if (i.spec.mode === "tcp") want.TLSReady = row.want.TLSReady ?? "TLSNotRequired";
      assert.deepEqual(Object.fromEntries([...got].map(([t, c]) => [t, c.reason])), want, "reasons by condition type");
      for (const [type, message] of Object.entries(row.messages ?? {})) {
        assert.equal(got.get(type)?.message, message, `${type} message`);
      }
      const ready = got.get("Ready");
      const ordered = ["Registered", "PolicyGranted", "TLSReady", "BackendsReachable"];
      const blocker = ordered.map((t) => got.get(t)).find((c) => c?.status !== "True" && c?.reason === ready?.reason);
      const fromTailnet = ready?.reason === "NoTailnet" || ready?.reason === "NoAPIKey";
      if (ready?.status !== "True" && blocker && !fromTailnet)
        assert.equal(ready?.message, blocker.message, "Ready repeats it");
      for (const c of got.values()) assert.doesNotMatch(c.message, /hskey|BEGIN|PRIVATE/, "no key material");
    });
  }

  it("lists conditions in the api.md order, Unknown never True without an observation", () => {
    const d = decideIngress(input({ scrapes: [], nodes: failed("GET /api/v1/node", "timeout") }));
    assert.deepEqual(
      d.conditions.map((c) => c.type),
      ["TagKnown", "PolicyGranted", "Registered", "BackendsReachable", "TLSReady", "Ready"],
    );
    const byType = new Map(d.conditions.map((c) => [c.type, c.status]));
    assert.equal(byType.get("Registered"), "Unknown");
    assert.equal(byType.get("BackendsReachable"), "Unknown");
  });
});

describe("decideIngress: the Ready staircase", () => {
  it("walks NoTailnet → … → DNSNameConflict → Registered → PolicyGranted → TLSReady → BackendsReachable → Ready", () => {
    const parent = ingress("grafana", { allowFrom: ["group:ops"], exposes: [{ ...WEB, host: "Dash" }] });
    const fixed = ingress("grafana", { allowFrom: ["group:ops"] });
    let i = input({
      parent,
      tailnet: { ok: false, reason: "NoTailnet", message: 'Tailnet "home" not found' },
      policy: undefined,
      nodes: undefined,
      ingresses: [older(), parent],
      tlsSecrets: new Map(),
      scrapes: [scraped([{ name: "web", reachable: false, error: "ECONNREFUSED" }])],
      authKey: {},
    });
    const steps: [string, (x: IngressInput) => IngressInput][] = [
      [
        "NoAPIKey",
        (x) => ({
          ...x,
          tailnet: { ok: false, reason: "NoAPIKey", message: "no credentials", settings: tailnetSettings(tailnet()) },
        }),
      ],
      [
        "TagUnknown",
        (x) => ({
          ...x,
          tailnet: { ok: true, settings: tailnetSettings(tailnet()), loginServer: LOGIN },
          policy: ok(policy({})),
          nodes: ok([]),
        }),
      ],
      ["InvalidDNSName", (x) => ({ ...x, policy: ok(policy({ [TAG]: [] })) })],
      ["DNSNameConflict", (x) => ({ ...x, parent: fixed, spec: readIngressSpec(fixed) })],
      ["NotRegistered", (x) => ({ ...x, ingresses: [fixed] })],
      ["PolicyDenied", (x) => ({ ...x, nodes: ok([hsNode({ id: "9", name: "grafana", tags: [TAG] })]) })],
      [
        "TLSSecretMissing",
        (x) => {
          const p = ingress("grafana");
          return { ...x, parent: p, spec: readIngressSpec(p), ingresses: [p] };
        },
      ],
      ["Unreachable", (x) => ({ ...x, tlsSecrets: new Map([["grafana-tls", tlsSecret("grafana-tls", certs.good)]]) })],
      ["Ready", (x) => ({ ...x, scrapes: [scraped([{ name: "web", reachable: true }])] })],
    ];
    const seen = [conditionsOf(i).get("Ready")?.reason];
    for (const [want, step] of steps) {
      i = step(i);
      const ready = conditionsOf(i).get("Ready");
      assert.equal(ready?.reason, want);
      assert.equal(ready?.status, want === "Ready" ? "True" : "False");
      seen.push(ready?.reason);
    }
    assert.deepEqual(seen, [
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
    ]);
  });
});
