/**
 * Ingresses of the class `tailnet`, decided (pure): which Ingresses are ours, what TailnetIngress each
 * becomes, every refusal with its reason, the status.loadBalancer written back, and that an Ingress of
 * another class gets an answer that writes nothing.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { API_VERSION } from "../../../../src/api/schemas.js";
import type { ConditionInput } from "../../../../src/conditions/condition.js";
import { INGRESS_CLASS_REASONS } from "../../../../src/conditions/tables/ingress-class.js";
import type { K8sObject } from "../../../../src/k8s/objects.js";
import { decideIngressClass } from "../../../../src/kinds/decorators/ingress-class/decide.js";
import { planIngressClass } from "../../../../src/kinds/decorators/ingress-class/plan.js";
import { assertCoversTable } from "../../../helpers/reason-coverage.js";
import { BASE, ingress, ingressClass, NS, observe, simpleSpec, svcBackend, tailnet } from "./fixtures.js";

const produced: (readonly ConditionInput[])[] = [];
const T = "tailnet.internal";

function run(ing: K8sObject, extra: Parameters<typeof observe>[1] = {}) {
  const d = decideIngressClass(planIngressClass(observe(ing, extra)));
  produced.push(d.conditions);
  return d;
}
const reasonOf = (d: ReturnType<typeof run>) => d.labels[`${T}/ingress-state`];

/** The attachment as Metacontroller shows it back: owned by the Ingress, with a status. */
function attachment(ing: K8sObject, status: Record<string, unknown>, spec?: unknown): K8sObject {
  const desired = run(ing).children[0];
  return {
    ...desired,
    spec: spec ?? desired.spec,
    metadata: {
      ...desired.metadata,
      uid: "uid-tni",
      generation: 1,
      creationTimestamp: "2026-11-01T00:00:01Z",
      ownerReferences: [
        {
          apiVersion: "networking.k8s.io/v1",
          kind: "Ingress",
          name: "grafana",
          uid: ing.metadata.uid ?? "",
          controller: true,
        },
      ],
    },
    status: { observedGeneration: 1, ...status },
  };
}
const ready = (dnsName: string) => ({
  dnsName,
  exposes: [{ name: "grafana", dnsName }],
  conditions: [{ type: "Ready", status: "True", reason: "Ready", message: "" }],
});

describe("Ingress class: which Ingresses are ours", () => {
  it("an Ingress of another class, never ours, gets an answer that writes nothing (no label, annotation, attachment; null status)", () => {
    for (const spec of [
      { ...simpleSpec(), ingressClassName: "nginx" },
      { ...simpleSpec(), ingressClassName: undefined },
    ]) {
      const d = run(ingress(spec, { status: { loadBalancer: { ingress: [{ ip: "10.0.0.1" }] } } }));
      assert.deepEqual(
        { labels: d.labels, annotations: d.annotations, children: d.children, status: d.status },
        { labels: {}, annotations: {}, children: [], status: null },
      );
    }
  });
  it("class `tailnet` is ours only while an IngressClass of that name has our controller", () => {
    const ing = ingress(simpleSpec());
    assert.equal(reasonOf(run(ing)), "Pending");
    assert.deepEqual(run(ing, { ingressClasses: [] }).labels, {});
    assert.deepEqual(run(ing, { ingressClasses: [ingressClass("tailnet", "k8s.io/ingress-nginx")] }).labels, {});
    // another class name with our controller is ours as well
    const other = ingress({ ...simpleSpec(), ingressClassName: "private" });
    assert.equal(reasonOf(run(other, { ingressClasses: [ingressClass("private")] })), "Pending");
  });
  it("the deprecated kubernetes.io/ingress.class annotation selects the class when spec.ingressClassName is unset", () => {
    const ing = ingress(
      { ...simpleSpec(), ingressClassName: undefined },
      { annotations: { "kubernetes.io/ingress.class": "tailnet" } },
    );
    assert.equal(run(ing).children.length, 1);
  });
  it("released (class changed away): label, annotation and attachment go; the status is cleared only while it is ours", () => {
    const mine = ingress(simpleSpec());
    const att = attachment(mine, ready(`grafana.${BASE}`));
    const ourLb = { ingress: [{ hostname: `grafana.${BASE}`, ports: [{ port: 443, protocol: "TCP" }] }] };
    const moved = ingress(
      { ...simpleSpec(), ingressClassName: "nginx" },
      { labels: { [`${T}/ingress-state`]: "Ready" }, status: { loadBalancer: ourLb } },
    );
    const d = run(moved, { attachments: [att] });
    assert.deepEqual(d.labels, { [`${T}/ingress-state`]: null });
    assert.deepEqual(d.annotations, { [`${T}/ingress-message`]: null });
    assert.deepEqual(d.children, []);
    assert.deepEqual(d.status, { loadBalancer: {} });
    const nginxWrote = ingress(
      { ...simpleSpec(), ingressClassName: "nginx" },
      { labels: { [`${T}/ingress-state`]: "Ready" }, status: { loadBalancer: { ingress: [{ ip: "10.0.0.9" }] } } },
    );
    assert.equal(run(nginxWrote, { attachments: [att] }).status, null);
  });
});

describe("Ingress class: the TailnetIngress an Ingress becomes", () => {
  it("one host → an http expose (port left out: 443) with its backend and TLS Secret; hostname from the Ingress name", () => {
    const d = run(
      ingress(
        simpleSpec({
          rules: [
            ...simpleSpec().rules,
            { host: "wiki", http: { paths: [{ path: "/", pathType: "Prefix", backend: svcBackend("wiki", "http") }] } },
          ],
          tls: [{ secretName: "all-tls" }],
        }),
      ),
      {
        services: [
          {
            apiVersion: "v1",
            kind: "Service",
            metadata: { name: "wiki", namespace: NS },
            spec: { ports: [{ name: "http", port: 8080 }] },
          },
        ],
      },
    );
    assert.deepEqual(d.children, [
      {
        apiVersion: API_VERSION,
        kind: "TailnetIngress",
        metadata: { name: "grafana", namespace: NS, labels: { [`${T}/ingress`]: "grafana" } },
        spec: {
          tailnetRef: { name: "home" },
          hostname: "grafana",
          mode: "http",
          exposes: [
            { name: "grafana", backend: { service: "grafana", port: 3000 }, tls: { secretName: "all-tls" } },
            {
              name: "wiki",
              backend: { service: "wiki", port: 8080 },
              host: "wiki",
              tls: { secretName: "all-tls" },
            },
          ],
        },
      },
    ]);
    assert.deepEqual(d.status, { loadBalancer: {} }, "no address before the attachment publishes one");
  });
  it("the default backend serves the Ingress's own name; annotations set hostname, tag, allow-from and the Tailnet", () => {
    const ing = ingress(
      {
        ingressClassName: "tailnet",
        defaultBackend: svcBackend("web", 80),
        tls: [{ hosts: [`front.${BASE}`], secretName: "front-tls" }],
      },
      {
        annotations: {
          [`${T}/hostname`]: "front",
          [`${T}/tags`]: "tag:web",
          [`${T}/allow-from`]: "group:eng, tag:ci",
          [`${T}/tailnet`]: "home",
        },
      },
    );
    const spec = run(ing, { tailnets: [tailnet("home"), tailnet("work")] }).children[0].spec;
    assert.deepEqual(spec, {
      tailnetRef: { name: "home" },
      tag: "tag:web",
      hostname: "front",
      mode: "http",
      allowFrom: ["group:eng", "tag:ci"],
      exposes: [{ name: "front", backend: { service: "web", port: 80 }, tls: { secretName: "front-tls" } }],
    });
  });
  it("paths of one host to one backend are served; Exact and ImplementationSpecific paths next to Prefix / or a matching default backend too", () => {
    for (const paths of [
      [
        { path: "/", pathType: "Prefix" },
        { path: "/api", pathType: "Exact" },
      ],
      [{ path: "/", pathType: "ImplementationSpecific" }],
    ]) {
      const rules = [
        { host: "grafana", http: { paths: paths.map((p) => ({ ...p, backend: svcBackend("grafana", 3000) })) } },
      ];
      assert.equal(run(ingress(simpleSpec({ rules }))).children.length, 1, JSON.stringify(paths));
    }
    const rules = [
      {
        host: "grafana",
        http: { paths: [{ path: "/api", pathType: "Prefix", backend: svcBackend("grafana", 3000) }] },
      },
    ];
    assert.equal(run(ingress(simpleSpec({ rules, defaultBackend: svcBackend("grafana", 3000) }))).children.length, 1);
  });
  it("status.loadBalancer names every published DNS name on port 443 once the attachment publishes them; Ready mirrors it", () => {
    const ing = ingress(simpleSpec());
    const d = run(ing, { attachments: [attachment(ing, ready(`grafana.${BASE}`))] });
    assert.equal(reasonOf(d), "Ready");
    assert.deepEqual(d.status, {
      loadBalancer: { ingress: [{ hostname: `grafana.${BASE}`, ports: [{ port: 443, protocol: "TCP" }] }] },
    });
    assert.match(d.annotations[`${T}/ingress-message`] ?? "", /grafana\.ts\.example\.com/);
  });
});

const ingressWith = (extra: Record<string, unknown>) => ingress(simpleSpec(extra));
/** What the agent cannot honour, one Ingress each: the reason and the message that names it. */
const REFUSALS: {
  name: string;
  ing: K8sObject;
  reason: string;
  message: RegExp;
  extra?: Parameters<typeof observe>[1];
}[] = [
  {
    name: "one path of a host to two Services",
    ing: ingressWith({
      rules: [
        {
          host: "grafana",
          http: {
            paths: [
              { path: "/api/", pathType: "Prefix", backend: svcBackend("grafana", 3000) },
              { path: "/api", pathType: "ImplementationSpecific", backend: svcBackend("api", 80) },
            ],
          },
        },
      ],
    }),
    reason: "UnsupportedPaths",
    message: /paths\[1\] and .*paths\[0\] are both Prefix \/api, to api:80 and grafana:3000/,
  },
  {
    name: "a path the agent could never match as written (a .. segment)",
    ing: ingressWith({
      rules: [
        {
          host: "grafana",
          http: {
            paths: [
              { path: "/", pathType: "Prefix", backend: svcBackend("grafana", 3000) },
              { path: "/a/../admin", pathType: "Prefix", backend: svcBackend("api", 80) },
            ],
          },
        },
      ],
    }),
    reason: "UnsupportedPaths",
    message: /paths\[1\]\.path: "\/a\/\.\.\/admin" no empty, \. or \.\. segments/,
  },
  {
    name: "only /api routed (everything else would 404, the agent would forward it)",
    ing: ingressWith({
      rules: [
        {
          host: "grafana",
          http: { paths: [{ path: "/api", pathType: "Prefix", backend: svcBackend("grafana", 3000) }] },
        },
      ],
    }),
    reason: "UnsupportedPaths",
    message: /routes only \/api \(Prefix\)/,
  },
  {
    name: "an Exact / only",
    ing: ingressWith({
      rules: [
        {
          host: "grafana",
          http: { paths: [{ path: "/", pathType: "Exact", backend: svcBackend("grafana", 3000) }] },
        },
      ],
    }),
    reason: "UnsupportedPaths",
    message: /routes only \/ \(Exact\)/,
  },
  {
    name: "a resource backend",
    ing: ingressWith({
      rules: [
        {
          host: "grafana",
          http: {
            paths: [
              {
                path: "/",
                pathType: "Prefix",
                backend: { resource: { apiGroup: "k8s.example.com", kind: "StorageBucket", name: "b" } },
              },
            ],
          },
        },
      ],
    }),
    reason: "UnsupportedBackend",
    message: /StorageBucket b is not a Service/,
  },
  {
    name: "a wildcard host",
    ing: ingressWith({
      rules: [
        {
          host: `*.${BASE}`,
          http: { paths: [{ path: "/", pathType: "Prefix", backend: svcBackend("grafana", 3000) }] },
        },
      ],
    }),
    reason: "UnsupportedHost",
    message: /wildcard/,
  },
  {
    name: "a host outside the tailnet's zone",
    ing: ingressWith({
      rules: [
        {
          host: "grafana.example.org",
          http: { paths: [{ path: "/", pathType: "Prefix", backend: svcBackend("grafana", 3000) }] },
        },
      ],
    }),
    reason: "UnsupportedHost",
    message: /grafana\.example\.org: not a name the tailnet can publish; use a label of ts\.example\.com/,
  },
  {
    name: "two labels deep in the zone",
    ing: ingressWith({
      rules: [
        {
          host: `a.b.${BASE}`,
          http: { paths: [{ path: "/", pathType: "Prefix", backend: svcBackend("grafana", 3000) }] },
        },
      ],
    }),
    reason: "UnsupportedHost",
    message: /a\.b\.ts\.example\.com/,
  },
  {
    name: "the same name twice with different backends",
    ing: ingressWith({
      tls: [{ secretName: "t" }],
      rules: [
        {
          host: "grafana",
          http: { paths: [{ path: "/", pathType: "Prefix", backend: svcBackend("grafana", 3000) }] },
        },
        {
          host: `grafana.${BASE}`,
          http: { paths: [{ path: "/", pathType: "Prefix", backend: svcBackend("other", 3000) }] },
        },
      ],
    }),
    reason: "UnsupportedHost",
    message: /both grafana\.ts\.example\.com/,
  },
  {
    name: "no rules and no default backend",
    ing: ingress({ ingressClassName: "tailnet" }),
    reason: "NoBackend",
    message: /nothing to expose/,
  },
  {
    name: "a host without paths and no default backend",
    ing: ingressWith({ rules: [{ host: "grafana" }] }),
    reason: "NoBackend",
    message: /host grafana has no http paths/,
  },
  {
    name: "a named port of a Service that has no such port",
    ing: ingressWith({
      rules: [
        {
          host: "grafana",
          http: { paths: [{ path: "/", pathType: "Prefix", backend: svcBackend("grafana", "web") }] },
        },
      ],
    }),
    extra: {
      services: [
        {
          apiVersion: "v1",
          kind: "Service",
          metadata: { name: "grafana", namespace: NS },
          spec: { ports: [{ name: "http", port: 3000 }] },
        },
      ],
    },
    reason: "UnresolvedPort",
    message: /Service grafana has no port named "web" \(it has http\)/,
  },
  {
    name: "a named port of a Service that does not exist",
    ing: ingressWith({
      rules: [
        {
          host: "grafana",
          http: { paths: [{ path: "/", pathType: "Prefix", backend: svcBackend("grafana", "web") }] },
        },
      ],
    }),
    reason: "UnresolvedPort",
    message: /the Service does not exist/,
  },
  {
    name: "a host no spec.tls entry names",
    ing: ingressWith({ tls: [{ hosts: ["other"], secretName: "x" }] }),
    reason: "TLSMissing",
    message: /host grafana\.ts\.example\.com: no spec\.tls entry/,
  },
  {
    name: "an Ingress name that is no node name, without the hostname annotation",
    ing: ingress(simpleSpec(), { name: "grafana.web" }),
    reason: "InvalidAnnotation",
    message: /the Ingress name \(set tailnet\.internal\/hostname\): "grafana\.web"/,
  },
  {
    name: "two tags",
    ing: ingress(simpleSpec(), { annotations: { [`${T}/tags`]: "tag:a,tag:b" } }),
    reason: "InvalidAnnotation",
    message: /one tag only/,
  },
  {
    name: "no Tailnet",
    ing: ingressWith({}),
    extra: { tailnets: [] },
    reason: "NoTailnet",
    message: /no Tailnet exists/,
  },
  {
    name: "two Tailnets, none named",
    ing: ingressWith({}),
    extra: { tailnets: [tailnet("work"), tailnet("home")] },
    reason: "AmbiguousTailnet",
    message: /2 Tailnets exist \(home, work\)/,
  },
  {
    name: "a TailnetIngress of the same name not made for this Ingress",
    ing: ingressWith({}),
    extra: {
      tailnetIngresses: [
        { apiVersion: API_VERSION, kind: "TailnetIngress", metadata: { name: "grafana", namespace: NS }, spec: {} },
      ],
    },
    reason: "NameTaken",
    message: /TailnetIngress monitoring\/grafana already exists/,
  },
  {
    name: "a name an older TailnetIngress claims",
    ing: ingressWith({}),
    extra: {
      tailnetIngresses: [
        {
          apiVersion: API_VERSION,
          kind: "TailnetIngress",
          metadata: { name: "old", namespace: "other", creationTimestamp: "2026-01-01T00:00:00Z" },
          spec: { tailnetRef: { name: "home" }, hostname: "grafana", exposes: [] },
        },
      ],
    },
    reason: "HostnameTaken",
    message: /grafana\.ts\.example\.com is already claimed by TailnetIngress other\/old/,
  },
];

describe("Ingress class: what the agent cannot honour is refused with a reason, never served differently", () => {
  for (const c of REFUSALS) {
    it(`${c.name} → ${c.reason}`, () => {
      const d = run(c.ing, c.extra);
      assert.equal(reasonOf(d), c.reason, d.annotations[`${T}/ingress-message`] ?? "");
      assert.match(d.annotations[`${T}/ingress-message`] ?? "", c.message);
      assert.deepEqual(d.children, [], "no attachment is made");
      assert.deepEqual(d.status, { loadBalancer: {} }, "no address is shown");
    });
  }
  it("a refusal from the cluster (no Tailnet, a Service not there yet) keeps an existing attachment; one the user can fix drops it", () => {
    const ing = ingress(simpleSpec());
    const att = attachment(ing, ready(`grafana.${BASE}`));
    const kept = run(ing, { attachments: [att], tailnets: [] });
    assert.equal(reasonOf(kept), "NoTailnet");
    assert.equal(kept.children.length, 1);
    assert.equal((kept.status?.loadBalancer.ingress ?? []).length, 1, "the address stays with the attachment");
    const named = ingress(
      simpleSpec({
        rules: [
          {
            host: "grafana",
            http: { paths: [{ path: "/", pathType: "Prefix", backend: svcBackend("grafana", "web") }] },
          },
        ],
      }),
    );
    assert.equal(run(named, { attachments: [att] }).children.length, 1);
    const dropped = run(ingress(simpleSpec({ tls: [] })), { attachments: [att] });
    assert.equal(reasonOf(dropped), "TLSMissing");
    assert.deepEqual(dropped.children, []);
  });
  it("the attachment's own state is mirrored: Pending, NotReady, HostnameReserved, tenancy reasons", () => {
    const ing = ingress(simpleSpec());
    const state = (status: Record<string, unknown>, spec?: unknown) =>
      reasonOf(run(ing, { attachments: [attachment(ing, status, spec)] }));
    const c = (status: string, reason: string) => ({ conditions: [{ type: "Ready", status, reason, message: "m" }] });
    assert.equal(state({}), "Pending");
    assert.equal(state(c("False", "NotRegistered")), "NotReady");
    assert.equal(state(c("False", "DNSNameReserved")), "HostnameReserved");
    for (const r of ["TagNotGranted", "TagInUse", "NamespaceNotAllowed"]) assert.equal(state(c("False", r)), r);
    assert.equal(state(c("Unknown", "Pending")), "Pending");
  });
  it("covers every (condition, reason, status) of the Ingress table", () => {
    assertCoversTable(INGRESS_CLASS_REASONS, produced);
  });
});

describe("Ingress class: the annotations are the annotated Services' own", () => {
  it("hostname, tailnet, tags and allow-from are the same keys on a Service and an Ingress", async () => {
    const { Annotation } = await import("../../../../src/kinds/decorators/service/annotations.js");
    const { WorkloadAnnotation } = await import("../../../../src/kinds/shared/annotations.js");
    for (const [k, v] of Object.entries(WorkloadAnnotation))
      assert.equal(Annotation[k as keyof typeof Annotation], v, k);
  });
});
