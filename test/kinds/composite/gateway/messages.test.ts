/** decideGateway messages, status fields and actions, asserted verbatim. */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import {
  corednsConfigMap,
  gateway,
  healthy,
  hsKey,
  hsNode,
  KEY_ID,
  NODE_KEY,
  ROUTE,
  renderInput,
  stateFact,
  TAG,
  ZONE,
} from "./fixtures.js";
import { NEW_KEY, run, scenario, withStatefulSet } from "./scenarios.js";

const suspendedParent = gateway({ suspend: true });

describe("decideGateway messages", () => {
  it("all healthy: status fields, messages and no Headscale write", () => {
    const { decision, by } = run(healthy());
    assert.deepEqual(decision.fields, {
      tag: TAG,
      node: { id: "12", name: "cluster-gw", nodeKey: NODE_KEY, preAuthKeyId: KEY_ID },
      nodes: [
        {
          replica: 0,
          id: "12",
          name: "cluster-gw",
          addresses: ["100.64.0.12"],
          nodeKey: NODE_KEY,
          machineKey: "mkey:12",
          preAuthKeyId: KEY_ID,
          online: true,
        },
      ],
      preAuthKeyIds: [KEY_ID],
      dnsServiceIP: "10.96.0.53",
    });
    assert.deepEqual(decision.actions, { deleteNodes: [] });
    assert.equal(
      by.Registered.message,
      `node 12 "cluster-gw" registered with bootstrap key 7 as ${TAG}; bootstrap key, node identity and pod template verified`,
    );
    assert.equal(by.NodeIdentity.message, "every replica keeps its node (0=12)");
    assert.equal(by.Ready.status, "True");
    assert.equal(by.Ready.message, by.Registered.message);
    assert.equal(by.RoutesInSync.message, `node 12 "cluster-gw" has ${ROUTE} approved`);
    assert.equal(
      by.ClusterDNSForward.message,
      `kube-system/coredns forwards ${ZONE} to the gateway DNS Service 10.96.0.53`,
    );
    assert.equal(by.ServiceReady.message, "Service infra/gw-dns has cluster IP 10.96.0.53");
    assert.equal(decision.resyncAfterSeconds, undefined);
  });

  it("suspended: the StatefulSet at replicas 0, its state Secret kept, and Ready names the suspension", () => {
    const { decision, by } = run(healthy({ ...renderInput(suspendedParent), parent: suspendedParent }));
    const d = decision.children.find((c) => c.kind === "StatefulSet");
    assert.equal((d?.spec as { replicas?: number } | undefined)?.replicas, 0);
    assert.ok(decision.children.some((c) => c.metadata.name === "gw-gateway-0-state"));
    assert.equal(decision.suspended, true);
    assert.deepEqual(by.Ready, {
      type: "Ready",
      status: "False",
      reason: "Suspended",
      message: "spec.suspend is true: the gateway is scaled to zero (each replica keeps its state and node)",
    });
  });

  it("Provisioning names the hostname and the key and asks for a resync", () => {
    const { decision, by } = run(scenario("no node has registered yet"));
    assert.equal(by.Registered.message, "waiting for cluster-gw to register with bootstrap key 7");
    assert.equal(decision.resyncAfterSeconds, 30);
  });

  it("expired key: FreshBlocked names the check, the zone keeps its observed state", () => {
    const zone = {
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: { name: "gw-gateway-zone", namespace: "infra" },
      data: { "zone.db": "; old\n" },
    };
    const base = scenario("bootstrap key expired and no new one could be created");
    const { decision, by } = run({ ...base, observed: { ...base.observed, zone } });
    assert.equal(
      by.Registered.message,
      "fresh writer blocked by bootstrap key: bootstrap key 7 expired at 2026-11-29T10:30:00Z; creating a new one failed: Headscale POST /api/v1/preauthkey: 500 fault injected: 500. The derived zone keeps its last state.",
    );
    assert.equal(by.Ready.message, by.Registered.message);
    assert.deepEqual(
      decision.children.find((c) => c.metadata.name === "gw-gateway-zone"),
      zone,
    );
    assert.deepEqual(decision.actions, { deleteNodes: [] });
  });

  it("blocked before the first zone write: no zone ConfigMap is invented", () => {
    const { decision } = run(scenario("bootstrap key expired and no new one could be created"));
    assert.equal(
      decision.children.find((c) => c.metadata.name === "gw-gateway-zone"),
      undefined,
    );
  });

  it("key drifted from Headscale's record names every difference", () => {
    const { by } = run(
      healthy({
        headscale: {
          nodes: { ok: true, value: [hsNode()] },
          keys: { ok: true, value: [hsKey({ reusable: false, ephemeral: true, aclTags: ["tag:other"] })] },
        },
      }),
    );
    assert.equal(
      by.Registered.message,
      `fresh writer blocked by bootstrap key: bootstrap key 7 drifted from Headscale's record: tags [tag:other] (want [${TAG}]), reusable false (want true), ephemeral true (want false). The derived zone keeps its last state.`,
    );
  });

  it("key gone from Headscale and key expired there", () => {
    const gone = run(healthy({ headscale: { nodes: { ok: true, value: [hsNode()] }, keys: { ok: true, value: [] } } }));
    assert.match(
      gone.by.Registered.message,
      /bootstrap key 7 is not in Headscale's pre-auth key list \(deleted there\?\)/,
    );
    const expired = run(
      healthy({
        headscale: {
          nodes: { ok: true, value: [hsNode()] },
          keys: { ok: true, value: [hsKey({ expiration: "2026-11-29T09:59:00Z" })] },
        },
      }),
    );
    assert.match(
      expired.by.Registered.message,
      /bootstrap key 7 drifted from Headscale's record: expired in Headscale at 2026-11-29T09:59:00Z/,
    );
  });

  it("rogue node: the message names it and its key; status.node stays; nothing is deleted", () => {
    const { decision, by } = run(scenario("rogue node with the gateway tag registered with another key"));
    assert.equal(
      by.Registered.message,
      `fresh writer blocked by node identity: node 13 "rogue" carries ${TAG} but was registered with pre-auth key 9, not with this gateway's bootstrap key 7. The derived zone keeps its last state.`,
    );
    assert.equal(by.StaleNodes.status, "Unknown");
    assert.deepEqual(decision.actions.deleteNodes, []);
    assert.deepEqual(decision.fields.node, healthy().previousNode);
  });

  it("node registered with our key but retagged is not ours", () => {
    const { by } = run(
      healthy({
        headscale: {
          nodes: { ok: true, value: [hsNode({ tags: ["tag:other", TAG] })] },
          keys: { ok: true, value: [hsKey()] },
        },
      }),
    );
    assert.match(
      by.Registered.message,
      new RegExp(
        `node 12 "cluster-gw" was registered with bootstrap key 7 but carries tags \\[tag:other, ${TAG}\\], not exactly ${TAG}`,
      ),
    );
  });

  it("edited pod template: FreshBlocked names the replica's StatefulSet and both hashes", () => {
    const input = withStatefulSet(healthy(), (d) => {
      const tpl = (d.spec as { template: { spec: { containers: { env?: unknown[] }[] } } }).template;
      tpl.spec.containers[0].env?.push({ name: "TS_DEBUG", value: "1" });
    });
    const { by } = run(input);
    assert.equal(by.Registered.reason, "FreshBlocked");
    assert.match(
      by.Registered.message,
      /^fresh writer blocked by pod template: the live pod template of StatefulSet infra\/gw-gateway-0 was changed outside the operator \(rendered hash [0-9a-f]{16}, live template hashes to [0-9a-f]{16}\)\. The derived zone keeps its last state\.$/,
    );
  });

  it("identity change: message gives the new key and the annotation; accepting it clears the change", () => {
    const changed = healthy({
      headscale: { nodes: { ok: true, value: [hsNode({ nodeKey: NEW_KEY })] }, keys: { ok: true, value: [hsKey()] } },
    });
    const { by, decision } = run(changed);
    assert.equal(
      by.Registered.message,
      `replica 0: node 12 "cluster-gw" changed its node key from ${NODE_KEY} to ${NEW_KEY} while its state persisted; to keep this node with its new key, set the annotation tailnet.internal/accept-node-key: ${NEW_KEY}; to register a new node instead, delete Secret gw-gateway-0-state`,
    );
    assert.equal(decision.fields.node?.nodeKey, NODE_KEY);
    assert.deepEqual(decision.actions, { deleteNodes: [] }, "no bootstrap key is minted for it: nothing re-registers");
    const accepted = gateway({}, { annotations: { "tailnet.internal/accept-node-key": NEW_KEY } });
    const ok = run({ ...changed, parent: accepted });
    assert.equal(ok.by.Registered.reason, "FreshRuntimeReady");
    assert.equal(ok.decision.fields.node?.nodeKey, NEW_KEY);
  });

  it("a replica that lost its state re-registers: the new node is its identity, the old one its predecessor", () => {
    const input = healthy({
      stateFacts: [stateFact(0, "14")],
      recordedKeyIds: [KEY_ID, "8"],
      headscale: {
        nodes: {
          ok: true,
          value: [
            hsNode({ online: false, lastSeen: "2026-11-29T09:50:00Z" }),
            hsNode({ id: "14", nodeKey: NEW_KEY, keyId: "8", createdAt: "2026-11-29T09:55:00Z" }),
          ],
        },
        keys: { ok: true, value: [hsKey(), hsKey({ id: "8" })] },
      },
    });
    const { by, decision } = run(input);
    assert.equal(by.Registered.reason, "FreshRuntimeReady");
    assert.deepEqual(decision.fields.node, { id: "14", name: "cluster-gw", nodeKey: NEW_KEY, preAuthKeyId: "8" });
    assert.deepEqual(decision.actions.deleteNodes, [{ id: "12", node: 'node 12 "cluster-gw"' }]);
    assert.equal(by.NodeIdentity.message, "replica 0: registered node 14 while its previous node 12 still exists");
    const done = run(input, { deleted: [{ id: "12", node: 'node 12 "cluster-gw"' }] });
    assert.equal(done.decision.fields.nodes?.[0].predecessorId, undefined);
  });

  it("approval: the action adds only the missing advertised routes; a failure is NotApproved with the error", () => {
    const input = healthy({
      headscale: { nodes: { ok: true, value: [hsNode({ approvedRoutes: [] })] }, keys: { ok: true, value: [hsKey()] } },
    });
    const { decision, by } = run(input);
    assert.deepEqual(decision.actions.approve, { nodeId: "12", node: 'node 12 "cluster-gw"', add: [ROUTE] });
    assert.equal(by.RoutesInSync.message, `approved ${ROUTE} on node 12 "cluster-gw"`);
    const failed = run(input, {
      approve: { ok: false, error: "Headscale POST /api/v1/node/{nodeId}/approve_routes: 500 boom" },
      deleted: [],
    });
    assert.deepEqual(failed.by.RoutesInSync, {
      type: "RoutesInSync",
      status: "False",
      reason: "NotApproved",
      message: `approving ${ROUTE} on node 12 "cluster-gw" failed: Headscale POST /api/v1/node/{nodeId}/approve_routes: 500 boom`,
    });
    assert.equal(failed.by.Ready.reason, "NotApproved");
  });

  it("DryRun and blocked writers never approve", () => {
    assert.equal(run(scenario("route not approved and the Tailnet is in DryRun")).decision.actions.approve, undefined);
    assert.match(
      run(scenario("route not approved and the Tailnet is in DryRun")).by.RoutesInSync.message,
      /^Tailnet home is in DryRun: the operator approves no routes; not approved on node 12 "cluster-gw": 10\.96\.0\.0\/12$/,
    );
    const blocked = healthy({
      headscale: {
        nodes: {
          ok: true,
          value: [hsNode({ approvedRoutes: [] }), hsNode({ id: "13", name: "rogue", givenName: "rogue", keyId: "9" })],
        },
        keys: { ok: true, value: [hsKey()] },
      },
    });
    assert.equal(run(blocked).decision.actions.approve, undefined);
  });

  it("a route the node does not advertise is NotApproved and not approved", () => {
    const { decision, by } = run(
      healthy({
        headscale: {
          nodes: { ok: true, value: [hsNode({ availableRoutes: [], approvedRoutes: [] })] },
          keys: { ok: true, value: [hsKey()] },
        },
      }),
    );
    assert.equal(decision.actions.approve, undefined);
    assert.equal(by.RoutesInSync.message, `node 12 "cluster-gw" does not advertise ${ROUTE} (yet)`);
  });

  it("stale nodes: Delete deletes all but the current node, never a node that is not ours", () => {
    const input = scenario("stale node with staleNodes: Delete");
    const withForeign = {
      ...input,
      headscale: {
        ...input.headscale,
        nodes: {
          ok: true as const,
          value: [
            ...(input.headscale.nodes.ok ? input.headscale.nodes.value : []),
            // another object's node: another tag, a key this gateway did not mint
            hsNode({ id: "3", keyId: "2", tags: ["tag:other"], createdAt: "2026-11-28T00:00:00Z", online: false }),
          ],
        },
      },
    };
    const { decision, by } = run(withForeign);
    assert.deepEqual(decision.actions.deleteNodes, [{ id: "5", node: 'node 5 "cluster-gw"' }]);
    assert.equal(by.StaleNodes.message, 'deleted stale node 5 "cluster-gw"');
    const partial = run(withForeign, {
      deleted: [{ id: "5", node: 'node 5 "cluster-gw"', error: "Headscale DELETE /api/v1/node/{nodeId}: 500 boom" }],
    });
    assert.deepEqual(partial.by.StaleNodes, {
      type: "StaleNodes",
      status: "True",
      reason: "Deleted",
      message:
        'could not delete stale node 5 "cluster-gw": Headscale DELETE /api/v1/node/{nodeId}: 500 boom (retrying)',
    });
  });

  it("Keep names the stale nodes", () => {
    const { by, decision } = run(scenario("stale node with staleNodes: Keep"));
    assert.equal(by.StaleNodes.message, 'staleNodes is Keep; stale nodes left in place: node 5 "cluster-gw"');
    assert.deepEqual(decision.actions.deleteNodes, []);
  });

  it("NotConfigured gives the exact block to add", () => {
    const { by } = run(scenario("cluster Corefile has no block for the zone"));
    assert.equal(
      by.ClusterDNSForward.message,
      `kube-system/coredns has no server block for ${ZONE}; add this one to its Corefile:\n${ZONE}:53 {\n    errors\n    cache 30\n    forward . 10.96.0.53\n}`,
    );
    const missing = run(healthy({ related: { ...healthy().related, coredns: undefined } }));
    assert.match(
      missing.by.ClusterDNSForward.message,
      /^ConfigMap kube-system\/coredns not found; the cluster DNS needs this server block:\n/,
    );
    const elsewhere = run(
      healthy({ related: { ...healthy().related, coredns: corednsConfigMap(`${ZONE} {\n  forward . 10.0.0.9\n}\n`) } }),
    );
    assert.match(
      elsewhere.by.ClusterDNSForward.message,
      /^the ts\.example\.com server block of kube-system\/coredns forwards to 10\.0\.0\.9, not to the gateway DNS Service 10\.96\.0\.53; replace it with:\n/,
    );
  });

  it("Headscale unreachable: Unknown, no write, the zone kept, a 30 s resync", () => {
    const { decision, by } = run(scenario("Headscale unreachable"));
    assert.equal(by.Registered.status, "Unknown");
    assert.equal(
      by.Registered.message,
      "fresh writer blocked by bootstrap key: cannot read Headscale's pre-auth keys: Headscale GET /api/v1/preauthkey: connect ECONNREFUSED; node identity: cannot list Headscale's nodes: Headscale GET /api/v1/node: connect ECONNREFUSED. The derived zone keeps its last state.",
    );
    assert.equal(by.RoutesInSync.status, "Unknown");
    assert.deepEqual(decision.actions, { deleteNodes: [] });
    assert.equal(decision.resyncAfterSeconds, 30);
  });

  it("the zone ConfigMap holds the egress records when the writer is free", () => {
    const egress = {
      apiVersion: "tailnet.internal/v1alpha1",
      kind: "TailnetEgress",
      metadata: { name: "db", namespace: "shop", uid: "e1", creationTimestamp: "2026-11-01T00:00:00Z" },
      spec: {
        tailnetRef: { name: "home" },
        targets: [{ name: "postgres", host: `db-1.${ZONE}`, ports: [{ port: 5432 }] }],
      },
    };
    const svc = {
      apiVersion: "v1",
      kind: "Service",
      metadata: {
        name: "postgres",
        namespace: "shop",
        labels: { "tailnet.internal/egress-target": "true" },
        // the operator's own Service of the egress (shared/zone-owners.ts): its controller is the egress
        ownerReferences: [
          { apiVersion: "tailnet.internal/v1alpha1", kind: "TailnetEgress", name: "db", uid: "e1", controller: true },
        ],
      },
      spec: { clusterIP: "10.96.7.7" },
    };
    const { decision } = run(healthy({ related: { ...healthy().related, egresses: [egress], services: [svc] } }));
    const zone = decision.children.find((c) => c.metadata.name === "gw-gateway-zone");
    assert.match(
      (zone?.data as Record<string, string> | undefined)?.["zone.db"] ?? "",
      /\ndb-1 {2}IN {2}A {2}10\.96\.7\.7 {2}; shop\/db target postgres\n/,
    );
  });
});
