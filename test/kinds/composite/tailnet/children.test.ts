import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { describe, it } from "node:test";
import {
  credentialsSecret,
  dnsRecordsConfigMap,
  policyConfigMap,
  recordsJson,
} from "../../../../src/kinds/composite/tailnet/children.js";
import { dnsRecords } from "../../../../src/kinds/composite/tailnet/compose.js";
import { readInputs } from "../../../../src/kinds/composite/tailnet/inputs.js";
import { toMaps } from "../../../fixtures/hooks.js";
import { validateChildren } from "../../../helpers/validate.js";
import { agentNode, apiKeySecret, b64, caSecret, ingress, tailnet, tailnetSpec } from "./fixtures.js";
import { decided } from "./world.js";

interface GoldenOptions {
  tailnet: string;
  namespace: string;
}

const labels = (o: GoldenOptions, component: string) => ({
  "app.kubernetes.io/name": "tailnet-operator",
  "app.kubernetes.io/component": component,
  "app.kubernetes.io/managed-by": "tailnet-operator",
  "tailnet.internal/tailnet": o.tailnet,
});

function expectedPolicyConfigMap(
  o: GoldenOptions & { canonical: string; hash: string; tags: number; grants: number; routes: number },
) {
  return {
    apiVersion: "v1",
    kind: "ConfigMap",
    metadata: {
      name: `tailnet-${o.tailnet}-policy`,
      namespace: o.namespace,
      labels: labels(o, "policy"),
      annotations: {
        "tailnet.internal/policy-hash": o.hash,
        "tailnet.internal/generated-tags": String(o.tags),
        "tailnet.internal/generated-grants": String(o.grants),
        "tailnet.internal/generated-routes": String(o.routes),
      },
    },
    data: { "policy.json": o.canonical },
  };
}

function expectedCredentials(o: GoldenOptions & { url: string; apiKey: string; ca?: string }) {
  return {
    apiVersion: "v1",
    kind: "Secret",
    metadata: { name: `tailnet-${o.tailnet}-credentials`, namespace: o.namespace, labels: labels(o, "credentials") },
    type: "Opaque",
    data: { url: b64(o.url), apiKey: b64(o.apiKey), ...(o.ca ? { "ca.crt": b64(o.ca) } : {}) },
  };
}

describe("Tailnet children", () => {
  const base = { tailnet: "home", namespace: "tailnet-system" };

  it("policy ConfigMap: canonical policy whose sha256 is the hash, counts in annotations", () => {
    const canonical = '{"acls":[{"action":"accept","dst":["*:*"],"src":["*"]}]}';
    const hash = `sha256:${createHash("sha256").update(canonical).digest("hex")}`;
    const cm = policyConfigMap({ ...base, canonical, hash, generated: { tags: 4, grants: 6, routes: 2 } });
    assert.deepStrictEqual(cm, expectedPolicyConfigMap({ ...base, canonical, hash, tags: 4, grants: 6, routes: 2 }));
    validateChildren([cm]);
  });

  it("credentials Secret republishes url, apiKey and ca.crt", () => {
    const opts = {
      ...base,
      url: "https://hs.example.com",
      apiKey: "hskey-api-abc-secret",
      ca: "-----BEGIN CERTIFICATE-----\nX\n",
    };
    const s = credentialsSecret(opts);
    assert.deepStrictEqual(s, expectedCredentials(opts));
    validateChildren([s]);
    const noCa = credentialsSecret({ ...opts, ca: undefined });
    assert.deepStrictEqual(noCa, expectedCredentials({ ...opts, ca: undefined }));
    assert.equal("ca.crt" in (noCa.data as object), false);
  });

  it("every user field reaches the credentials Secret (url, key, CA from their Secrets)", () => {
    const spec = tailnetSpec({
      headscale: {
        url: "https://hs.internal:8443/prefix",
        apiKeySecretRef: { namespace: "tailnet-system", name: "hs-key", key: "token" },
        caSecretRef: { namespace: "tailnet-system", name: "headscale-ca" },
      },
    });
    const related = [
      {
        ...apiKeySecret(),
        metadata: { name: "hs-key", namespace: "tailnet-system" },
        data: { token: b64("hskey-api-zzz-secret") },
      },
      caSecret("PEM DATA"),
    ];
    const inputs = readInputs(tailnet(spec), toMaps(related));
    assert.ok(inputs.connection.ok);
    const { url, apiKey, ca } = inputs.connection.conn;
    const s = credentialsSecret({ ...base, url, apiKey, ca });
    const data = s.data as Record<string, string>;
    assert.equal(Buffer.from(data.url, "base64").toString(), "https://hs.internal:8443/prefix");
    assert.equal(Buffer.from(data.apiKey, "base64").toString(), "hskey-api-zzz-secret");
    assert.equal(Buffer.from(data["ca.crt"], "base64").toString(), "PEM DATA");
  });

  it("DNS records: every published ingress name and alias with its node's IPv4, sorted", () => {
    const http = ingress("grafana", "monitoring", {
      mode: "http",
      exposes: [
        { name: "web", port: 443, backend: { service: "grafana", port: 3000 }, host: "dash", aliases: ["grafana-eu"] },
      ],
    });
    const newer = {
      ...ingress("dash", "other", { hostname: "dash" }),
      metadata: { ...ingress("dash", "other").metadata, creationTimestamp: "2026-11-05T00:00:00Z" },
    };
    const unregistered = ingress("kibana", "logs");
    const inputs = readInputs(tailnet(), toMaps([http, newer, unregistered]));
    const nodes = [
      agentNode({
        id: "9",
        givenName: "grafana",
        tags: ["tag:k8s-monitoring-grafana"],
        online: false,
        ipAddresses: ["100.64.0.9"],
      }),
      agentNode({
        id: "12",
        givenName: "grafana-1",
        tags: ["tag:k8s-monitoring-grafana"],
        ipAddresses: ["fd7a::c", "100.64.0.12"],
      }),
      agentNode({ id: "13", givenName: "dash", tags: ["tag:k8s-other-dash"], ipAddresses: ["100.64.0.13"] }),
    ];
    const records = dnsRecords(inputs, nodes);
    assert.deepStrictEqual(records, [
      // dash.ts.example.com belongs to the older grafana ingress; the newer "dash" ingress loses it.
      { name: "dash.ts.example.com", type: "A", value: "100.64.0.12" },
      { name: "grafana-eu.ts.example.com", type: "A", value: "100.64.0.12" },
      { name: "grafana.ts.example.com", type: "A", value: "100.64.0.12" },
    ]);
    const cm = dnsRecordsConfigMap({ ...base, records });
    assert.deepStrictEqual(cm, {
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: { name: "tailnet-home-dns-records", namespace: "tailnet-system", labels: labels(base, "dns-records") },
      data: { "records.json": recordsJson(records) },
    });
    assert.deepStrictEqual(JSON.parse((cm.data as Record<string, string>)["records.json"]), records);
    validateChildren([cm]);
    assert.equal(recordsJson([]), "[]\n");
  });

  it("a sync's children validate against the official schemas", () => {
    validateChildren(decided().children);
  });
});
