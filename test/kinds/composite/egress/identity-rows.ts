/**
 * decideEgress inputs whose replicas are planned (issue 32): one per NodeIdentity reason, for the identity decide
 * test and for the reasons-table coverage in decide.test.ts.
 */
import type { HsNode } from "../../../../src/headscale/types.js";
import type { EgressDecideInput } from "../../../../src/kinds/composite/egress/decide.js";
import type { ReplicaObservation } from "../../../../src/kinds/shared/agent-replicas.js";
import { wantedLabel } from "../../../../src/kinds/shared/replica.js";
import {
  type NodeStatusItem,
  planReplicaNodes,
  type ReplicaNodesPlan,
  type StateFact,
} from "../../../../src/kinds/shared/replica-nodes.js";
import { AT, hsNode, ok, preAuthKey } from "../../shared/fixtures.js";
import { observedReplicas } from "../../shared/replica-fixtures.js";
import { egressParent, input, NODES, TAG, tailnetRead } from "./fixtures.js";

const minutesAgo = (m: number) => new Date(AT.getTime() - m * 60_000).toISOString();

/** The agent node of replica 0 as Headscale lists it: ours (key 7, the fixture's own key). */
export function agentNode(id: string, over: Partial<HsNode> = {}): HsNode {
  return {
    ...hsNode({ id, name: "shop-db", tags: [TAG] }),
    preAuthKey: preAuthKey({ id: "7", aclTags: [TAG], expiration: null }),
    createdAt: minutesAgo(600),
    ...over,
  };
}

export const record = (replica: number, n: HsNode, extra: Partial<NodeStatusItem> = {}): NodeStatusItem => ({
  replica,
  id: n.id,
  name: n.givenName,
  addresses: [...n.ipAddresses].sort(),
  nodeKey: n.nodeKey,
  machineKey: n.machineKey,
  ...(n.preAuthKey ? { preAuthKeyId: n.preAuthKey.id } : {}),
  online: n.online,
  ...extra,
});

const others = NODES.filter((n) => !n.tags?.includes(TAG)).map(hsNode);

/** An egress decide input whose replica plan comes from these state facts, nodes and record. */
export function identityInput(o: {
  facts: StateFact[];
  agents: HsNode[];
  record?: NodeStatusItem[];
  replicas?: number;
  legacy?: boolean;
  pods?: ReplicaObservation["pods"];
}): EgressDecideInput & { plan: ReplicaNodesPlan } {
  const replicas = o.replicas ?? 1;
  const parent = egressParent({ replicas });
  const observed: ReplicaObservation = {
    ...observedReplicas(parent, replicas),
    facts: o.facts,
    record: o.record ?? [],
    pods: o.pods ?? [],
    running: new Set(Array.from({ length: replicas }, (_, i) => i)),
    ...(o.legacy
      ? { legacyDeployment: { apiVersion: "apps/v1", kind: "Deployment", metadata: { name: "db-agent" } } }
      : {}),
  };
  const nodes = [...others, ...o.agents];
  const plan = planReplicaNodes({
    replicas,
    facts: o.facts,
    running: observed.running,
    pods: observed.pods,
    nodes,
    ownKeys: new Set(["7"]),
    tag: TAG,
    record: observed.record,
    now: AT,
    wanted: (i) => wantedLabel("shop-db", i),
  });
  const base = input({ parent });
  return {
    ...base,
    plan,
    tailnet: tailnetRead({ nodes: ok(nodes), replicas: { observed, replicas: plan } }),
  };
}

export const fact = (index: number, deviceId?: string): StateFact => ({
  index,
  name: `db-agent-${index}-state`,
  ...(deviceId ? { deviceId } : {}),
  hasState: !!deviceId,
});

/** One input per NodeIdentity reason a synced egress with a node list reports. */
export function identityRows(): { reason: string; input: EgressDecideInput }[] {
  const x = agentNode("9");
  const y = agentNode("8", { online: false, lastSeen: minutesAgo(5) });
  return [
    { reason: "Stable", input: identityInput({ facts: [fact(0, "9")], agents: [x], record: [record(0, x)] }) },
    // the legacy (or a not yet written) node carries the tag and serves: Registered and Ready hold
    { reason: "Registering", input: identityInput({ facts: [fact(0)], agents: [agentNode("5")] }) },
    { reason: "Migrating", input: identityInput({ facts: [fact(0)], agents: [agentNode("5")], legacy: true }) },
    {
      reason: "IdentityChanged",
      input: identityInput({ facts: [fact(0, "9")], agents: [x], record: [record(0, x, { nodeKey: "nodekey:old" })] }),
    },
    {
      reason: "Reregistered",
      input: identityInput({ facts: [fact(0, "9")], agents: [x, y], record: [record(0, y)] }),
    },
    {
      reason: "StateLost",
      input: identityInput({
        facts: [fact(0)],
        agents: [y],
        record: [record(0, y)],
        pods: [{ index: 0, startedAt: new Date(AT.getTime() - 600_000) }],
      }),
    },
    { reason: "ForeignNode", input: identityInput({ facts: [fact(0, "3")], agents: [x] }) },
  ];
}
