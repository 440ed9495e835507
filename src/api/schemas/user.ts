/** TailnetUser (issue 27): spec and status. */
import {
  arr,
  conditions,
  DNS1123_LABEL_PATTERN,
  int,
  obj,
  observedGeneration,
  type Schema,
  str,
  tailnetRef,
} from "./common.js";

export const userSpec: Schema = obj(
  {
    tailnetRef,
    name: str({
      minLength: 2,
      maxLength: 253,
      // Headscale's ValidateUsername (hscontrol/util/dns.go), ASCII: a letter first, then letters, digits, "-", ".", "_", at most one "@"
      pattern: "^[A-Za-z][A-Za-z0-9._-]*(@[A-Za-z0-9._-]*)?$",
      description:
        "The Headscale user name (a letter, then letters, digits, -, ., _ and at most one @, as Headscale requires). Created (a local user) when no user holds it; adopted, never renamed, when one does. A name held by two users is the Tailnet's UsersUnique concern and is not touched here. Changing it points the object at another user; the previous one is left as it is.",
    }),
    displayName: str({
      maxLength: 253,
      description:
        "Display name given when the operator creates the user. Headscale's API cannot change it later (only a rename exists), so a difference is reported (ProfileMatches=False), not written.",
    }),
    email: str({
      maxLength: 253,
      description: "E-mail given when the operator creates the user; reported like displayName.",
    }),
    deletionPolicy: str({
      enum: ["Retain", "Delete"],
      default: "Retain",
      description:
        "Delete: deleting this object deletes the Headscale user, only if the operator created it (status.createdUserId) and it is still the same local user. Retain (default): the user stays.",
    }),
    authKeyNamespaces: arr(str({ pattern: DNS1123_LABEL_PATTERN }), {
      maxItems: 64,
      "x-kubernetes-list-type": "set",
      description:
        "Namespaces whose TailnetAuthKeys may mint keys for this user (a key for a user joins machines as that user). Default: none.",
    }),
  },
  ["tailnetRef", "name"],
);

export const userStatus: Schema = obj({
  observedGeneration,
  id: str({ description: "The Headscale user id." }),
  nodeCount: int({ minimum: 0, description: "Nodes owned by the user (tagged nodes own none)." }),
  provider: str({ description: "The user's provider, e.g. oidc; empty for a local user." }),
  createdUserId: str({
    description:
      "Set only when the operator created the user, in the answer that created it: the proof deletionPolicy Delete needs.",
  }),
  conditions,
});
