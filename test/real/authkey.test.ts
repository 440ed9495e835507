/**
 * Issue 27 on the real Headscale and tailscaled: a machine outside the cluster joins with the key a
 * TailnetAuthKey put into its Secret and is tagged; the key is renewed against the real server (a 1-minute key
 * renewed 45 s before expiry), the old key is expired only once a sync has seen the Secret holding the new one,
 * and the machine joins again with the new key; deleting the object expires its key and leaves the machine.
 * The Tailnet grants tag:db (the world's base policy owns it) to the namespace labelled team: ci.
 */
import assert from "node:assert/strict";
import { writeFile } from "node:fs/promises";
import { after, before, describe, it } from "node:test";
import type { K8sObject } from "../../src/k8s/objects.js";
import { parentObject } from "../fixtures/hooks.js";
import { requireBins } from "./bins.js";
import { type RealHeadscale, startHeadscale } from "./headscale.js";
import { TestNet } from "./net.js";
import { API, type RealOperator, startOperator } from "./operator.js";
import { type Peer, startPeer, waitFor } from "./peers.js";
import { BASE_POLICY, type RealWorld, TAGS } from "./world.js";

type HsKey = {
  id: string | number;
  expiration?: { seconds?: number } | string;
  acl_tags?: string[];
  aclTags?: string[];
};
type HsNode = { id: string | number; name: string; tags?: string[] };

const secretText = (s: K8sObject | undefined, key: string) => {
  const v = (s?.data as Record<string, string> | undefined)?.[key];
  return v === undefined ? "" : Buffer.from(v, "base64").toString("utf8");
};
const expiresMs = (k: HsKey | undefined) => {
  const e = k?.expiration;
  if (e === undefined) return 0;
  return typeof e === "string" ? Date.parse(e) : (e.seconds ?? 0) * 1000;
};

describe("TailnetAuthKey on the real Headscale", { timeout: 240_000, concurrency: false }, () => {
  let net: TestNet;
  let headscale: RealHeadscale;
  let op: RealOperator;
  const peers: Peer[] = [];
  before(async () => {
    requireBins(["headscale", "tailscaled", "tailscale"]);
    net = await TestNet.create({ id: "authkey" });
    headscale = await startHeadscale(net);
    const policyFile = `${headscale.host.dir}/base-policy.hujson`;
    await writeFile(policyFile, BASE_POLICY);
    await headscale.cli(["policy", "set", "-f", policyFile]);
    // the operator only needs the server of a world (and its network, where it serves the pods' API); no peer
    op = await startOperator({ headscale, net } as RealWorld, {
      tailnet: { tenancy: { tags: [{ namespaceSelector: { matchLabels: { team: "ci" } }, tags: [TAGS.db] }] } },
    });
    op.mc.apply({ apiVersion: "v1", kind: "Namespace", metadata: { name: "ci", labels: { team: "ci" } } });
  });
  after(async () => {
    for (const p of peers) await p.close().catch(() => undefined);
    await op?.close();
    await headscale?.close().catch(() => undefined);
    await net?.close();
  });

  const keys = async () => (await headscale.json<HsKey[] | null>(["preauthkeys", "list"])) ?? [];
  const key = async (id: string) => (await keys()).find((k) => String(k.id) === id);
  const valid = async (id: string) => expiresMs(await key(id)) > Date.now();
  const nodes = async () => (await headscale.json<HsNode[] | null>(["nodes", "list"])) ?? [];
  const secret = () => op.mc.get("v1", "Secret", "runner-join", "ci");
  const keyId = () => secret()?.metadata.annotations?.["tailnet.internal/key-id"] ?? "";
  const parent = () => {
    const p = op.mc.get(API, "TailnetAuthKey", "runners", "ci");
    assert.ok(p, "the TailnetAuthKey is gone");
    return p;
  };

  it("a machine joins with the Secret's key, tagged; renewal publishes first and expires the old key after; it re-joins", async () => {
    op.mc.apply(
      parentObject(
        "TailnetAuthKey",
        "runners",
        {
          tailnetRef: { name: "home" },
          tags: [TAGS.db],
          reusable: true,
          expiry: "1m",
          renewBefore: "45s",
          secretName: "runner-join",
        },
        { namespace: "ci", creationTimestamp: new Date(Date.now() - 1000).toISOString() },
      ),
    );
    await op.mc.settle();
    assert.equal(op.reasons("TailnetAuthKey", "runners", "ci").Ready, "Ready", op.failures());
    assert.equal(secretText(secret(), "login-server"), headscale.url);
    assert.equal(secretText(secret(), "ca.crt"), headscale.caPem);
    const first = keyId();
    const firstKey = secretText(secret(), "authkey");
    assert.ok(await valid(first));

    const runner = await startPeer(net, headscale, "runner-1", { authKey: firstKey });
    peers.push(runner);
    const joined = (await nodes()).find((n) => n.name === "runner-1");
    assert.deepEqual(joined?.tags, [TAGS.db], "the machine is tagged by the key");

    // past renewAt (15 s after the mint): one sync mints and publishes; the old key stays valid
    await new Promise((r) => setTimeout(r, 16_000));
    await op.mc.syncParent(parent());
    const second = keyId();
    assert.notEqual(second, first, "the Secret holds a new key");
    assert.ok(await valid(second), "the new key is valid in Headscale");
    assert.ok(await valid(first), "the old key was expired before the Secret was seen holding the new one");
    assert.equal(op.reasons("TailnetAuthKey", "runners", "ci").RenewalDue, "Renewing");
    // the next sync sees the Secret with the new key: only now is the old one expired
    await op.mc.syncParent(parent());
    assert.ok(!(await valid(first)), "the old key is still valid after the Secret was seen holding the new one");
    assert.ok(await valid(second));
    await op.mc.settle();
    assert.equal(op.reasons("TailnetAuthKey", "runners", "ci").RenewalDue, "NotDue");

    // the machine joins again with the new key (logged out, then up with the Secret's current key)
    const newKey = secretText(secret(), "authkey");
    await runner.tailscale(["logout"]);
    await runner.tailscale([
      "up",
      `--login-server=${headscale.url}`,
      `--auth-key=${newKey}`,
      "--hostname=runner-1",
      "--timeout=60s",
    ]);
    await waitFor(
      "runner-1 back up with the renewed key",
      async () => (await runner.status()).BackendState === "Running",
    );
    // and a second machine cannot join with the expired first key
    await assert.rejects(startPeer(net, headscale, "runner-2", { authKey: firstKey }), /exited|expired|invalid/i);

    // deletion expires the key it minted and leaves the machine registered
    op.mc.delete(API, "TailnetAuthKey", "runners", "ci");
    await op.mc.settle();
    assert.equal(op.mc.get(API, "TailnetAuthKey", "runners", "ci"), undefined);
    assert.ok(!(await valid(second)), "deletion left the object's key valid");
    assert.ok(
      (await nodes()).some((n) => n.name === "runner-1"),
      "deletion removed the machine",
    );
    const logs = op.logs.join("");
    assert.ok(!logs.includes(firstKey) && !logs.includes(newKey), "a key is in the operator's log");
    assert.deepEqual(op.mc.errors, []);
  });

  it("issue 31: an expiry past maxAuthKeyLifetime mints nothing; a withdrawn grant expires the key, which then joins no one", async () => {
    const spec = { tailnetRef: { name: "home" }, tags: [TAGS.db], reusable: true, secretName: "bounded-join" };
    const born = { namespace: "ci", creationTimestamp: new Date(Date.now() - 1000).toISOString() };
    const before = (await keys()).length;
    op.mc.apply(parentObject("TailnetAuthKey", "forever", { ...spec, expiry: "876000h", secretName: "forever" }, born));
    op.mc.apply(parentObject("TailnetAuthKey", "bounded", { ...spec, expiry: "1h" }, born));
    await op.mc.settle();
    assert.equal(op.reasons("TailnetAuthKey", "forever", "ci").Ready, "ExpiryTooLong");
    assert.equal(op.reasons("TailnetAuthKey", "bounded", "ci").Ready, "Ready", op.failures());
    assert.equal((await keys()).length, before + 1, "the key past the bound was minted");
    const id = op.mc.get("v1", "Secret", "bounded-join", "ci")?.metadata.annotations?.["tailnet.internal/key-id"] ?? "";
    const boundedKey = secretText(op.mc.get("v1", "Secret", "bounded-join", "ci"), "authkey");
    assert.ok(await valid(id));
    // the administrators take the grant back: the next sync expires the key it minted
    op.mc.apply({ apiVersion: "v1", kind: "Namespace", metadata: { name: "ci", labels: { team: "elsewhere" } } });
    await op.mc.settle();
    assert.equal(op.reasons("TailnetAuthKey", "bounded", "ci").Ready, "TagNotGranted");
    assert.ok(!(await valid(id)), "the key minted under the withdrawn grant is still valid in Headscale");
    await assert.rejects(startPeer(net, headscale, "runner-3", { authKey: boundedKey }), /exited|expired|invalid/i);
    assert.ok(!(await nodes()).some((n) => n.name === "runner-3"), "a machine joined with the withdrawn key");
    assert.deepEqual(op.mc.errors, []);
  });
});
