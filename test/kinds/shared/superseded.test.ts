import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { HsPreAuthKey } from "../../../src/headscale/types.js";
import { supersededNodes } from "../../../src/kinds/shared/superseded.js";
import { hsNode, preAuthKey } from "./fixtures.js";

describe("supersededNodes", () => {
  const TAG = "tag:k8s-monitoring-grafana";
  const NOW = new Date("2026-11-29T10:00:00Z");
  const agentKey = { ...preAuthKey({ id: "5", aclTags: [TAG], expiration: null }), reusable: true, ephemeral: true };
  const node = (
    id: string,
    o: { online?: boolean; lastSeen?: string | null; tags?: string[]; key?: HsPreAuthKey | null } = {},
  ) => ({
    ...hsNode({ id, name: id === "1" ? "grafana" : `grafana-${id}`, tags: o.tags ?? [TAG], online: o.online ?? true }),
    lastSeen: o.lastSeen === undefined ? "2026-11-29T09:50:00Z" : o.lastSeen,
    preAuthKey: o.key === undefined ? agentKey : o.key,
  });
  const cases: { name: string; nodes: ReturnType<typeof node>[]; replicas: number; want: string[] }[] = [
    {
      name: "a restarted pod: the old node offline, the new one online",
      nodes: [node("1", { online: false }), node("2")],
      replicas: 1,
      want: ["1"],
    },
    {
      name: "only the offline node: the pod may come back, nothing removed",
      nodes: [node("1", { online: false })],
      replicas: 1,
      want: [],
    },
    {
      name: "offline for less than the grace period: kept",
      nodes: [node("1", { online: false, lastSeen: "2026-11-29T09:59:30Z" }), node("2")],
      replicas: 1,
      want: [],
    },
    {
      name: "never seen: superseded",
      nodes: [node("1", { online: false, lastSeen: null }), node("2")],
      replicas: 1,
      want: ["1"],
    },
    {
      name: "replicas 2, two online and one offline: the offline one",
      nodes: [node("1"), node("2", { online: false }), node("3")],
      replicas: 2,
      want: ["2"],
    },
    {
      name: "replicas 2, one online: nothing (a pod is on its way back)",
      nodes: [node("1"), node("2", { online: false })],
      replicas: 2,
      want: [],
    },
    {
      name: "a rollout surge (two online for one replica): online nodes are never removed",
      nodes: [node("1"), node("2")],
      replicas: 1,
      want: [],
    },
    {
      name: "scaled to zero: every offline node of ours",
      nodes: [node("1", { online: false }), node("2", { online: false })],
      replicas: 0,
      want: ["1", "2"],
    },
    {
      name: "another tag as well: not ours alone",
      nodes: [node("1", { online: false, tags: [TAG, "tag:other"] }), node("2")],
      replicas: 1,
      want: [],
    },
    {
      name: "an admin's agent-shaped node with our tag, registered with a key we did not mint: never ours",
      nodes: [node("1", { online: false, key: { ...agentKey, id: "99" } }), node("2", { online: false }), node("3")],
      replicas: 1,
      want: ["2"],
    },
    {
      name: "registered without a key (CLI): not an agent node",
      nodes: [node("1", { online: false, key: null }), node("2")],
      replicas: 1,
      want: [],
    },
    {
      name: "a single-use, non-ephemeral key (not the agent shape): not ours",
      nodes: [node("1", { online: false, key: { ...agentKey, reusable: false, ephemeral: false } }), node("2")],
      replicas: 1,
      want: [],
    },
  ];
  for (const c of cases) {
    it(c.name, () => {
      assert.deepEqual(
        supersededNodes(c.nodes, TAG, new Set(["5"]), c.replicas, NOW).map((n) => n.id),
        c.want,
      );
    });
  }
});
