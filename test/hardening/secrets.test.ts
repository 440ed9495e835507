/**
 * No secret leaves the Secrets: with a known API key, every pre-auth key the fake Headscale mints and
 * a TLS private key planted in the world of every kind (world.ts), the system scenario plus faults,
 * a key rotation and malformed hook requests leave zero traces of them in the server log, any status,
 * any Event, the /metrics exposition, any non-200 hook answer or any object that is not a Secret.
 * The same holds for what `render` prints for an equivalent input.
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { EMPTY_SNAPSHOT } from "../../src/emulator/headscale/in-memory.js";
import type { K8sObject } from "../../src/k8s/objects.js";
import { b64, secretValue } from "../../src/kinds/shared/secrets.js";
import { render } from "../../src/render/main.js";
import { createTestPki, type IssuedCertificate, type TestPki } from "../fakes/agent/pki.js";
import { machineKeyIn } from "../kinds/shared/replica-boot.js";
import {
  API,
  API_KEY,
  API_KEY_SECRET_PART,
  BASE_POLICY,
  CERT_NAMES,
  OPS,
  PARENTS,
  T0,
  TAGS,
  toReady,
  type World,
  world,
  worldSpecs,
} from "./world.js";

let pki: TestPki;
let cert: IssuedCertificate;
before(async () => {
  pki = await createTestPki();
  cert = await pki.issue({
    names: CERT_NAMES,
    notBefore: new Date("2026-11-01T00:00:00Z"),
    notAfter: new Date("2027-01-01T00:00:00Z"),
  });
});
after(() => pki.cleanup());

interface Needle {
  what: string;
  value: string;
}

/** The TLS key's identity: each base64 body line of its PEM, and the PEM as a Secret holds it. */
function tlsKeyNeedles(keyPem: string): Needle[] {
  const lines = keyPem.split("\n").filter((l) => l.length >= 16 && !l.startsWith("-----"));
  assert.ok(lines.length >= 3, "the PEM has a body");
  return [
    ...lines.map((value, i) => ({ what: `TLS private key line ${i + 1}`, value })),
    { what: "TLS private key PEM, base64", value: b64(keyPem).slice(0, 48) },
  ];
}

function apiKeyNeedles(): Needle[] {
  return [
    { what: "API key", value: API_KEY },
    { what: "API key secret part", value: API_KEY_SECRET_PART },
    { what: "API key, base64", value: b64(API_KEY) },
  ];
}

/** Every pre-auth key the fake minted: the full key, its secret part (after the public prefix). */
function preAuthKeyNeedles(w: World): Needle[] {
  return [...w.fake.state.preAuthKeys.values()].flatMap((k) => [
    { what: `pre-auth key ${k.id}`, value: k.key },
    { what: `pre-auth key ${k.id} secret part`, value: k.key.slice(`hskey-auth-${k.prefix}-`.length) },
  ]);
}

/** Names each needle found in each haystack ("" when clean). */
function leaks(haystacks: Record<string, string>, needles: Needle[]): string[] {
  const found: string[] = [];
  for (const [where, text] of Object.entries(haystacks)) {
    for (const n of needles) if (text.includes(n.value)) found.push(`${n.what} in ${where}`);
  }
  return found;
}

/** Hook requests a broken or hostile client could send, each carrying the API key somewhere. */
async function malformedHookAnswers(w: World): Promise<string[]> {
  const tailnet = w.parent("Tailnet", "home");
  const secret = {
    apiVersion: "v1",
    kind: "Secret",
    metadata: { name: "x", namespace: OPS },
    data: { apiKey: b64(API_KEY) },
  };
  const bodies: { url: string; payload: string }[] = [
    // not JSON, the key in the broken text
    { url: "/hooks/tailnet/sync", payload: `{"parent": {"apiKey": "${API_KEY}"` },
    // the wrong kind for the path, the key in related
    {
      url: "/hooks/egress/sync",
      payload: JSON.stringify({
        controller: {},
        parent: tailnet,
        children: {},
        related: { "v1/Secret": { "tailnet-system/x": secret } },
      }),
    },
    // a wrong envelope shape whose offending value is the key
    {
      url: "/hooks/tailnet/sync",
      payload: JSON.stringify({ controller: {}, parent: tailnet, children: API_KEY, related: {} }),
    },
    // no parent at all
    { url: "/hooks/site/customize", payload: JSON.stringify({ controller: { apiKey: API_KEY } }) },
  ];
  const answers: string[] = [];
  for (const b of bodies) {
    const res = await w.app.inject({
      method: "POST",
      url: b.url,
      headers: { "content-type": "application/json" },
      payload: b.payload,
    });
    assert.notEqual(res.statusCode, 200, `${b.url} refuses ${b.payload.slice(0, 40)}`);
    answers.push(res.body);
  }
  return answers;
}

describe("secrets never leave the Secrets", () => {
  it("system scenario, faults, rotation and bad requests: no planted value in logs, status, events, metrics, answers or non-Secret objects", async (t) => {
    const w = await world(t, { cert });
    await toReady(w);
    for (const spec of [
      { kind: "refused" as const },
      { kind: "unauthorized" as const },
      { kind: "status" as const, status: 500 },
      { kind: "malformed" as const },
    ]) {
      await w.fake.fault(spec);
      await w.settle();
      await w.fake.clearFaults();
      await w.settle();
    }
    // Someone edits the live policy by hand: the Tailnet rewrites it and records an Event.
    w.fake.setPolicy('{"acls": [{"action": "accept", "src": ["*"], "dst": ["*:*"]}]}');
    await w.settle();
    assert.deepEqual(
      w.events.events.filter((e) => !e.condition).map((e) => e.reason),
      ["PolicyDriftOverwritten"],
    );
    // Past the agent keys' half-life: new keys are minted (and must stay in their Secrets too).
    w.clock.now = new Date(T0.getTime() + 13 * 3600 * 1000);
    await w.settle();
    const badAnswers = await malformedHookAnswers(w);
    assert.deepEqual(w.mc.errors, []);

    const needles = [...apiKeyNeedles(), ...preAuthKeyNeedles(w), ...tlsKeyNeedles(cert.keyPem)];
    assert.ok(w.fake.state.preAuthKeys.size >= 5, `keys minted: ${w.fake.state.preAuthKeys.size}`);

    // The planted values are really in play: each lives in a Secret the world holds.
    const secrets = w.mc.list("Secret");
    const decoded = secrets.flatMap((s) => Object.keys(s.data ?? {}).map((k) => secretValue(s, k) ?? ""));
    assert.ok(decoded.includes(API_KEY), "the credentials Secret republishes the API key");
    assert.ok(decoded.includes(cert.keyPem), "the TLS Secret holds the key");
    for (const ns of ["shop", "monitoring", "infra"]) {
      const key = secretValue(w.keySecret(ns), "authkey");
      assert.ok(key && needles.some((n) => n.value === key), `the key Secret in ${ns} holds a minted key`);
    }
    // The log saw the moments a secret was handled: the policy write and every key creation.
    assert.ok(w.logs.some((l) => l.includes('"msg":"Headscale policy written"')));
    assert.equal(w.logs.filter((l) => /"keyId":"\d+"/.test(l)).length, w.fake.state.preAuthKeys.size);

    const nonSecrets = [...w.mc.objects.values()].filter((o) => o.kind !== "Secret");
    const haystacks: Record<string, string> = {
      "the server log": w.logs.join(""),
      "a status": JSON.stringify([
        ...[...w.mc.objects.values()].map((o) => o.status),
        ...w.mc.calls.map((c) => (c.response as { status?: unknown } | undefined)?.status),
      ]),
      "an Event": JSON.stringify(w.events.events),
      "/metrics": await w.metricsText(),
      "a non-200 hook answer": JSON.stringify([...w.failedCalls().map((c) => c.response), ...badAnswers]),
      "an object that is not a Secret": JSON.stringify(nonSecrets),
      "a hook answer's non-Secret children": JSON.stringify(
        w.mc.calls.flatMap((c) =>
          ((c.response as { children?: K8sObject[] } | undefined)?.children ?? []).filter((o) => o.kind !== "Secret"),
        ),
      ),
    };
    assert.deepEqual(leaks(haystacks, needles), []);
    // A replica's state (the machine keys its tailscaled wrote, issue 32) never leaves the hook either: not in
    // any answer, state Secrets included (they are answered as metadata only)
    const stateNeedles = [
      ["shop", "db-agent-0-state"],
      ["monitoring", "grafana-agent-0-state"],
      ["infra", "gw-gateway-0-state"],
    ].flatMap(([ns, name]) => {
      const key = machineKeyIn(w.mc, ns, name);
      assert.ok(decoded.includes(key), `${ns}/${name} holds its machine key`);
      return [
        { what: `${ns}/${name} machine key`, value: key },
        { what: `${ns}/${name} machine key, base64`, value: b64(key) },
      ];
    });
    const answers = JSON.stringify(w.mc.calls.map((c) => c.response));
    assert.deepEqual(leaks({ ...haystacks, "any hook answer": answers }, stateNeedles), []);
    // Control: the same search finds every needle where it belongs.
    const inSecrets = JSON.stringify(secrets) + decoded.join("\n");
    assert.ok(leaks({ secrets: inSecrets }, apiKeyNeedles()).length === apiKeyNeedles().length);
  });

  it("render prints no planted value for an equivalent input", async () => {
    const plantedPreAuthKey = `hskey-auth-rendrprefix1-${"PLANTEDpreAUTHkey".repeat(3)}0123456789abc`;
    const objects: K8sObject[] = [
      {
        apiVersion: "v1",
        kind: "Secret",
        metadata: { name: "headscale-api-key", namespace: OPS },
        data: { apiKey: b64(API_KEY) },
      },
      {
        apiVersion: "v1",
        kind: "ConfigMap",
        metadata: { name: "tailnet-policy-base", namespace: OPS },
        data: { "policy.hujson": BASE_POLICY },
      },
      {
        apiVersion: "v1",
        kind: "Secret",
        metadata: { name: "grafana-tls", namespace: "monitoring" },
        type: "kubernetes.io/tls",
        data: { "tls.crt": b64(cert.certPem), "tls.key": b64(cert.keyPem) },
      },
      ...renderParents(),
    ];
    const snapshot = {
      ...EMPTY_SNAPSHOT,
      preAuthKeys: [
        {
          user: null,
          id: "7",
          key: plantedPreAuthKey,
          reusable: true,
          ephemeral: true,
          used: false,
          expiration: "2026-11-30T10:00:00Z",
          createdAt: "2026-11-29T09:00:00Z",
          aclTags: [TAGS.egress],
        },
      ],
    };
    const result = await render({ objects, snapshot, now: T0 });
    assert.equal(result.objects.length, 5);
    assert.ok(
      result.headscaleWrites.some((x) => x.startsWith("POST /api/v1/preauthkey")),
      "render minted keys",
    );
    const printed = JSON.stringify(result);
    const needles = [
      ...apiKeyNeedles(),
      ...tlsKeyNeedles(cert.keyPem),
      { what: "planted pre-auth key", value: plantedPreAuthKey },
      { what: "a key render minted", value: "rendersecret" },
    ];
    assert.deepEqual(leaks({ "render output": printed }, needles), []);
  });
});

/** The world's parents as plain manifests (what a user would pass to `render -f`). */
function renderParents(): K8sObject[] {
  const spec = worldSpecs("https://headscale.example.com");
  spec.egress.targets[0].ports[0].port = 5432;
  return PARENTS.map((p) => ({
    apiVersion: API,
    kind: p.kind,
    metadata: { name: p.name, ...(p.namespace ? { namespace: p.namespace } : {}) },
    spec: {
      Tailnet: spec.tailnet,
      TailnetEgress: spec.egress,
      TailnetIngress: spec.ingress,
      TailnetSite: spec.site,
      TailnetGateway: spec.gateway,
    }[p.kind],
  }));
}
