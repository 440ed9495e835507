import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { Obs } from "../../../../src/headscale/errors.js";
import type { HsPreAuthKey } from "../../../../src/headscale/types.js";
import { planEgressKey } from "../../../../src/kinds/composite/egress/keys.js";
import { observedKeys } from "../../../../src/kinds/shared/authkey.js";
import { failed, hsNode, ok, preAuthKey } from "../../shared/fixtures.js";
import { egressParent, KEY_CREATED, keySecret, TAG } from "./fixtures.js";

const NOW = new Date("2026-11-29T10:00:00Z");
const listedAt = (at: Date, keys: HsPreAuthKey[]): Obs<HsPreAuthKey[]> => ({ ok: true, value: keys, at });
const key7 = (over: Partial<HsPreAuthKey> = {}) => ({
  ...preAuthKey({ id: "7", aclTags: [TAG], expiration: "2026-11-30T08:00:00Z" }),
  ...over,
});
const agentNode = hsNode({ id: "9", name: "shop-db", tags: [TAG] });

interface Row {
  name: string;
  secret?: boolean;
  keys?: Obs<HsPreAuthKey[]>;
  nodeWithTag?: boolean;
  replicas?: number;
  now?: Date;
  want: [string, string?, string?];
}

const rows: Row[] = [
  { name: "no key Secret yet", secret: false, want: ["create", "missing"] },
  { name: "a fresh single-use key, one replica", want: ["reuse"] },
  { name: "half-life passed", now: new Date("2026-11-29T20:00:01Z"), want: ["create", "halfLife"] },
  { name: "single-use key and two replicas", replicas: 2, want: ["create", "halfLife", "scaledOut"] },
  {
    name: "reusable key and two replicas",
    replicas: 2,
    keys: listedAt(NOW, [key7({ reusable: true })]),
    want: ["reuse"],
  },
  {
    name: "single-use key used and the node gone (pod restarted)",
    keys: listedAt(NOW, [key7({ used: true })]),
    nodeWithTag: false,
    want: ["create", "halfLife", "usedUp"],
  },
  { name: "single-use key used by the registered node", keys: listedAt(NOW, [key7({ used: true })]), want: ["reuse"] },
  {
    name: "key expired in Headscale",
    keys: listedAt(NOW, [key7({ expiration: "2026-11-29T09:00:00Z" })]),
    want: ["create", "expired", "revoked"],
  },
  { name: "key deleted from Headscale", keys: listedAt(NOW, []), want: ["create", "expired", "revoked"] },
  {
    name: "a key list read before the key existed proves nothing",
    keys: listedAt(new Date(KEY_CREATED.getTime() + 1000), []),
    want: ["reuse"],
  },
  {
    name: "keys unreadable: the shared rule alone",
    keys: failed("GET /api/v1/preauthkey", "ECONNREFUSED"),
    want: ["reuse"],
  },
];

describe("planEgressKey", () => {
  for (const r of rows) {
    it(r.name, () => {
      const got = planEgressKey({
        keySecrets: observedKeys(r.secret === false ? [] : [keySecret(egressParent())]),
        now: r.now ?? NOW,
        keys: r.keys ?? listedAt(NOW, [key7()]),
        nodes: ok(r.nodeWithTag === false ? [] : [agentNode]),
        tag: TAG,
        replicas: r.replicas ?? 1,
      });
      const why = got.plan.action === "create" ? got.plan.why : undefined;
      assert.deepEqual(
        [got.plan.action, why, got.refresh].filter((x) => x !== undefined),
        r.want,
      );
    });
  }
});
