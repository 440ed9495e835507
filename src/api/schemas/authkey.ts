/** TailnetAuthKey (issue 27): spec and status. */

import { EXPIRY_AT_LEAST_A_MINUTE, RENEW_BEFORE_WITHIN_EXPIRY, TAGS_XOR_USER } from "../cel.js";
import {
  arr,
  bool,
  commonWorkloadStatus,
  DNS1123_SUBDOMAIN_PATTERN,
  DURATION_PATTERN,
  obj,
  preAuthKeyIds,
  type Schema,
  str,
  TAG_PATTERN,
  tailnetRef,
} from "./common.js";

export const authKeySpec: Schema = obj(
  {
    tailnetRef,
    tags: arr(str({ pattern: TAG_PATTERN }), {
      minItems: 1,
      maxItems: 16,
      "x-kubernetes-list-type": "set",
      description:
        "Tags of the machines joining with the key; each must be granted to the namespace by the Tailnet's spec.tenancy.tags (else Admitted=False/TagNotGranted). Exactly one of tags and user.",
    }),
    user: obj(
      { name: str({ minLength: 1, pattern: DNS1123_SUBDOMAIN_PATTERN, description: "Name of the TailnetUser." }) },
      ["name"],
      {
        description:
          "A TailnetUser whose spec.authKeyNamespaces lists this namespace: the machines join as that user. Exactly one of tags and user.",
      },
    ),
    reusable: bool({ default: false, description: "The key registers any number of machines." }),
    ephemeral: bool({ default: false, description: "Machines registered with it are removed once offline." }),
    expiry: str({
      pattern: DURATION_PATTERN,
      maxLength: 64,
      default: "168h",
      description: "Lifetime of each key (at least 1m).",
    }),
    renewBefore: str({
      pattern: DURATION_PATTERN,
      maxLength: 64,
      description:
        "A new key is published this long before the current one expires; the old one is expired once the Secret is observed holding the new one. Default: a third of expiry. Must be shorter than expiry.",
    }),
    secretName: str({
      pattern: DNS1123_SUBDOMAIN_PATTERN,
      maxLength: 253,
      description:
        "The Secret (in this namespace) the key is delivered into, with keys authkey, login-server and, when the Tailnet has one, ca.crt.",
    }),
  },
  ["tailnetRef", "secretName"],
  { "x-kubernetes-validations": [TAGS_XOR_USER, EXPIRY_AT_LEAST_A_MINUTE, RENEW_BEFORE_WITHIN_EXPIRY] },
);

export const authKeyStatus: Schema = obj({
  ...commonWorkloadStatus,
  keyId: str({ description: "Id of the key in the Secret (never the key)." }),
  expiresAt: str({ format: "date-time", description: "When the key in the Secret expires." }),
  renewAt: str({ format: "date-time", description: "When a new key is minted (spec.renewBefore ahead of expiresAt)." }),
  preAuthKeyIds,
});
