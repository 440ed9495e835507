/**
 * The renames a gateway writes (identity.ts): a re-registered replica's node takes its wanted name back once its
 * predecessor is gone (src/kinds/shared/replica-nodes.ts planRenames). Types only, so plan, act and decide share
 * them without importing each other.
 */

export interface GatewayRename {
  id: string;
  /** The node's name now (Headscale's givenName). */
  from: string;
  name: string;
}

export interface GatewayRenamed extends GatewayRename {
  error?: string;
}
