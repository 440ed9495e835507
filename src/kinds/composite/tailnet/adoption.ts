/**
 * Adopting a tailnet that already has a policy (pure). Without a base policy the render holds only what the
 * workload objects generate, so the first write would replace whatever Headscale holds — hand-written ACLs,
 * groups, hosts, SSH rules. Until the operator has applied a policy once (status.policy.appliedHash), a base
 * is configured, or the spec says the live policy may go (spec.policy.replaceLivePolicy), nothing that would
 * be dropped is written: decide.ts reports AdoptionRefused with what would be lost and how to keep it. Once
 * the operator has applied a policy, the drift rule applies instead (PolicyDriftOverwritten).
 */
import { canonicalJson } from "../../../policy/canonical.js";
import { parseHuJson } from "../../../policy/hujson.js";

type Json = Record<string, unknown>;

const isObject = (v: unknown): v is Json => typeof v === "object" && v !== null && !Array.isArray(v);

/** The value of a top-level key matched case-insensitively (Headscale decodes names that way). */
function section(policy: Json, name: string): unknown {
  const key = Object.keys(policy).find((k) => k.toLowerCase() === name.toLowerCase());
  return key === undefined ? undefined : policy[key];
}

const LISTS: Array<[string, string, string]> = [
  ["acls", "acl rule", "acl rules"],
  ["grants", "grant", "grants"],
  ["ssh", "ssh rule", "ssh rules"],
  ["nodeAttrs", "nodeAttrs entry", "nodeAttrs entries"],
  ["tests", "test", "tests"],
  ["sshTests", "sshTest", "sshTests"],
];
const MAPS = ["groups", "hosts", "tagOwners"];
const MAX_NAMED = 5;

const named = (what: string, names: string[]) =>
  `${what} ${names.slice(0, MAX_NAMED).join(", ")}${names.length > MAX_NAMED ? ` and ${names.length - MAX_NAMED} more` : ""}`;

/**
 * What replacing `live` by `rendered` would drop, one phrase per section, in policy order: list entries of
 * the live policy not present (equal) in the render, map keys missing or changed, and any other top-level
 * key that differs. [] when the render keeps everything.
 */
export function lostByReplacing(live: Json, rendered: Json): string[] {
  const out: string[] = [];
  for (const [name, one, many] of LISTS) {
    const had = section(live, name);
    if (!Array.isArray(had) || had.length === 0) continue;
    const kept = section(rendered, name);
    const keep = new Set(Array.isArray(kept) ? kept.map((e) => canonicalJson(e)) : []);
    const lost = had.filter((e) => !keep.has(canonicalJson(e))).length;
    if (lost > 0) out.push(`${lost} ${lost === 1 ? one : many}`);
  }
  for (const name of MAPS) {
    const had = section(live, name);
    if (!isObject(had)) continue;
    const kept = section(rendered, name);
    const keep = isObject(kept) ? kept : {};
    const lost = Object.keys(had).filter(
      (k) => !Object.hasOwn(keep, k) || canonicalJson(keep[k]) !== canonicalJson(had[k]),
    );
    if (lost.length > 0) out.push(named(name, lost));
  }
  const approvers = section(live, "autoApprovers");
  if (isObject(approvers)) {
    const keptApprovers = section(rendered, "autoApprovers");
    const keep = isObject(keptApprovers) ? keptApprovers : {};
    const routes = section(approvers, "routes");
    const keptRoutes = section(keep, "routes");
    if (isObject(routes)) {
      const kr = isObject(keptRoutes) ? keptRoutes : {};
      const lost = Object.keys(routes).filter((k) => !Object.hasOwn(kr, k) || !containsAll(kr[k], routes[k]));
      if (lost.length > 0) out.push(named("autoApprovers routes", lost));
    }
    const exit = section(approvers, "exitNode");
    if (Array.isArray(exit) && !containsAll(section(keep, "exitNode"), exit)) out.push("autoApprovers exitNode");
  }
  const handled = new Set([...LISTS.map(([n]) => n), ...MAPS, "autoApprovers"].map((n) => n.toLowerCase()));
  for (const key of Object.keys(live)) {
    if (handled.has(key.toLowerCase())) continue;
    if (canonicalJson(live[key]) !== canonicalJson(section(rendered, key))) out.push(key);
  }
  return out;
}

/** Every entry of `had` is in `kept` (both lists of approvers). */
function containsAll(kept: unknown, had: unknown): boolean {
  if (!Array.isArray(had)) return true;
  const set = new Set(Array.isArray(kept) ? kept.map((e) => canonicalJson(e)) : []);
  return had.every((e) => set.has(canonicalJson(e)));
}

/** What would be lost by writing `rendered` over the live policy text; undefined when it is not a policy object. */
export function lostOverLiveText(liveText: string, rendered: Json): string[] | undefined {
  if (liveText.trim() === "") return [];
  const parsed = parseHuJson(liveText);
  if (!parsed.ok || !isObject(parsed.value)) return undefined;
  return lostByReplacing(parsed.value, rendered);
}
