// Issue 23 at the Tailnet: an object its own sync refuses as TagInUse renders nothing into the policy, so a
// tenant's allowFrom never opens an admin's node that carries the tenant's granted tag; and a newly derived
// tag another object kept from before the upgrade stays that object's alone.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { K8sObject } from "../../../../src/k8s/objects.js";
import { parseHuJson } from "../../../../src/policy/hujson.js";
import { ingress } from "./fixtures.js";
import { harness, settleStable } from "./harness.js";

type Grant = { src?: string[]; dst?: string[] };

/** The grants of the policy Headscale stores whose dst names `tag`, as "src → dst". */
function grantsTo(h: { fake: { state: { policies: { text: string }[] } } }, tag: string): string[] {
  const parsed = parseHuJson(h.fake.state.policies.at(-1)?.text ?? "{}");
  if (!parsed.ok) throw new Error(parsed.message);
  const grants = ((parsed.value as { grants?: Grant[] }).grants ?? []).filter((g) =>
    (g.dst ?? []).some((d) => d === tag || d.startsWith(`${tag}:`)),
  );
  return grants.map((g) => `${(g.src ?? []).join(",")} → ${(g.dst ?? []).join(",")}`);
}

const namespace = (name: string): K8sObject => ({
  apiVersion: "v1",
  kind: "Namespace",
  metadata: { name, labels: {} },
});
const tagged = (name: string, ns: string, tag: string) => ingress(name, ns, { tag });

describe("Tailnet tenancy (issue 23)", () => {
  it("a granted tag an admin's node carries (TagInUse) renders no grant; a free granted tag does", async (t) => {
    const h = await harness(t, {
      spec: { tenancy: { tags: [{ namespaceSelector: {}, tags: ["tag:db", "tag:web"] }] } },
    });
    h.fake.addNode({ name: "db-srv", tags: ["tag:db"] });
    h.mc.apply(namespace("monitoring"));
    h.mc.apply(tagged("pg", "monitoring", "tag:db"));
    h.mc.apply(tagged("web", "monitoring", "tag:web"));
    await settleStable(h);
    assert.equal(h.reason("PolicyApplied"), "InSync");
    assert.deepEqual(grantsTo(h, "tag:db"), []);
    assert.deepEqual(grantsTo(h, "tag:web"), ["group:eng → tag:web"]);
  });

  it("a new object's derived tag that an older object kept (status.tag) renders only the older one's grants", async (t) => {
    const h = await harness(t, { spec: { allowedIngressSources: ["group:eng", "group:platform"] } });
    // team-a/db from before injective derivation: its status keeps tag:k8s-team-a-db
    const old = { ...ingress("db", "team-a", { allowFrom: ["group:eng"] }), status: { tag: "tag:k8s-team-a-db" } };
    // team/a-db, created after the upgrade, derives tag:k8s-team-a-db too (a namespace without "-")
    const twin = ingress("a-db", "team", { allowFrom: ["group:platform"] });
    h.mc.apply(old);
    h.mc.apply(twin);
    await settleStable(h);
    assert.equal(h.reason("PolicyApplied"), "InSync");
    assert.deepEqual(grantsTo(h, "tag:k8s-team-a-db"), ["group:eng → tag:k8s-team-a-db"]);
  });
});

// Issue 31 item 8: the upgrade window closes. The Tailnet publishes every kept legacy tag (status.keptLegacyTags),
// the one object every workload sync is sent, so the twin's own sync refuses it too: no key, no agent.
describe("Tailnet tenancy: kept legacy tags (issue 31)", () => {
  it("a new object whose derived tag another object kept is refused by its own sync (TagInUse): nothing minted", async (t) => {
    const h = await harness(t, { realKinds: ["ingress"], timeoutMs: 1000 });
    h.mc.apply(namespace("team-a"));
    h.mc.apply(namespace("team"));
    // team-a/db from before injective derivation keeps tag:k8s-team-a-db; team/a-db derives the same tag
    h.mc.apply({ ...ingress("db", "team-a"), status: { tag: "tag:k8s-team-a-db" } });
    await h.mc.settle();
    h.mc.apply(ingress("a-db", "team"));
    await settleStable(h);
    assert.deepEqual(h.status().keptLegacyTags, ["tag:k8s-team-a-db"]);
    const twin = h.mc.condition("TailnetIngress", "a-db", "Ready", "team");
    assert.equal(twin?.reason, "TagInUse");
    assert.equal(
      twin?.message,
      "tag:k8s-team-a-db, the tag derived for this object, is kept by an object created before tags were derived injectively (the Tailnet's status.keptLegacyTags); a tag has one owner, so nothing is minted for it — rename this object, or recreate the older one so it derives its own tag",
    );
    const minted = h.fake
      .writes()
      .filter((r) => r.path === "/api/v1/preauthkey")
      .map((r) => (r.body as { aclTags: string[] }).aclTags);
    assert.deepEqual(minted, [["tag:k8s-team-a-db"]], "the twin minted a key under the keeper's tag");
    const twinObj = h.mc.get("tailnet.internal/v1alpha1", "TailnetIngress", "a-db", "team");
    assert.ok(twinObj);
    assert.deepEqual(
      h.mc.childrenOf(twinObj).map((c) => c.kind),
      [],
      "the twin runs an agent",
    );
    // the keeper itself is never refused by its own kept tag
    assert.notEqual(h.mc.condition("TailnetIngress", "db", "Ready", "team-a")?.reason, "TagInUse");
  });

  it("a twin that minted before the kept tags were published has its key expired once they are", async (t) => {
    const h = await harness(t, { realKinds: ["ingress"], timeoutMs: 1000 });
    h.mc.apply(namespace("team-a"));
    h.mc.apply(namespace("team"));
    h.mc.apply(ingress("a-db", "team"));
    await h.mc.settle();
    const [twinKey] = [...h.fake.state.preAuthKeys.values()];
    assert.deepEqual(twinKey?.aclTags, ["tag:k8s-team-a-db"]);
    assert.ok(twinKey.expiration.getTime() > h.now().getTime());
    // the keeper from before the upgrade shows up (its status keeps tag:k8s-team-a-db)
    h.mc.apply({ ...ingress("db", "team-a"), status: { tag: "tag:k8s-team-a-db" } });
    await settleStable(h);
    assert.equal(h.mc.condition("TailnetIngress", "a-db", "Ready", "team")?.reason, "TagInUse");
    const after = h.fake.state.preAuthKeys.get(twinKey.id);
    assert.ok(after && after.expiration.getTime() <= h.now().getTime(), "the twin's key under the kept tag is valid");
  });
});

// Issue 27 part 3: who may turn a TailnetGateway into an exit node is the Tailnet's admins' decision
// (spec.tenancy.exitNodes), judged by the render as by the gateway's own sync (tenancy.ts exitNodeAdmission).
describe("Tailnet tenancy: exit-node gateways", () => {
  const gatewayObj = (name: string, ns: string, spec: Record<string, unknown>): K8sObject => ({
    apiVersion: "tailnet.internal/v1alpha1",
    kind: "TailnetGateway",
    metadata: { name, namespace: ns, uid: `uid-${ns}-${name}`, creationTimestamp: "2026-11-01T00:00:00Z" },
    spec: { tailnetRef: { name: "home" }, routes: ["10.96.0.0/12"], ...spec },
  });
  const live = (h: { fake: { state: { policies: { text: string }[] } } }) => {
    const parsed = parseHuJson(h.fake.state.policies.at(-1)?.text ?? "{}");
    if (!parsed.ok) throw new Error(parsed.message);
    return parsed.value as { autoApprovers?: { exitNode?: string[]; routes?: Record<string, string[]> } };
  };
  const labelled = (name: string, labels: Record<string, string>): K8sObject => ({
    ...namespace(name),
    metadata: { name, labels },
  });

  it("only a namespace spec.tenancy.exitNodes selects gets autoApprovers.exitNode and the autogroup:internet grant", async (t) => {
    const h = await harness(t, {
      spec: { tenancy: { exitNodes: { namespaceSelector: { matchLabels: { "tailnet.internal/exit": "true" } } } } },
    });
    h.mc.apply(labelled("infra", { "tailnet.internal/exit": "true" }));
    h.mc.apply(labelled("team", {}));
    h.mc.apply(gatewayObj("gw", "infra", { exitNode: { allowFrom: ["group:eng"] } }));
    h.mc.apply(gatewayObj("sneaky", "team", { exitNode: { allowFrom: ["autogroup:member"] } }));
    // a default route in routes is no way around it (InvalidSpec on the gateway, left out here)
    h.mc.apply(gatewayObj("routed", "team", { routes: ["192.168.97.0/24", "0.0.0.0/0", "::/0"] }));
    // nor halves of it, and a selected namespace's allowFrom is held to allowedIngressSources (issue 31 item 5)
    h.mc.apply(gatewayObj("halves", "team", { routes: ["192.168.98.0/24", "::/1", "8000::/1"] }));
    h.mc.apply(gatewayObj("wide", "infra", { routes: [], exitNode: { allowFrom: ["group:eng", "autogroup:member"] } }));
    await settleStable(h);
    assert.equal(h.reason("PolicyApplied"), "InSync");
    assert.deepEqual(live(h).autoApprovers?.exitNode, ["tag:k8s-infra-gw"]);
    assert.deepEqual(grantsTo(h, "autogroup:internet"), ["group:eng → autogroup:internet"]);
    assert.equal(live(h).autoApprovers?.routes?.["0.0.0.0/0"], undefined);
    assert.deepEqual(live(h).autoApprovers?.routes?.["192.168.97.0/24"], ["tag:k8s-team-routed"]);
    assert.deepEqual(live(h).autoApprovers?.routes?.["192.168.98.0/24"], ["tag:k8s-team-halves"]);
    assert.equal(live(h).autoApprovers?.routes?.["::/1"], undefined);
    assert.equal(live(h).autoApprovers?.routes?.["8000::/1"], undefined);
    // the Service network is reserved in this Tailnet (fixtures.ts): no gateway route into it is auto-approved
    assert.equal(live(h).autoApprovers?.routes?.["10.96.0.0/12"], undefined);
    assert.match(h.condition("PolicyRendered").message, /team\/routed.*routes.*0\.0\.0\.0\/0/s);

    // the admins take the right back: the next render has neither the approver nor the grant
    h.respec({ tenancy: {} });
    await settleStable(h);
    assert.equal(h.reason("PolicyApplied"), "InSync");
    assert.equal(live(h).autoApprovers?.exitNode, undefined);
    assert.deepEqual(grantsTo(h, "autogroup:internet"), []);
  });
});
