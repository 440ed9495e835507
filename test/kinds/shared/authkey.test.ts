import assert from "node:assert/strict";
import { describe, it } from "node:test";
import fc from "fast-check";
import { createHeadscaleClient, type HeadscaleClient } from "../../../src/headscale/client.js";
import { HeadscaleError } from "../../../src/headscale/errors.js";
import type { HsPreAuthKey } from "../../../src/headscale/types.js";
import { HeadscaleView } from "../../../src/headscale/view.js";
import type { K8sObject } from "../../../src/k8s/objects.js";
import {
  AUTHKEY_DATA_KEY,
  authKeySecret,
  ensureAuthKey,
  expirableKeyIds,
  KEY_ID_ANNOTATION,
  type ObservedKey,
  REPLICA_KEY_FLAGS,
  stableAuthKeySecretName,
} from "../../../src/kinds/shared/authkey.js";
import {
  firstKeySince,
  freshKeyList,
  KEY_CREATED_ORDER_SLACK_MS,
  PENDING_KEY_GRACE_MS,
  type PendingAsk,
  pendingKey,
  pendingKeyFor,
  pendingKeys,
} from "../../../src/kinds/shared/pending-key.js";
import { useFakeHeadscale } from "../../fakes/headscale/index.js";

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

/** A user who owns a key (TailnetAuthKey spec.user). */
const user = (id: string) =>
  ({
    id,
    name: `u${id}`,
    createdAt: null,
    displayName: "",
    email: "",
    providerId: "",
    provider: "",
  }) as HsPreAuthKey["user"];

/** The writes and fresh reads go through a view over the client (no cache: TTL 0). */
const viewOf = (client: HeadscaleClient) => new HeadscaleView(client, 0, () => NOW);

const secret: K8sObject = { apiVersion: "v1", kind: "Secret", metadata: { name: "db-authkey-1", namespace: "shop" } };
const current: ObservedKey = {
  secret,
  keyId: "1",
  createdAt: new Date(NOW.getTime() - 30_000),
  expiresAt: new Date(NOW.getTime() + 30_000),
};

describe("firstKeySince: where the end begins of Headscale's key list that may hold a key created since a moment", () => {
  const created = (k: HsPreAuthKey) => Date.parse(k.createdAt ?? "");
  it("holds every key created since then while ids rise with creation times (up to the slack)", () => {
    fc.assert(
      fc.property(
        // per key: the id step and how far its createdAt runs behind an even clock (within the slack, or missing)
        fc.array(
          fc.record({
            step: fc.integer({ min: 1, max: 3 }),
            skew: fc.option(fc.integer({ min: 0, max: KEY_CREATED_ORDER_SLACK_MS })),
          }),
          { maxLength: 60 },
        ),
        fc.integer({ min: -3_600_000, max: 3_600_000 }),
        (shape, sinceOffset) => {
          let id = 0;
          const listed = shape.map((k, i) => {
            id += k.step;
            return key(String(id), { createdAt: k.skew === null ? null : at(-3_600_000 + i * 120_000 - k.skew) });
          });
          const since = NOW.getTime() + sinceOffset;
          const got = listed.slice(firstKeySince(listed, since));
          // pendingKey never takes a key without a creation time
          for (const k of listed) if (created(k) >= since) assert.ok(got.includes(k), `key ${k.id} is kept`);
        },
      ),
      { numRuns: 1000 },
    );
  });

  it("a list whose newest ids are out of order is read whole", () => {
    const listed = [key("1", { createdAt: at(-9_000_000) }), key("3"), key("2")];
    assert.equal(firstKeySince(listed, NOW.getTime() - 60_000), 0);
  });

  it("a list that grew since it was last read is judged again (the view appends its mints to its cached list)", () => {
    const listed = [key("1", { createdAt: at(-9_000_000) }), key("2"), key("3")];
    const since = NOW.getTime() - 60_000;
    assert.equal(firstKeySince(listed, since), 1);
    assert.equal(firstKeySince(listed, since), 1, "the same list again");
    listed.push(key("2"));
    assert.equal(firstKeySince(listed, since), 0, "a smaller id appended: the order no longer holds");
    listed.push(key("4"));
    assert.equal(firstKeySince(listed, since), 0);
  });

  it("stops at the first key older than the slack: a mint at 20,000 keys reads the newest few", () => {
    const listed = Array.from({ length: 20_000 }, (_, i) =>
      key(String(i + 1), { createdAt: at(-20_000_000 + i * 1000) }),
    );
    const got = listed.slice(firstKeySince(listed, NOW.getTime() - 60_000));
    assert.ok(got.length < 800 && got.length > 60, `${got.length} keys read`);
    assert.equal(got.at(-1), listed.at(-1));
  });
});

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

  it("a TailnetAuthKey for a user waits on exactly that user's key (issue 27)", () => {
    const forUser = { ...want, tags: [], user: "1" };
    const listed = [key("2", { aclTags: [], user: user("1") }), key("3", { aclTags: [], user: user("7") })];
    assert.equal(pendingKey(listed, forUser)?.id, "2");
    assert.equal(pendingKey([listed[1]], forUser), undefined, "another user's key");
    assert.equal(pendingKey([key("4", { aclTags: [] })], forUser), undefined, "a key with no user");
  });
});

describe("pendingKeys: the mints sharing a fresh read answered in one pass", () => {
  const tags = ["tag:a", "tag:b", "tag:c"];
  it("differential: each answer is pendingKey's, whatever the tags, order, flags, users and times", () => {
    const tagList = fc.array(fc.constantFrom(...tags), { maxLength: 3 });
    const listedKey = fc.record({
      step: fc.integer({ min: -1, max: 3 }),
      aclTags: tagList,
      reusable: fc.boolean(),
      user: fc.option(fc.constantFrom("1", "2")),
      expired: fc.boolean(),
      age: fc.option(fc.integer({ min: 0, max: 2 * KEY_CREATED_ORDER_SLACK_MS })),
    });
    const ask = fc.record({
      tags: tagList,
      reusable: fc.boolean(),
      user: fc.option(fc.constantFrom("1", "2")),
      current: fc.option(fc.record({ id: fc.integer({ min: 1, max: 40 }), age: fc.nat(120_000) })),
    });
    fc.assert(
      fc.property(
        fc.array(listedKey, { maxLength: 40 }),
        fc.array(ask, { minLength: 2, maxLength: 6 }),
        (shape, raw) => {
          let id = 0;
          const listed = shape.map((k) => {
            id += k.step;
            return key(String(id), {
              aclTags: k.aclTags,
              reusable: k.reusable,
              user: k.user === null ? null : user(k.user),
              expiration: k.expired ? at(-1) : at(3600_000),
              createdAt: k.age === null ? null : at(-k.age),
            });
          });
          const asks: PendingAsk[] = raw.map((a) => ({
            want: { ...want, tags: a.tags, reusable: a.reusable, ...(a.user === null ? {} : { user: a.user }) },
            current:
              a.current === null
                ? undefined
                : { ...current, keyId: String(a.current.id), createdAt: new Date(NOW.getTime() - a.current.age) },
          }));
          const one = asks.map((a) => pendingKey(listed, a.want, a.current)?.id);
          assert.deepEqual(
            pendingKeys(listed, asks).map((k) => k?.id),
            one,
          );
        },
      ),
      { numRuns: 2000 },
    );
  });

  it("the mints that join one read are answered from one pass, each its own key", async () => {
    let reads = 0;
    const listed = [key("7", { aclTags: ["tag:a"] }), key("8", { aclTags: ["tag:b"] })];
    const c = viewOf({
      preAuthKeys: {
        list: async () => {
          reads++;
          return listed.map((k) => ({ ...k }));
        },
      },
    } as unknown as HeadscaleClient);
    const asks: PendingAsk[] = ["tag:a", "tag:b", "tag:c"].map((t) => ({ want: { ...want, tags: [t] } }));
    const got = await Promise.all(
      asks.map(async (a) => {
        const read = await freshKeyList(c, a);
        assert.ok(read.ok);
        return pendingKeyFor(read.value, a)?.id;
      }),
    );
    assert.deepEqual(got, ["7", "8", undefined]);
    assert.equal(reads, 1, "one read for the three mints");
    const alone = await freshKeyList(c);
    assert.ok(alone.ok);
    assert.equal(pendingKeyFor(alone.value, asks[0])?.id, "7", "an ask the read does not carry is answered alone");
  });
});

describe("ensureAuthKey reads the key list fresh before minting", () => {
  const parent: K8sObject = {
    apiVersion: "tailnet.internal/v1alpha1",
    kind: "TailnetEgress",
    metadata: { name: "db", namespace: "shop", uid: "u1", creationTimestamp: "2026-11-01T00:00:00Z" },
  };
  const opts = { tags: [TAG], reusable: true, ephemeral: true, ttlSeconds: 3600, now: NOW, labels: {} };
  const client = (list: () => Promise<HsPreAuthKey[]>, created: string[]) =>
    viewOf({
      preAuthKeys: {
        list,
        create: async () => {
          created.push("x");
          return key("9", { key: "hskey-auth-secret" });
        },
        expire: async () => {},
      },
    } as unknown as HeadscaleClient);

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

  it("stable: a rotation rewrites the same Secret name, <parent>-authkey, with the new key and annotations", async () => {
    const created: string[] = [];
    const out = await ensureAuthKey(
      { action: "create", why: "halfLife", current },
      client(async () => [], created),
      parent,
      { ...opts, ...REPLICA_KEY_FLAGS, stable: true },
    );
    assert.deepEqual(created, ["x"]);
    assert.equal(out.secret?.metadata.name, "db-authkey");
    assert.equal(out.secret?.metadata.annotations?.[KEY_ID_ANNOTATION], "9");
    assert.deepEqual(out.secret?.data, { [AUTHKEY_DATA_KEY]: Buffer.from("hskey-auth-secret").toString("base64") });
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

describe("the fresh key list is shared by concurrent mints on one connection", () => {
  const deferred = <T>() => {
    let resolve!: (v: T) => void;
    const promise = new Promise<T>((r) => {
      resolve = r;
    });
    return { promise, resolve };
  };
  const parentOf = (name: string): K8sObject => ({
    apiVersion: "tailnet.internal/v1alpha1",
    kind: "TailnetEgress",
    metadata: { name, namespace: "shop", uid: `u-${name}`, creationTimestamp: "2026-11-01T00:00:00Z" },
  });

  it("a wave of 200 first mints reads the key list a few times, not 200, and mints each key once", async (t) => {
    const fake = await useFakeHeadscale(t);
    const client = createHeadscaleClient({ url: fake.url, apiKey: fake.apiKey, timeoutMs: 10_000, retries: 0 });
    t.after(() => client.close());
    const view = viewOf(client);
    const now = new Date();
    const names = Array.from({ length: 200 }, (_, i) => `db${i}`);
    const outs = await Promise.all(
      names.map((name) =>
        ensureAuthKey({ action: "create", why: "missing" }, view, parentOf(name), {
          tags: [`tag:k8s-shop-${name}`],
          reusable: true,
          ephemeral: true,
          ttlSeconds: 3600,
          now,
          labels: {},
        }),
      ),
    );
    assert.deepEqual(
      outs.filter((o) => o.error),
      [],
    );
    assert.equal(new Set(outs.map((o) => o.keyId)).size, 200);
    assert.equal(fake.count("POST", /^\/api\/v1\/preauthkey$/), 200);
    const reads = fake.count("GET", /^\/api\/v1\/preauthkey$/);
    t.diagnostic(`${reads} key-list reads for 200 concurrent first mints`);
    assert.ok(reads >= 1 && reads <= 3, `${reads} key-list reads for 200 concurrent mints`);
    fake.assertNoViolations();
  });

  it("mints arriving one after another (workers coming back) share one read", async () => {
    let calls = 0;
    const c = viewOf({
      preAuthKeys: {
        list: async () => {
          calls++;
          return [key("5")];
        },
      },
    } as unknown as HeadscaleClient);
    const reads = [];
    for (let i = 0; i < 4; i++) {
      reads.push(freshKeyList(c));
      // the next worker's mint arrives after this one started waiting (a turn later, never a timer later)
      await Promise.resolve();
    }
    await Promise.all(reads);
    // before the gather window: the first caller read at once, the other three needed a second read
    assert.equal(calls, 1);
  });

  it("a caller never joins a read that started before it: a key minted meanwhile by the other replica is seen", async () => {
    let listed: HsPreAuthKey[] = [];
    const pendingReads: { resolve: (v: HsPreAuthKey[]) => void; snapshot: HsPreAuthKey[] }[] = [];
    const created: string[] = [];
    const c = viewOf({
      preAuthKeys: {
        // each read answers what Headscale held when the request started, but only when the test lets it
        list: () => {
          const d = deferred<HsPreAuthKey[]>();
          pendingReads.push({ resolve: d.resolve, snapshot: [...listed] });
          return d.promise;
        },
        create: async () => {
          created.push("x");
          return key("9", { key: "hskey-auth-secret" });
        },
        expire: async () => {},
      },
    } as unknown as HeadscaleClient);
    const opts = (name: string) => ({
      tags: [`tag:k8s-shop-${name}`],
      reusable: true,
      ephemeral: true,
      ttlSeconds: 3600,
      now: NOW,
      labels: {},
    });
    // "a" starts read 1; the other replica then mints "b"'s key; "b" arrives while read 1 is in flight
    const a = ensureAuthKey({ action: "create", why: "missing" }, c, parentOf("a"), opts("a"));
    // read 1 starts after the gather window (KEY_LIST_GATHER_MS)
    while (pendingReads.length < 1) await new Promise((r) => setTimeout(r, 1));
    listed = [key("2", { aclTags: ["tag:k8s-shop-b"] })];
    const b = ensureAuthKey({ action: "create", why: "missing" }, c, parentOf("b"), opts("b"));
    const b2 = ensureAuthKey({ action: "create", why: "missing" }, c, parentOf("b2"), opts("b2"));
    assert.equal(pendingReads.length, 1);
    pendingReads[0]?.resolve(pendingReads[0].snapshot);
    // read 2 starts once read 1 settled, shared by "b" and "b2"
    while (pendingReads.length < 2) await new Promise((r) => setImmediate(r));
    pendingReads[1]?.resolve(pendingReads[1].snapshot);
    const [outA, outB, outB2] = await Promise.all([a, b, b2]);
    assert.equal(pendingReads.length, 2);
    assert.equal(outA.keyId, "9");
    assert.equal(outB.pendingKeyId, "2");
    assert.equal(outB.secret, undefined);
    assert.equal(outB2.keyId, "9");
    assert.deepEqual(created, ["x", "x"]);
  });

  it("a failed read fails its callers; those waiting for the next read get that one, and a later call reads again", async () => {
    let calls = 0;
    const d = deferred<HsPreAuthKey[]>();
    const boom = new HeadscaleError({
      kind: "http",
      operation: "GET /api/v1/preauthkey",
      status: 500,
      detail: "boom",
      classification: "other",
    });
    const c = viewOf({
      preAuthKeys: {
        list: () => {
          calls++;
          return calls === 1 ? d.promise.then(() => Promise.reject(boom)) : Promise.resolve([key("5")]);
        },
      },
    } as unknown as HeadscaleClient);
    const ids = (o: Awaited<ReturnType<typeof freshKeyList>>) => (o.ok ? o.value.map((k) => k.id) : o.error.message);
    const first = freshKeyList(c);
    while (calls < 1) await new Promise((r) => setTimeout(r, 1)); // it started (after the gather window)
    const joiners = [freshKeyList(c), freshKeyList(c)];
    d.resolve([]);
    assert.equal(ids(await first), "Headscale GET /api/v1/preauthkey: 500 boom");
    assert.deepEqual((await Promise.all(joiners)).map(ids), [["5"], ["5"]]);
    assert.equal(calls, 2);
    assert.deepEqual(ids(await freshKeyList(c)), ["5"]);
    assert.equal(calls, 3);
  });
});

describe("the stable key Secret (issue 32)", () => {
  const parent: K8sObject = {
    apiVersion: "tailnet.internal/v1alpha1",
    kind: "TailnetEgress",
    metadata: { name: "db", namespace: "shop", uid: "u1" },
  };
  const stable = (id: string, full: string) =>
    authKeySecret(parent, { id, key: full, createdAt: NOW, expiresAt: new Date(NOW.getTime() + 3600_000) }, {}, true);

  it("one name for every key: <parent>-authkey, cut to 253", () => {
    assert.equal(stableAuthKeySecretName("db"), "db-authkey");
    assert.equal(stableAuthKeySecretName("x".repeat(253)).length, 253);
    assert.equal(stable("4", "hskey-auth-aaaa-s").metadata.name, stable("5", "hskey-auth-bbbb-s").metadata.name);
  });

  it("replica keys are reusable and not ephemeral", () => {
    assert.deepEqual(REPLICA_KEY_FLAGS, { reusable: true, ephemeral: false });
  });

  describe("expirableKeyIds: publish first, expire after proof", () => {
    const listed = [
      key("3", { key: "hskey-auth-old3-***", createdAt: at(-7200_000) }),
      key("4", { key: "hskey-auth-old4-***", createdAt: at(-3600_000) }),
      key("5", { key: "hskey-auth-new5-***", createdAt: at(-10_000) }),
      key("8", { key: "hskey-auth-othr-***", createdAt: at(-9000_000) }),
    ];
    const owned = new Set(["3", "4", "5"]);

    it("the observed Secret holds key 5 and the listing proves it: older owned keys 3 and 4 expire, never 8", () => {
      assert.deepEqual(expirableKeyIds(stable("5", "hskey-auth-new5-secret"), owned, listed, NOW), ["3", "4"]);
    });

    it("not yet proven (the Secret still holds the old key, or its value does not match the listing): nothing", () => {
      assert.deepEqual(expirableKeyIds(stable("4", "hskey-auth-old4-secret"), owned, listed, NOW), ["3"]);
      assert.deepEqual(expirableKeyIds(stable("5", "hskey-auth-old4-secret"), owned, listed, NOW), []);
      assert.deepEqual(expirableKeyIds(undefined, owned, listed, NOW), []);
      assert.deepEqual(expirableKeyIds(stable("5", "hskey-auth-new5-secret"), new Set(["3", "4"]), listed, NOW), []);
    });

    it("keys already expired are not expired again", () => {
      const gone = listed.map((k) => (k.id === "3" ? { ...k, expiration: at(-1) } : k));
      assert.deepEqual(expirableKeyIds(stable("5", "hskey-auth-new5-secret"), owned, gone, NOW), ["4"]);
    });
  });
});
