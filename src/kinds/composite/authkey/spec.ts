/**
 * The TailnetAuthKey spec as the kind reads it (CRD defaults applied): the only place the kind reads
 * `parent.spec`, and what the CRD schema cannot express (`authKeySpecProblem`: InvalidSpec naming the field).
 */
import type { K8sObject } from "../../../k8s/objects.js";
import { parseDuration } from "../../shared/workload.js";

export interface AuthKeySpec {
  /** spec.tags, sorted (a tagged key); empty for a user's key. */
  tags: string[];
  /** spec.user.name: a TailnetUser (a user's key). */
  user?: string;
  reusable: boolean;
  ephemeral: boolean;
  /** Lifetime of each key, seconds. */
  expirySeconds: number;
  /** spec.expiry as written, for messages. */
  expiry: string;
  /** A new key is published this long before the current one expires, seconds. */
  renewBeforeSeconds: number;
  secretName: string;
}

type Rec = Record<string, unknown>;
const DEFAULT_EXPIRY = "168h";
/** Headscale accepts any future expiry; below a minute a key would be renewed on every sync. */
export const MIN_EXPIRY_SECONDS = 60;

export function readAuthKeySpec(parent: K8sObject): AuthKeySpec {
  const spec = (parent.spec ?? {}) as Rec;
  const tags = Array.isArray(spec.tags) ? spec.tags.filter((t): t is string => typeof t === "string") : [];
  const user = (spec.user as Rec | undefined)?.name;
  const expiry = typeof spec.expiry === "string" ? spec.expiry : DEFAULT_EXPIRY;
  const expirySeconds = parseDuration(expiry) ?? 0;
  const renewBefore = typeof spec.renewBefore === "string" ? parseDuration(spec.renewBefore) : undefined;
  return {
    tags: [...new Set(tags)].sort(),
    ...(typeof user === "string" && user ? { user } : {}),
    reusable: spec.reusable === true,
    ephemeral: spec.ephemeral === true,
    expirySeconds,
    expiry,
    renewBeforeSeconds: renewBefore ?? Math.floor(expirySeconds / 3),
    secretName: typeof spec.secretName === "string" ? spec.secretName : "",
  };
}

/**
 * What the schema cannot catch: an expiry too short, renewBefore ≥ expiry; and tags and user both or neither, which
 * the CRD's CEL rule refuses at admission too (src/api/cel.ts) — kept for objects stored before the rule.
 */
export function authKeySpecProblem(parent: K8sObject): string | undefined {
  const spec = (parent.spec ?? {}) as Rec;
  const read = readAuthKeySpec(parent);
  const hasTags = Array.isArray(spec.tags) && spec.tags.length > 0;
  if (hasTags && read.user) return "spec.user: set either tags or user, not both";
  if (!hasTags && !read.user) return "spec.tags: set either tags or user";
  if (read.expirySeconds < MIN_EXPIRY_SECONDS) return `spec.expiry: must be at least ${MIN_EXPIRY_SECONDS}s`;
  if (read.renewBeforeSeconds <= 0 || read.renewBeforeSeconds >= read.expirySeconds) {
    return "spec.renewBefore: must be more than 0 and less than spec.expiry";
  }
  return undefined;
}
