/**
 * Two `serve` processes never mint two keys for the same object in one rotation. Metacontroller never runs
 * two hooks of one object at once, but the next sync may reach the other replica before the first one's
 * child Secret is in the informer cache: that replica sees the old children (no Secret, or the key past its
 * half-life). It finds the key just minted in Headscale's key list (this object's tags and flags, unexpired,
 * newer than the current key, minted within the last minute; src/kinds/shared/authkey.ts pendingKey) and
 * waits for its Secret instead of minting a second one.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { K8sObject } from "../../src/k8s/objects.js";
import { AUTHKEY_LABEL, CREATED_ANNOTATION, EXPIRES_ANNOTATION } from "../../src/kinds/shared/authkey.js";
import { type FakeHeadscale, useFakeHeadscale } from "../fakes/headscale/index.js";
import type { FakeMetacontroller } from "../fakes/metacontroller.js";
import { parentObject } from "../fixtures/hooks.js";
import { API, applyTailnet, lastSyncBody, replicas } from "./harness.js";

const mints = (fake: FakeHeadscale) => fake.count("POST", /^\/api\/v1\/preauthkey$/);

function keySecrets(mc: FakeMetacontroller, owner: K8sObject): K8sObject[] {
  return mc
    .list("Secret")
    .filter(
      (s) =>
        s.metadata.labels?.[AUTHKEY_LABEL] === "true" &&
        s.metadata.ownerReferences?.some((r) => r.uid === owner.metadata.uid),
    );
}

type Answer = { children: K8sObject[] };
const secretsIn = (text: string) =>
  (JSON.parse(text) as Answer).children.filter((c) => c.kind === "Secret" && c.metadata.labels?.[AUTHKEY_LABEL]);

describe("two replicas: one key per object and rotation", () => {
  it("egress, ingress and gateway: the replica that sees the old children waits for the key the other one minted", async (t) => {
    const fake = await useFakeHeadscale(t);
    const { mc, rr } = await replicas(t, 2);
    applyTailnet(mc, fake);
    await mc.settle(10);
    const parents: [string, string, K8sObject][] = [
      [
        "egress",
        "shop/db",
        parentObject(
          "TailnetEgress",
          "db",
          { tailnetRef: { name: "home" }, targets: [{ name: "pg", host: "100.64.0.20", ports: [{ port: 5432 }] }] },
          { namespace: "shop" },
        ),
      ],
      [
        "ingress",
        "shop/web",
        parentObject(
          "TailnetIngress",
          "web",
          {
            tailnetRef: { name: "home" },
            hostname: "web",
            allowFrom: ["group:eng"],
            exposes: [{ name: "http", port: 80, backend: { service: "web", port: 8080 } }],
          },
          { namespace: "shop" },
        ),
      ],
      [
        "gateway",
        "infra/gw",
        parentObject(
          "TailnetGateway",
          "gw",
          { tailnetRef: { name: "home" }, hostname: "gw", routes: [], dns: { zone: "ts.example.com" } },
          { namespace: "infra" },
        ),
      ],
    ];
    for (const [hook, name, parent] of parents) {
      mc.apply(parent);
      const live = () => mc.get(API, parent.kind, parent.metadata.name, parent.metadata.namespace) as K8sObject;
      const before = mints(fake);
      rr.pin(0);
      await mc.syncParent(live());
      assert.equal(mints(fake), before + 1, `${name}: replica 0 minted the first key`);
      const [minted] = keySecrets(mc, live());
      assert.ok(minted, `${name}: its Secret was applied`);

      // replica 1 gets the request replica 0 answered (its Secret not observed yet): no second key
      const stale = lastSyncBody(mc, parent.kind, name);
      const answer = await rr.post(1, `/hooks/${hook}/sync`, stale);
      assert.equal(answer.status, 200, answer.text);
      assert.equal(mints(fake), before + 1, `${name}: replica 1 did not mint a second key`);
      assert.deepEqual(secretsIn(answer.text), [], `${name}: and returned no Secret it cannot fill`);

      // from then on both replicas see the Secret and reuse it
      rr.pin(undefined);
      for (let i = 0; i < 4; i++) await mc.syncParent(live());
      assert.equal(mints(fake), before + 1, `${name}: reused by both replicas`);
      assert.deepEqual(
        keySecrets(mc, live()).map((s) => s.metadata.name),
        [minted.metadata.name],
      );
    }

    // Rotation at half-life: replica 0 rotates, replica 1 answering the old children does not rotate again.
    const [, name, parent] = parents[0];
    const live = () => mc.get(API, parent.kind, parent.metadata.name, parent.metadata.namespace) as K8sObject;
    const [secret] = keySecrets(mc, live());
    const created = new Date(Date.now() - 3600_000);
    const expires = new Date(Date.now() + 1800_000);
    mc.apply({
      ...secret,
      metadata: {
        ...secret.metadata,
        annotations: {
          ...secret.metadata.annotations,
          [CREATED_ANNOTATION]: created.toISOString(),
          [EXPIRES_ANNOTATION]: expires.toISOString(),
        },
      },
    });
    const before = mints(fake);
    rr.pin(0);
    await mc.syncParent(live());
    assert.equal(mints(fake), before + 1, "past its half-life, replica 0 rotated the key");
    const stale = lastSyncBody(mc, parent.kind, name);
    const answer = await rr.post(1, "/hooks/egress/sync", stale);
    assert.equal(answer.status, 200, answer.text);
    assert.equal(mints(fake), before + 1, "replica 1, seeing the old key past its half-life, did not rotate again");
    assert.deepEqual(
      secretsIn(answer.text).map((s) => s.metadata.name),
      [secret.metadata.name],
      "it keeps the current Secret until the new one is observed",
    );
    rr.pin(undefined);
    for (let i = 0; i < 4; i++) await mc.syncParent(live());
    assert.equal(mints(fake), before + 1);
    assert.equal(keySecrets(mc, live()).length, 1);
    // agents rotate in place (issue 32): the same Secret now holds the new key
    const keyId = (o: K8sObject | undefined) => o?.metadata.annotations?.["tailnet.internal/key-id"];
    assert.equal(keySecrets(mc, live())[0].metadata.name, secret.metadata.name, "the same Secret");
    assert.notEqual(keyId(keySecrets(mc, live())[0]), keyId(secret), "the rotated key is in use");
    assert.deepEqual(mc.errors, []);
  });
});
