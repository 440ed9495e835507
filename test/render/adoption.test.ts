// `render --headscale` gives the same adoption verdict as the cluster: a Tailnet in Apply without a base
// policy, on a Headscale holding a hand-written policy, is AdoptionRefused (and exits 1). The snapshot it
// renders against never takes a database error for "no policy stored".
import assert from "node:assert/strict";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { it } from "node:test";
import { fetchSnapshot } from "../../src/render/fetch-snapshot.js";
import { runRender } from "../../src/render/main.js";
import { useFakeHeadscale } from "../fakes/headscale/index.js";

const MANIFESTS = `apiVersion: tailnet.internal/v1alpha1
kind: Tailnet
metadata: { name: home }
spec:
  headscale:
    url: https://headscale.example.com
    apiKeySecretRef: { namespace: tailnet-system, name: headscale-api-key }
  policy: { mode: Apply }
  allowedIngressSources: ["autogroup:member"]
---
apiVersion: tailnet.internal/v1alpha1
kind: TailnetIngress
metadata: { name: grafana, namespace: monitoring }
spec:
  tailnetRef: { name: home }
  hostname: grafana
  allowFrom: ["autogroup:member"]
  exposes: [{ name: web, port: 443, backend: { service: grafana, port: 3000 } }]
`;

it("render: no base and a hand-written live policy is AdoptionRefused, with what would be lost", async (t) => {
  const fake = await useFakeHeadscale(t, {
    policy: '{"groups":{"group:eng":["alice@"]},"acls":[{"action":"accept","src":["group:eng"],"dst":["*:22"]}]}',
  });
  const d = mkdtempSync(join(tmpdir(), "render-adopt-"));
  writeFileSync(join(d, "m.yaml"), MANIFESTS);
  writeFileSync(join(d, "snap.json"), JSON.stringify(await fetchSnapshot({ url: fake.url, apiKey: fake.apiKey })));
  let out = "";
  const code = await runRender(["-f", join(d, "m.yaml"), "--headscale", join(d, "snap.json")], (s) => {
    out += s;
  });
  assert.equal(code, 1);
  assert.match(out, /reason: AdoptionRefused/);
  assert.match(out, /dropping 1 acl rule, groups group:eng; to keep it, export it into a base/);
  assert.match(out, /name: tailnet-home-live-policy/);
  assert.equal(fake.writes().length, 0, "render never writes");
});

it("snapshot: a database error reading the policy fails the snapshot, 'acl policy not found' is no policy", async (t) => {
  const fake = await useFakeHeadscale(t, {});
  assert.equal((await fetchSnapshot({ url: fake.url, apiKey: fake.apiKey })).policy, null);
  await fake.fault({ kind: "databaseError", path: /^\/api\/v1\/policy$/ });
  await assert.rejects(
    fetchSnapshot({ url: fake.url, apiKey: fake.apiKey }),
    /loading ACL from database: database is locked/,
  );
});
