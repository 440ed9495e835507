import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { HeadscaleClient } from "../../../src/headscale/client.js";
import { HeadscaleError } from "../../../src/headscale/errors.js";
import type { HsPreAuthKey } from "../../../src/headscale/types.js";
import type { K8sObject } from "../../../src/k8s/objects.js";
import {
  ensureAuthKey,
  type ObservedKey,
  PENDING_KEY_GRACE_MS,
  pendingKey,
} from "../../../src/kinds/shared/authkey.js";

const NOW = new Date("2026-11-29T10:00:00Z");
const at = (ms: number) => new Date(NOW.getTime() + ms).toISOString();
const TAG = "tag:k8s-shop-db";
const want = { tags: [TAG], reusable: true, ephemeral: true, notBefore: new Date("2026-11-01T00:00:00Z"), now: NOW };

const key = (id: string, extra: Partial<HsPreAuthKey> = {}): HsPreAuthKey => ({
  user: null,
  id,
  key: "hskey-auth-xxxxxxxxxxxx-***",
  reusable: true,
  ephemeral: true,
  used: false,
  expiration: at(3600_000),
  createdAt: at(-2000),
  aclTags: [TAG],
  ...extra,
});

const secret: K8sObject = { apiVersion: "v1", kind: "Secret", metadata: { name: "db-authkey-1", namespace: "shop" } };
const current: ObservedKey = {
  secret,
  keyId: "1",
  createdAt: new Date(NOW.getTime() - 30_000),
  expiresAt: new Date(NOW.getTime() + 30_000),
};

describe("pendingKey: a key another replica minted for this object moments ago", () => {
  const rows: [string, HsPreAuthKey[], ObservedKey | undefined, string | undefined][] = [
    ["a fresh key with this object's tags and flags", [key("2")], undefined, "2"],
    ["the newest of two", [key("2"), key("3", { createdAt: at(-1000) })], undefined, "3"],
    ["the current key itself is not pending", [key("1")], current, undefined],
    ["newer than the current key", [key("2", { createdAt: at(-10_000) })], current, "2"],
    ["older than the current key", [key("2", { createdAt: at(-40_000) })], current, undefined],
    ["other tags", [key("2", { aclTags: ["tag:k8s-shop-other"] })], undefined, undefined],
    ["more tags", [key("2", { aclTags: [TAG, "tag:x"] })], undefined, undefined],
    ["other flags (single-use)", [key("2", { reusable: false })], undefined, undefined],
    [
      "a user's key",
      [
        key("2", {
          user: {
            id: "1",
            name: "alice",
            createdAt: null,
            displayName: "",
            email: "",
            providerId: "",
            provider: "",
          } as HsPreAuthKey["user"],
        }),
      ],
      undefined,
      undefined,
    ],
    ["expired", [key("2", { expiration: at(-1) })], undefined, undefined],
    ["expired, year 0001", [key("2", { expiration: "0001-01-01T00:00:00Z" })], undefined, undefined],
    [
      "older than the grace (its Secret was lost)",
      [key("2", { createdAt: at(-PENDING_KEY_GRACE_MS - 1) })],
      undefined,
      undefined,
    ],
    ["no creation time", [key("2", { createdAt: null })], undefined, undefined],
  ];
  for (const [name, listed, cur, expected] of rows) {
    it(name, () => assert.equal(pendingKey(listed, want, cur)?.id, expected));
  }
});

describe("ensureAuthKey reads the key list fresh before minting", () => {
  const parent: K8sObject = {
    apiVersion: "tailnet.internal/v1alpha1",
    kind: "TailnetEgress",
    metadata: { name: "db", namespace: "shop", uid: "u1", creationTimestamp: "2026-11-01T00:00:00Z" },
  };
  const opts = { tags: [TAG], reusable: true, ephemeral: true, ttlSeconds: 3600, now: NOW, labels: {} };
  const client = (list: () => Promise<HsPreAuthKey[]>, created: string[]) =>
    ({
      preAuthKeys: {
        list,
        create: async () => {
          created.push("x");
          return key("9", { key: "hskey-auth-secret" });
        },
        expire: async () => {},
      },
    }) as unknown as HeadscaleClient;

  it("a pending key: nothing minted, the plan waits for its Secret", async () => {
    const created: string[] = [];
    const out = await ensureAuthKey(
      { action: "create", why: "missing" },
      client(async () => [key("2")], created),
      parent,
      opts,
    );
    assert.deepEqual(created, []);
    assert.equal(out.pendingKeyId, "2");
    assert.equal(out.secret, undefined);
    assert.match(
      out.error ?? "",
      /^key 2, minted for this object at .*waiting for it rather than minting a second key$/,
    );
  });

  it("no pending key: minted", async () => {
    const created: string[] = [];
    const out = await ensureAuthKey(
      { action: "create", why: "missing" },
      client(async () => [], created),
      parent,
      opts,
    );
    assert.deepEqual(created, ["x"]);
    assert.equal(out.keyId, "9");
  });

  it("the list cannot be read: nothing minted, the current Secret kept", async () => {
    const created: string[] = [];
    const failing = async () => {
      throw new HeadscaleError({
        kind: "http",
        operation: "GET /api/v1/preauthkey",
        status: 500,
        detail: "boom",
        classification: "other",
      } as ConstructorParameters<typeof HeadscaleError>[0]);
    };
    const out = await ensureAuthKey(
      { action: "create", why: "halfLife", current },
      client(failing, created),
      parent,
      opts,
    );
    assert.deepEqual(created, []);
    assert.equal(out.keyId, "1");
    assert.match(out.error ?? "", /^the key list could not be read before minting/);
  });
});
