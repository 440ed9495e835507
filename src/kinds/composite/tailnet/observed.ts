/** What a Tailnet sync observes in Headscale (a leaf: types only, so every stage may name it). */

import type { Obs } from "../../../headscale/errors.js";
import type { HsApiKey, HsNode, HsPolicy, HsUser } from "../../../headscale/types.js";

export interface HeadscaleObservations {
  health: Obs<{ databaseConnectivity: boolean }>;
  nodes: Obs<HsNode[]>;
  users: Obs<HsUser[]>;
  /** null: database mode with no policy stored yet. */
  policy: Obs<HsPolicy | null>;
  apiKeys: Obs<HsApiKey[]>;
}
