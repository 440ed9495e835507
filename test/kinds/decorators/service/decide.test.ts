/**
 * The annotated-Service decision, table-driven over the real decide input (ServiceObservation):
 * every row reads the Service's annotations, plans and decides exactly as the hook does.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { SERVICE_REASONS } from "../../../../src/conditions/tables/service.js";
import type { Role } from "../../../../src/kinds/decorators/service/annotations.js";
import {
  decideLoadBalancer,
  decideService,
  decideServiceFinalize,
} from "../../../../src/kinds/decorators/service/decide.js";
import { readLoadBalancerSpec } from "../../../../src/kinds/decorators/service/loadbalancer.js";
import type { ServiceObservation } from "../../../../src/kinds/decorators/service/observe.js";
import { planService } from "../../../../src/kinds/decorators/service/plan.js";
import { readServiceSpec } from "../../../../src/kinds/decorators/service/spec.js";
import { assertCoversTable } from "../../../helpers/reason-coverage.js";
import { GRAFANA_INGRESS_SPEC, input, lbService, observed, ready, service, tailnet, UID } from "./fixtures.js";

interface Row {
  name: string;
  role?: Role;
  /** A LoadBalancer Service of our class: read and decided as service-loadbalancer does. */
  lb?: boolean;
  input: ServiceObservation;
  expect: {
    status: string;
    reason: string;
    /** kind/name of every attachment answered. */
    attachments: string[];
    message?: RegExp;
    address?: string | null;
  };
}

const T = "tailnet.internal";
const target = (host: string, extra: Record<string, string> = {}) => ({ [`${T}/target`]: host, ...extra });
const EGRESS_SPEC = {
  tailnetRef: { name: "home" },
  targets: [{ name: "db-tailnet", host: "db-1", ports: [{ port: 5432, protocol: "TCP" }] }],
};
const dbService = (o: Parameters<typeof service>[0] = {}) =>
  service({
    name: "db",
    annotations: target("db-1"),
    ports: [{ name: "pg", port: 5432 }],
    type: "ExternalName",
    externalName: "db-tailnet.monitoring.svc.cluster.local",
    ...o,
  });
const mine = (status?: Record<string, unknown>, extra: Partial<Parameters<typeof observed>[1]> = {}) =>
  observed("TailnetIngress", { spec: GRAFANA_INGRESS_SPEC, ownerUid: UID, ...(status ? { status } : {}), ...extra });

const rows: Row[] = [
  {
    name: "a new exposed Service gets its TailnetIngress, Pending until it reports",
    input: input(),
    expect: { status: "Unknown", reason: "Pending", attachments: ["TailnetIngress/grafana"], message: /being created/ },
  },
  {
    name: "the attachment Ready=True → Ready with its DNS name written back",
    input: input({ attachments: [mine({ dnsName: "grafana.ts.example.com", ...ready("True", "Ready") })] }),
    expect: {
      status: "True",
      reason: "Ready",
      attachments: ["TailnetIngress/grafana"],
      message: /as grafana\.ts\.example\.com/,
      address: "grafana.ts.example.com",
    },
  },
  {
    name: "the attachment Ready=False → NotReady repeating its reason and message",
    input: input({ attachments: [mine(ready("False", "NotRegistered", "the agent node has not registered"))] }),
    expect: {
      status: "False",
      reason: "NotReady",
      attachments: ["TailnetIngress/grafana"],
      message: /TailnetIngress monitoring\/grafana: NotRegistered: the agent node has not registered/,
    },
  },
  {
    name: "the attachment's name is another machine's (DNSNameReserved) → HostnameReserved, the attachment kept",
    input: input({
      attachments: [
        mine(
          ready(
            "False",
            "DNSNameReserved",
            "the name of another machine: grafana.ts.example.com (Headscale node 3); a record under it would take that machine's connections, so these names are not published for this ingress",
          ),
        ),
      ],
    }),
    expect: {
      status: "False",
      reason: "HostnameReserved",
      attachments: ["TailnetIngress/grafana"],
      message:
        /^hostname grafana is the name of another machine \(TailnetIngress monitoring\/grafana: the name of another machine: grafana\.ts\.example\.com \(Headscale node 3\);.*\); nothing is published under it: set tailnet\.internal\/hostname$/,
      address: null,
    },
  },
  {
    name: "the attachment refused by tenancy (TagNotGranted) → TagNotGranted on the Service, the attachment kept",
    input: input({
      attachments: [
        mine(
          ready(
            "False",
            "TagNotGranted",
            "tag:db is not granted to namespace monitoring (the Tailnet's spec.tenancy.tags); nothing is minted for it",
          ),
        ),
      ],
    }),
    expect: {
      status: "False",
      reason: "TagNotGranted",
      attachments: ["TailnetIngress/grafana"],
      message: /^TailnetIngress monitoring\/grafana: tag:db /,
    },
  },
  {
    name: "the attachment refused by tenancy (TagInUse) → TagInUse on the Service, the attachment kept",
    input: input({
      attachments: [
        mine(
          ready(
            "False",
            "TagInUse",
            "tag:db is carried by db-srv, which this ingress did not register; a tag has one owner, so nothing is minted for it",
          ),
        ),
      ],
    }),
    expect: {
      status: "False",
      reason: "TagInUse",
      attachments: ["TailnetIngress/grafana"],
      message: /^TailnetIngress monitoring\/grafana: tag:db /,
    },
  },
  {
    name: "the attachment refused by tenancy (NamespaceNotAllowed) → NamespaceNotAllowed on the Service, the attachment kept",
    input: input({
      attachments: [
        mine(
          ready(
            "False",
            "NamespaceNotAllowed",
            "namespace monitoring is not selected by the Tailnet's spec.tenancy.namespaceSelector",
          ),
        ),
      ],
    }),
    expect: {
      status: "False",
      reason: "NamespaceNotAllowed",
      attachments: ["TailnetIngress/grafana"],
      message: /^TailnetIngress monitoring\/grafana: namespace /,
    },
  },
  {
    name: "the attachment reports on an older generation → Pending",
    input: input({ attachments: [mine(ready("True", "Ready", "", 1), { generation: 2 })] }),
    expect: { status: "Unknown", reason: "Pending", attachments: ["TailnetIngress/grafana"], message: /current spec/ },
  },
  {
    name: "the attachment Ready=Unknown → Pending with its reason",
    input: input({ attachments: [mine(ready("Unknown", "ProbeFailed", "no scrape"))] }),
    expect: { status: "Unknown", reason: "Pending", attachments: ["TailnetIngress/grafana"], message: /ProbeFailed/ },
  },
  {
    name: "a changed annotation (new hostname) updates the attachment: Pending",
    input: input({
      service: service({ annotations: { [`${T}/expose`]: "true", [`${T}/hostname`]: "dash" } }),
      attachments: [mine(ready("True", "Ready"))],
    }),
    expect: { status: "Unknown", reason: "Pending", attachments: ["TailnetIngress/grafana"], message: /being updated/ },
  },
  {
    name: "expose and target both set → ConflictingAnnotations, no attachment (an existing one goes)",
    input: input({
      service: service({ annotations: { [`${T}/expose`]: "true", [`${T}/target`]: "db-1" } }),
      attachments: [mine(ready("True", "Ready"))],
    }),
    expect: { status: "False", reason: "ConflictingAnnotations", attachments: [], message: /both set/ },
  },
  {
    name: "an invalid hostname → InvalidAnnotation naming it",
    input: input({ service: service({ annotations: { [`${T}/expose`]: "true", [`${T}/hostname`]: "Not_A_Name" } }) }),
    expect: { status: "False", reason: "InvalidAnnotation", attachments: [], message: /^tailnet\.internal\/hostname:/ },
  },
  {
    name: "two tags → InvalidAnnotation (the agent node carries one)",
    input: input({
      service: service({ annotations: { [`${T}/expose`]: "true", [`${T}/tags`]: "tag:a, tag:b" } }),
    }),
    expect: { status: "False", reason: "InvalidAnnotation", attachments: [], message: /one tag only/ },
  },
  {
    name: "only UDP ports → UnsupportedPorts",
    input: input({ service: service({ ports: [{ name: "dns", port: 53, protocol: "UDP" }] }) }),
    expect: { status: "False", reason: "UnsupportedPorts", attachments: [], message: /no TCP port/ },
  },
  {
    name: "a named Tailnet that does not exist → NoTailnet, nothing attached",
    input: input({
      service: service({ annotations: { [`${T}/expose`]: "true", [`${T}/tailnet`]: "work" } }),
    }),
    expect: { status: "False", reason: "NoTailnet", attachments: [], message: /Tailnet "work"/ },
  },
  {
    name: "the Tailnet disappears: NoTailnet, the existing attachment is kept as it was",
    input: input({ tailnets: [], attachments: [mine(ready("False", "NoTailnet"))] }),
    expect: {
      status: "False",
      reason: "NoTailnet",
      attachments: ["TailnetIngress/grafana"],
      message: /no Tailnet exists/,
    },
  },
  {
    name: "two Tailnets and none named → AmbiguousTailnet",
    input: input({ tailnets: [tailnet("home"), tailnet("work")] }),
    expect: {
      status: "False",
      reason: "AmbiguousTailnet",
      attachments: [],
      message: /2 Tailnets exist \(home, work\)/,
    },
  },
  {
    name: "two Tailnets, one named → its attachment",
    input: input({
      tailnets: [tailnet("home"), tailnet("work")],
      service: service({ annotations: { [`${T}/expose`]: "true", [`${T}/tailnet`]: "work" } }),
    }),
    expect: { status: "Unknown", reason: "Pending", attachments: ["TailnetIngress/grafana"] },
  },
  {
    name: "a TailnetIngress of the same name that is not the Service's → NameTaken",
    input: input({ ingresses: [observed("TailnetIngress", { spec: { ...GRAFANA_INGRESS_SPEC, hostname: "other" } })] }),
    expect: {
      status: "False",
      reason: "NameTaken",
      attachments: [],
      message: /TailnetIngress monitoring\/grafana already exists/,
    },
  },
  {
    name: "another Service already exposes the hostname (annotated twice) → HostnameTaken",
    input: input({
      service: service({ name: "grafana-2", annotations: { [`${T}/expose`]: "true", [`${T}/hostname`]: "grafana" } }),
      ingresses: [mine(ready("True", "Ready"), { ownerUid: "other-service" })],
    }),
    expect: {
      status: "False",
      reason: "HostnameTaken",
      attachments: [],
      message: /grafana\.ts\.example\.com\) is already claimed by TailnetIngress monitoring\/grafana/,
    },
  },
  {
    name: "the same hostname in another namespace, with tenancy.dns.flatNamespaces: each under its own subtree, no HostnameTaken",
    input: input({
      service: service({ name: "grafana-2", annotations: { [`${T}/expose`]: "true", [`${T}/hostname`]: "grafana" } }),
      tailnets: [{ ...tailnet(), spec: { ...(tailnet().spec as object), tenancy: { dns: { flatNamespaces: [] } } } }],
      ingresses: [mine(ready("True", "Ready"), { ownerUid: "other-service", namespace: "elsewhere" })],
    }),
    expect: { status: "Unknown", reason: "Pending", attachments: ["TailnetIngress/grafana-2"] },
  },
  {
    name: "own older ingress keeps its hostname against a newer one",
    input: input({
      attachments: [mine(ready("True", "Ready"), { created: "2026-11-02T00:00:00Z" })],
      ingresses: [
        mine(ready("True", "Ready"), { created: "2026-11-02T00:00:00Z" }),
        observed("TailnetIngress", { name: "late", spec: GRAFANA_INGRESS_SPEC, created: "2026-11-03T00:00:00Z" }),
      ],
    }),
    expect: { status: "True", reason: "Ready", attachments: ["TailnetIngress/grafana"] },
  },
  {
    name: "target: a new egress Service gets its TailnetEgress and the in-cluster address",
    role: "target",
    input: input({ service: dbService() }),
    expect: {
      status: "Unknown",
      reason: "Pending",
      attachments: ["TailnetEgress/db"],
      address: "db-tailnet.monitoring.svc.cluster.local",
    },
  },
  {
    name: "target: the egress Ready → Ready",
    role: "target",
    input: input({
      service: dbService(),
      attachments: [
        observed("TailnetEgress", { name: "db", spec: EGRESS_SPEC, ownerUid: UID, status: ready("True", "Ready") }),
      ],
    }),
    expect: {
      status: "True",
      reason: "Ready",
      attachments: ["TailnetEgress/db"],
      message: /db-1 reachable from the cluster/,
    },
  },
  {
    name: "target: an ExternalName pointing elsewhere → ExternalNameMismatch, the egress stays",
    role: "target",
    input: input({ service: dbService({ externalName: "placeholder" }) }),
    expect: {
      status: "False",
      reason: "ExternalNameMismatch",
      attachments: ["TailnetEgress/db"],
      message: /set it to db-tailnet\.monitoring\.svc\.cluster\.local/,
    },
  },
  {
    name: "target: allow-from is for expose only → InvalidAnnotation",
    role: "target",
    input: input({ service: dbService({ annotations: target("db-1", { [`${T}/allow-from`]: "group:eng" }) }) }),
    expect: { status: "False", reason: "InvalidAnnotation", attachments: [], message: /allow-from: applies to/ },
  },
  {
    name: "target: a TailnetEgress of the same name that is not the Service's → NameTaken",
    role: "target",
    input: input({ service: dbService(), egresses: [observed("TailnetEgress", { name: "db", spec: EGRESS_SPEC })] }),
    expect: { status: "False", reason: "NameTaken", attachments: [] },
  },
  {
    name: "target: 17 TCP ports → UnsupportedPorts (an egress target forwards at most 16)",
    role: "target",
    input: input({
      service: dbService({ ports: Array.from({ length: 17 }, (_, i) => ({ port: 5000 + i })) }),
    }),
    expect: { status: "False", reason: "UnsupportedPorts", attachments: [], message: /at most 16/ },
  },
  {
    name: "loadBalancerClass tailnet.internal/tailnet, no annotation: exposed like expose: true",
    lb: true,
    input: input({ service: lbService() }),
    expect: { status: "Unknown", reason: "Pending", attachments: ["TailnetIngress/grafana"], message: /being created/ },
  },
  {
    name: "class + expose: true (redundant) → one exposure, the class's",
    lb: true,
    input: input({
      service: lbService({ annotations: { [`${T}/expose`]: "true" } }),
      attachments: [mine({ dnsName: "grafana.ts.example.com", ...ready("True", "Ready") })],
    }),
    expect: {
      status: "True",
      reason: "Ready",
      attachments: ["TailnetIngress/grafana"],
      address: "grafana.ts.example.com",
    },
  },
  {
    name: "class + expose: false → ConflictingAnnotations (the class cannot be changed; the annotation can)",
    lb: true,
    input: input({ service: lbService({ annotations: { [`${T}/expose`]: "false" } }) }),
    expect: { status: "False", reason: "ConflictingAnnotations", attachments: [], message: /remove the annotation/ },
  },
  {
    name: "class + target → ConflictingAnnotations, an existing attachment is dropped",
    lb: true,
    input: input({
      service: lbService({ annotations: { [`${T}/target`]: "db-1" } }),
      attachments: [mine(ready("True", "Ready"))],
    }),
    expect: { status: "False", reason: "ConflictingAnnotations", attachments: [], message: /target is set/ },
  },
  {
    name: "class + loadBalancerSourceRanges → UnsupportedField (never exposed wider than asked)",
    lb: true,
    input: input({ service: lbService({ spec: { loadBalancerSourceRanges: ["10.0.0.0/8"] } }) }),
    expect: { status: "False", reason: "UnsupportedField", attachments: [], message: /allow-from/ },
  },
  {
    name: "class + loadBalancerIP → UnsupportedField; an empty one (Helm templates) is no request",
    lb: true,
    input: input({ service: lbService({ spec: { loadBalancerIP: "203.0.113.7" } }) }),
    expect: { status: "False", reason: "UnsupportedField", attachments: [], message: /203\.0\.113\.7/ },
  },
  {
    name: "class with an empty loadBalancerIP → exposed",
    lb: true,
    input: input({ service: lbService({ spec: { loadBalancerIP: "", loadBalancerSourceRanges: [] } }) }),
    expect: { status: "Unknown", reason: "Pending", attachments: ["TailnetIngress/grafana"] },
  },
  {
    name: "class with only UDP ports → UnsupportedPorts",
    lb: true,
    input: input({ service: lbService({ ports: [{ name: "dns", port: 53, protocol: "UDP" }] }) }),
    expect: { status: "False", reason: "UnsupportedPorts", attachments: [], message: /no TCP port/ },
  },
  {
    name: "class + a bad hostname annotation → InvalidAnnotation (the annotations still apply)",
    lb: true,
    input: input({ service: lbService({ annotations: { [`${T}/hostname`]: "Not_A_Label" } }) }),
    expect: { status: "False", reason: "InvalidAnnotation", attachments: [], message: /hostname/ },
  },
  {
    name: "class Service yields the hostname to an older annotated Service before its attachment exists",
    lb: true,
    input: input({
      service: lbService({ uid: "uid-new" }),
      services: [
        service({
          name: "old",
          uid: "uid-old",
          annotations: { [`${T}/expose`]: "true", [`${T}/hostname`]: "grafana" },
        }),
      ].map((s) => ({ ...s, metadata: { ...s.metadata, creationTimestamp: "2026-10-01T00:00:00Z" } })),
    }),
    expect: { status: "False", reason: "HostnameTaken", attachments: [], message: /older Service monitoring\/old/ },
  },
  {
    name: "an annotated Service yields to an older LoadBalancer of our class asking for the same hostname",
    input: input({
      service: service({ uid: "uid-new", annotations: { [`${T}/expose`]: "true", [`${T}/hostname`]: "web" } }),
      services: [lbService({ name: "web", uid: "uid-old" })].map((s) => ({
        ...s,
        metadata: { ...s.metadata, creationTimestamp: "2026-10-01T00:00:00Z" },
      })),
    }),
    expect: { status: "False", reason: "HostnameTaken", attachments: [], message: /older Service monitoring\/web/ },
  },
];

describe("annotated Services: decide", () => {
  const produced = rows.map((row) => {
    const role = row.role ?? "expose";
    if (row.lb) {
      const plan = planService(readLoadBalancerSpec(row.input.service), row.input);
      return { row, role, decision: decideLoadBalancer(plan, row.input), plan };
    }
    const plan = planService(readServiceSpec(row.input.service, role), row.input);
    return { row, role, decision: decideService(role, plan), plan };
  });
  for (const { row, role, decision } of produced) {
    it(row.name, () => {
      const [c] = decision.conditions;
      assert.deepEqual([c.type, c.status, c.reason], ["Exposed", row.expect.status, row.expect.reason], c.message);
      if (row.expect.message) assert.match(c.message, row.expect.message);
      assert.deepEqual(
        decision.children.map((a) => `${a.kind}/${a.metadata.name}`),
        row.expect.attachments,
      );
      assert.equal(decision.labels[`${T}/${role}-state`], row.expect.reason);
      assert.equal(decision.annotations[`${T}/${role}-message`], c.message);
      if (row.expect.address !== undefined) {
        const key = role === "expose" ? `${T}/dns-name` : `${T}/target-address`;
        assert.equal(decision.annotations[key], row.expect.address);
      }
    });
  }

  it("the attachments are exactly the TailnetIngress/TailnetEgress the Service asks for", () => {
    const ing = produced[0].decision.children[0];
    assert.deepEqual(ing.spec, GRAFANA_INGRESS_SPEC);
    assert.deepEqual(ing.metadata, {
      name: "grafana",
      namespace: "monitoring",
      labels: { "tailnet.internal/service": "grafana" },
    });
    const eg = produced.find((p) => p.role === "target")?.decision.children[0];
    assert.deepEqual(eg?.spec, EGRESS_SPEC);
    const tagged = planService(
      readServiceSpec(
        service({
          annotations: {
            [`${T}/expose`]: "true",
            [`${T}/tags`]: "tag:dash",
            [`${T}/allow-from`]: "group:eng, autogroup:member",
          },
        }),
        "expose",
      ),
      input(),
    );
    assert.deepEqual(tagged.attachments[0].spec, {
      ...GRAFANA_INGRESS_SPEC,
      tag: "tag:dash",
      allowFrom: ["group:eng", "autogroup:member"],
    });
  });

  it("finalize clears what sync wrote and is finalized only once the attachment is gone", () => {
    const waiting = decideServiceFinalize("expose", input({ attachments: [mine(undefined, { deleting: true })] }));
    assert.equal(waiting.finalized, false);
    assert.deepEqual(waiting.attachments, []);
    assert.deepEqual(waiting.labels, { [`${T}/expose-state`]: null });
    assert.deepEqual(waiting.annotations, { [`${T}/expose-message`]: null, [`${T}/dns-name`]: null });
    assert.equal(decideServiceFinalize("expose", input()).finalized, true);
  });

  it("covers every (condition, reason, status) of the Service table", () => {
    assertCoversTable(
      SERVICE_REASONS,
      produced.map((p) => p.decision.conditions),
    );
  });
});
