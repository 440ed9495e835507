// The tailnet → Kubernetes identity mapping of the kube-api expose, rule by rule (docs/kube-api.md), and the
// verb the audit log derives from a request line.
import assert from "node:assert/strict";
import { test } from "node:test";
import { identityFromWhoIs, KUBERNETES_CAPABILITY, kubeVerb } from "../../src/agent/kube-identity.js";

const node = (extra: Record<string, unknown> = {}) => ({ ID: 1, Name: "laptop.ts.example.com.", Tags: null, ...extra });
const user = (login: string) => ({ ID: 2, LoginName: login, DisplayName: "x" });
const caps = (...rules: unknown[]) => ({ [KUBERNETES_CAPABILITY]: rules });

const cases: { name: string; whois: unknown; want: { user: string; groups: string[] } | RegExp }[] = [
  {
    name: "user-owned device: the login name, no group",
    whois: { Node: node(), UserProfile: user("alice@example.com") },
    want: { user: "alice@example.com", groups: [] },
  },
  {
    name: "capability groups, deduplicated in order",
    whois: {
      Node: node(),
      UserProfile: user("alice@example.com"),
      CapMap: caps(
        { impersonate: { groups: ["eng", "ops"] } },
        { impersonate: { groups: ["eng"] } },
        { recorder: ["tag:rec"] },
      ),
    },
    want: { user: "alice@example.com", groups: ["eng", "ops"] },
  },
  {
    name: "tagged node: tailnet:node:<name>, a group per tag, then capability groups",
    whois: {
      Node: node({ Tags: ["tag:ci"] }),
      UserProfile: user("tagged-devices"),
      CapMap: caps({ impersonate: { groups: ["deployers"] } }),
    },
    want: { user: "tailnet:node:laptop.ts.example.com", groups: ["tailnet:tag:ci", "deployers"] },
  },
  { name: "no Node", whois: { UserProfile: user("a@b") }, want: /no Node or UserProfile/ },
  { name: "not an object", whois: "nope", want: /no Node or UserProfile/ },
  { name: "a node without a name", whois: { Node: node({ Name: "" }), UserProfile: user("a@b") }, want: /no name/ },
  { name: "no login name", whois: { Node: node(), UserProfile: user("") }, want: /no login name/ },
  { name: "a login name in system:", whois: { Node: node(), UserProfile: user("system:admin") }, want: /reserved/ },
  { name: "a login name in tailnet:", whois: { Node: node(), UserProfile: user("tailnet:node:x") }, want: /reserved/ },
  {
    name: "a login name with a line break",
    whois: { Node: node(), UserProfile: user("a@b\r\nimpersonate-user: system:admin") },
    want: /not a name the proxy can send/,
  },
  {
    name: "a non-ASCII login name",
    whois: { Node: node(), UserProfile: user("zoë@example.com") },
    want: /not a name the proxy can send/,
  },
  {
    name: "a capability group with a line break",
    whois: { Node: node(), UserProfile: user("a@b"), CapMap: caps({ impersonate: { groups: ["ok\nx"] } }) },
    want: /not a name/,
  },
  {
    name: "capability not a list",
    whois: { Node: node(), UserProfile: user("a@b"), CapMap: { [KUBERNETES_CAPABILITY]: { impersonate: {} } } },
    want: /not a list of rules/,
  },
  {
    name: "impersonate.groups not names",
    whois: { Node: node(), UserProfile: user("a@b"), CapMap: caps({ impersonate: { groups: "eng" } }) },
    want: /not a list of names/,
  },
  {
    name: "an empty group",
    whois: { Node: node(), UserProfile: user("a@b"), CapMap: caps({ impersonate: { groups: [""] } }) },
    want: /not a name/,
  },
];

for (const c of cases) {
  test(`identityFromWhoIs: ${c.name}`, () => {
    const verdict = identityFromWhoIs(c.whois);
    if (c.want instanceof RegExp) {
      assert.ok("refused" in verdict, JSON.stringify(verdict));
      assert.match(verdict.refused, c.want);
    } else {
      assert.ok("identity" in verdict, JSON.stringify(verdict));
      assert.deepEqual({ user: verdict.identity.user, groups: verdict.identity.groups }, c.want);
    }
  });
}

test("kubeVerb follows kube-apiserver's request info", () => {
  const rows: [string, string, string][] = [
    ["GET", "/api/v1/namespaces/dev/pods", "list"],
    ["GET", "/api/v1/namespaces/dev/pods/web", "get"],
    ["GET", "/api/v1/namespaces/dev/pods/web/log", "get"],
    ["GET", "/api/v1/namespaces/dev/pods?watch=true&resourceVersion=1", "watch"],
    ["GET", "/api/v1/namespaces/dev/pods?watch=1", "watch"],
    ["GET", "/api/v1/watch/namespaces/dev/pods", "watch"],
    ["GET", "/api/v1/namespaces", "list"],
    ["GET", "/api/v1/namespaces/dev", "get"],
    ["GET", "/apis/apps/v1/namespaces/dev/deployments", "list"],
    ["POST", "/api/v1/namespaces/dev/configmaps", "create"],
    ["POST", "/api/v1/namespaces/dev/pods/web/exec?command=sh", "create"],
    ["PUT", "/api/v1/namespaces/dev/configmaps/a", "update"],
    ["PATCH", "/apis/apps/v1/namespaces/dev/deployments/web?fieldManager=kubectl", "patch"],
    ["DELETE", "/api/v1/namespaces/dev/configmaps/a", "delete"],
    ["DELETE", "/api/v1/namespaces/dev/configmaps", "deletecollection"],
    ["GET", "/version", "get"],
    ["GET", "/openapi/v3", "get"],
  ];
  for (const [method, target, verb] of rows) assert.equal(kubeVerb(method, target), verb, `${method} ${target}`);
});
