import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { decideIngress, planAuthKey } from "../../../src/kinds/ingress/decide.js";
import { AT, failed, hsNode, ok, policy } from "../shared/fixtures.js";
import { ingress, scraped, TAG, WEB } from "./fixtures.js";
import { type Certificates, certificates, healthyInput, type Over, VALIDITY } from "./inputs.js";

let certs: Certificates;
before(async () => {
  certs = await certificates();
});
after(() => certs.pki.cleanup());

const input = (over: Over = {}) => healthyInput(certs.good, over);
const older = () =>
  ingress("old", { namespace: "team", created: "2026-10-01T00:00:00Z", exposes: [{ ...WEB, aliases: [] }] });

describe("decideIngress: status, children, resync", () => {
  it("publishes the tag, the ingress-level name and each expose's names and reachability, sorted", () => {
    const parent = ingress("grafana", {
      exposes: [
        { ...WEB, name: "web" },
        { name: "api", port: 8443, backend: { service: "grafana", port: 3001 }, tls: { secretName: "grafana-tls" } },
      ],
    });
    const d = decideIngress(
      input({
        parent,
        scrapes: [
          scraped([
            { name: "web", reachable: true },
            { name: "api", reachable: false },
          ]),
        ],
      }),
    );
    assert.deepEqual(d.status, {
      tag: TAG,
      dnsName: "grafana.ts.example.com",
      exposes: [
        { name: "api", dnsName: "grafana.ts.example.com", dnsAliases: [], reachable: false },
        { name: "web", dnsName: "dash.ts.example.com", dnsAliases: ["grafana-eu.ts.example.com"], reachable: true },
      ],
    });
    assert.deepEqual(d.exposes, [
      { name: "web", reachable: true },
      { name: "api", reachable: false },
    ]);
  });

  it("does not publish names in conflict nor any name of an ingress with an invalid one; reachability unknown is left out", () => {
    const parent = ingress();
    const d = decideIngress(input({ parent, ingresses: [older(), parent], scrapes: [] }));
    assert.deepEqual(d.status.exposes, [{ name: "web", dnsAliases: ["grafana-eu.ts.example.com"] }]);
    assert.equal(d.status.dnsName, "grafana.ts.example.com");
    const bad = ingress("grafana", { exposes: [{ ...WEB, aliases: ["Nope"] }] });
    const d2 = decideIngress(input({ parent: bad, ingresses: [bad] }));
    assert.deepEqual(d2.status, { tag: TAG, exposes: [{ name: "web", dnsAliases: [], reachable: true }] });
  });

  it("returns the agent children with the key Secret, and the observed children unchanged without a Tailnet", () => {
    const d = decideIngress(input());
    assert.deepEqual(
      d.children.map((c) => `${c.kind}/${c.metadata.name}`),
      [
        "ServiceAccount/grafana-agent",
        "ConfigMap/grafana-agent",
        "Deployment/grafana-agent",
        "NetworkPolicy/grafana-agent",
        "Secret/grafana-authkey-4",
      ],
    );
    const observed = d.children.map((c) => ({
      ...c,
      metadata: { ...c.metadata, uid: "x", annotations: { ...(c.metadata.annotations ?? {}) } },
    }));
    const gone = decideIngress(
      input({
        children: observed,
        tailnet: { ok: false, reason: "NoTailnet", message: "gone" },
        policy: undefined,
        nodes: undefined,
        authKey: {},
      }),
    );
    assert.equal(gone.children.length, 5, "no child dropped");
    assert.ok(
      gone.children.every((c) => c.metadata.uid === undefined),
      "server-owned fields stripped",
    );
  });

  it("no pre-auth key: no Deployment (never a tailscale container without its key); a running one is kept", () => {
    const none = decideIngress(input({ authKey: { error: "Headscale POST /api/v1/preauthkey: 500" } }));
    assert.deepEqual(
      none.children.map((c) => `${c.kind}/${c.metadata.name}`),
      ["ServiceAccount/grafana-agent", "ConfigMap/grafana-agent", "NetworkPolicy/grafana-agent"],
    );
    const running = decideIngress(input()).children.find((c) => c.kind === "Deployment");
    assert.ok(running);
    const kept = decideIngress(
      input({ children: [{ ...running, status: { readyReplicas: 1 } }], authKey: { error: "down" } }),
    ).children.find((c) => c.kind === "Deployment");
    assert.deepStrictEqual(kept, running, "the observed Deployment comes back as it is");
  });

  it("resyncs while waiting on the outside world, at key rotation and at certificate expiry", () => {
    assert.equal(decideIngress(input({ nodes: ok([]) })).resyncAfterSeconds, 30);
    // healthy: the key reaches half-life at 18:00 (8 h after AT), before the certificate expires
    assert.equal(decideIngress(input()).resyncAfterSeconds, 8 * 3600);
    const noKey = decideIngress(input({ authKey: {} }));
    assert.equal(noKey.resyncAfterSeconds, Math.ceil((VALIDITY.notAfter.getTime() - AT.getTime()) / 1000));
    const none = decideIngress(
      input({
        tailnet: { ok: false, reason: "NoTailnet", message: "gone" },
        policy: undefined,
        nodes: undefined,
        authKey: {},
      }),
    );
    assert.equal(none.resyncAfterSeconds, undefined, "a missing Tailnet is not polled");
  });

  it("writes to Headscale only when the Tailnet resolved and this sync's reads succeeded", () => {
    const base = input({ authKey: {} });
    assert.deepEqual(planAuthKey(base), { plan: { action: "create", why: "missing" }, write: true });
    assert.equal(planAuthKey({ ...base, nodes: failed("GET /api/v1/node", "timeout") }).write, false);
    assert.equal(planAuthKey({ ...base, policy: failed("GET /api/v1/policy", "timeout") }).write, false);
    assert.equal(
      planAuthKey({ ...base, tailnet: { ok: false, reason: "NoAPIKey", message: "x" }, policy: undefined }).write,
      false,
    );
  });

  it("uses spec.tag as the effective tag and names it everywhere", () => {
    const parent = ingress("grafana", { tag: "tag:dash" });
    const d = decideIngress(
      input({
        parent,
        policy: ok(policy({ "tag:dash": [] })),
        nodes: ok([hsNode({ id: "9", name: "grafana", tags: ["tag:dash"] })]),
      }),
    );
    assert.equal(d.status.tag, "tag:dash");
    assert.equal(d.conditions.find((c) => c.type === "Ready")?.reason, "Ready");
    const deployment = d.children.find((c) => c.kind === "Deployment");
    // the key's aclTags tag the node; Headscale >= 0.28 refuses a requested tag with a pre-auth key
    assert.doesNotMatch(JSON.stringify(deployment), /--advertise-tags/);
  });
});
