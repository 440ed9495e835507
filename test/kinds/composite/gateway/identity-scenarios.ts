/**
 * The NodeIdentity rows of the TailnetGateway decide table (issue 32): which node each replica is, from the
 * device_id in its state Secret. decide.test.ts runs them with the other rows and checks the table's coverage.
 */
import { healthy, hsKey, hsNode, legacyDeployment, stateFact } from "./fixtures.js";
import type { Row } from "./scenarios.js";

export const identityRows: Row[] = [
  {
    name: "the legacy gateway Deployment still runs: migrating",
    input: healthy({ observed: { ...healthy().observed, deployment: legacyDeployment() } }),
    expect: { NodeIdentity: "Migrating", Registered: "FreshRuntimeReady", Ready: "FreshRuntimeReady" },
  },
  {
    name: "replica 0 re-registered (its state was lost) while its previous node still exists",
    input: healthy({
      stateFacts: [stateFact(0, "14")],
      headscale: {
        nodes: {
          ok: true,
          value: [
            hsNode({ online: false, lastSeen: "2026-11-29T09:59:30Z" }),
            hsNode({
              id: "14",
              nodeKey: `nodekey:${"e".repeat(64)}`,
              createdAt: "2026-11-29T09:59:40Z",
              givenName: "cluster-gw-1",
            }),
          ],
        },
        keys: { ok: true, value: [hsKey()] },
      },
    }),
    expect: { NodeIdentity: "Reregistered", Registered: "FreshRuntimeReady", StaleNodes: "None" },
  },
  {
    name: "replica 0 lost its state: no device_id past the grace, its recorded node offline",
    input: healthy({
      stateFacts: [stateFact(0)],
      headscale: {
        nodes: { ok: true, value: [hsNode({ online: false, lastSeen: "2026-11-29T09:50:00Z" })] },
        keys: { ok: true, value: [hsKey()] },
      },
      related: {
        ...healthy().related,
        pods: [
          {
            name: "gw-gateway-0-0",
            replica: 0,
            deleting: false,
            startTime: new Date("2026-11-29T09:55:00Z"),
            ready: { tailscale: false, coredns: true },
          },
        ],
      },
    }),
    expect: { NodeIdentity: "StateLost", Registered: "Provisioning" },
  },
  {
    name: "replica 0's state Secret names a node this gateway did not register",
    input: healthy({ stateFacts: [stateFact(0, "99")] }),
    expect: { NodeIdentity: "ForeignNode", Registered: "FreshBlocked", Ready: "FreshBlocked" },
  },
];
