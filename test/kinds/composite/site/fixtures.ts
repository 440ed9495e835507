/** Builders shared by the TailnetSite tests: sites, Tailnets, Headscale nodes. */
import type { HsNode } from "../../../../src/headscale/types.js";
import type { K8sObject } from "../../../../src/k8s/objects.js";
import { parentObject } from "../../../fixtures/hooks.js";

export interface SiteOpts {
  namespace?: string;
  prefixes?: string[];
  advertiserTags?: string[];
  allowFrom?: string[];
  tailnet?: string;
  created?: string;
  deleting?: boolean;
  status?: Record<string, unknown>;
}

export function site(name: string, opts: SiteOpts = {}): K8sObject {
  const o = parentObject(
    "TailnetSite",
    name,
    {
      tailnetRef: { name: opts.tailnet ?? "home" },
      prefixes: opts.prefixes ?? ["192.168.10.0/24"],
      advertiserTags: opts.advertiserTags ?? ["tag:router-home"],
      ...(opts.allowFrom ? { allowFrom: opts.allowFrom } : {}),
    },
    {
      namespace: opts.namespace ?? "net",
      creationTimestamp: opts.created ?? "2026-11-01T00:00:00Z",
      ...(opts.status ? { status: opts.status } : {}),
    },
  );
  if (opts.deleting) o.metadata.deletionTimestamp = "2026-11-29T12:00:00Z";
  return o;
}

export function tailnet(
  name = "home",
  spec: Record<string, unknown> = {},
  status?: Record<string, unknown>,
): K8sObject {
  return parentObject(
    "Tailnet",
    name,
    {
      headscale: { url: "https://hs.example.com", apiKeySecretRef: { namespace: "tailnet-system", name: "hs" } },
      policy: { mode: "Apply" },
      reservedNetworks: ["10.96.0.0/12", "10.244.0.0/16"],
      ...spec,
    },
    status ? { status } : {},
  );
}

export interface NodeOpts {
  id?: string;
  tags?: string[];
  available?: string[];
  approved?: string[];
  givenName?: string;
  /** A Headscale older than 0.26 sends nodes without approvedRoutes. */
  shape?: HsNode["shape"];
}

let nextId = 100;
export function node(name: string, opts: NodeOpts = {}): HsNode {
  return {
    id: opts.id ?? String(++nextId),
    machineKey: "mkey:0",
    nodeKey: "nodekey:0",
    ipAddresses: ["100.64.0.1"],
    name,
    givenName: opts.givenName ?? name,
    user: null,
    lastSeen: null,
    expiry: null,
    preAuthKey: null,
    createdAt: null,
    registerMethod: "REGISTER_METHOD_AUTH_KEY",
    online: true,
    approvedRoutes: opts.approved ?? [],
    availableRoutes: opts.available ?? [],
    subnetRoutes: [],
    tags: opts.tags ?? [],
    shape: opts.shape ?? { hasTags: true, hasApprovedRoutes: true },
  };
}
