/** How status messages name Headscale nodes: by their given name, sorted, and never too many at once. */

import { nodesTagged } from "../../headscale/lists.js";
import type { HsNode } from "../../headscale/types.js";

/** Headscale nodes carrying the tag (among others), sorted by MagicDNS name. */
export function nodesWithTag(nodes: readonly HsNode[], tag: string): HsNode[] {
  return [...nodesTagged(nodes, tag)].sort((a, b) => nodeLabel(a).localeCompare(nodeLabel(b)));
}

export const nodeLabel = (n: HsNode) => n.givenName || n.name || n.id;

const MAX_LISTED = 5;

/** "a, b, c" or "a, b, c, d, e and 3 more": messages stay short however many nodes linger. */
export function listNames(names: readonly string[]): string {
  if (names.length <= MAX_LISTED) return names.join(", ");
  return `${names.slice(0, MAX_LISTED).join(", ")} and ${names.length - MAX_LISTED} more`;
}

/** Lower-case DNS label (a tailnet host name): [a-z0-9-], at most 63, no dash at either end. */
export function dnsLabel(value: string): string {
  const label = value
    .toLowerCase()
    .replace(/[^a-z0-9-]+/g, "-")
    .replace(/^-+/, "")
    .slice(0, 63)
    .replace(/-+$/, "");
  return label || "agent";
}
