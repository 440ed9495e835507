/** TailnetSite: spec and status. */
import {
  aclEntities,
  arr,
  bool,
  CIDR_PATTERN,
  commonWorkloadStatus,
  obj,
  type Schema,
  str,
  TAG_PATTERN,
  tailnetRef,
} from "./common.js";

export const siteSpec: Schema = obj(
  {
    tailnetRef,
    prefixes: arr(str({ pattern: CIDR_PATTERN }), { minItems: 1, maxItems: 16 }),
    advertiserTags: arr(str({ pattern: TAG_PATTERN }), { minItems: 1, maxItems: 16 }),
    allowFrom: aclEntities("Who may use the routes."),
  },
  ["tailnetRef", "prefixes", "advertiserTags"],
);

export const siteStatus: Schema = obj({
  ...commonWorkloadStatus,
  advertisers: arr(obj({ node: str(), prefixes: arr(str()), approved: bool() })),
});
