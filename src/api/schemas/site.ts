/** TailnetSite: spec and status. */
import {
  aclEntities,
  arr,
  bool,
  cidrItem,
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
    prefixes: arr(cidrItem(), {
      minItems: 1,
      maxItems: 16,
      description:
        "The site's networks (IPv4 or IPv6 CIDRs, no host bits set); an overlap with Tailnet.spec.reservedNetworks or an older site is a RouteConflict.",
    }),
    advertiserTags: arr(str({ pattern: TAG_PATTERN }), {
      minItems: 1,
      maxItems: 16,
      description: "Tags of the subnet routers allowed to advertise the prefixes; their routes are auto-approved.",
    }),
    allowFrom: aclEntities("Who may use the routes."),
  },
  ["tailnetRef", "prefixes", "advertiserTags"],
);

export const siteStatus: Schema = obj({
  ...commonWorkloadStatus,
  advertisers: arr(
    obj({
      node: str({ description: "The router node's name." }),
      prefixes: arr(str(), { description: "The site's prefixes the node advertises." }),
      approved: bool({ description: "Whether Headscale approved them." }),
    }),
    { description: "Nodes with an advertiser tag advertising the site's prefixes." },
  ),
});
