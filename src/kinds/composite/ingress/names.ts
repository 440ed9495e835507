/**
 * The names a TailnetIngress publishes (pure): what keeps them from being published (Ready's name blockers)
 * and whether Headscale serves them (DNSServed).
 *
 * DNSServed asks the agent what its node's quad-100 resolver answers for each published name (the agent's
 * `/status?names=`, src/agent/dns-query.ts). Headscale hands every node the records of its
 * dns.extra_records_path file (juanfont/headscale hscontrol/types/config.go, DNS.ExtraRecords) and the
 * resolver answers them even on pods run with --accept-dns=false (tailscale ipn/ipnlocal/node_backend.go
 * dnsConfigForNetmap), so an answer there is what a tailnet client gets. Headscale's API shows nothing of
 * its DNS configuration, so this is the only place a missing records path shows before a user types the
 * name. A name arrives a minute or two after it is published (the kubelet updates the mounted ConfigMap,
 * Headscale reloads the file); it never holds Ready back: the ingress serves by address meanwhile.
 */
import { IngressCondition as C, IngressReason as R } from "../../../conditions/tables/ingress.js";
import type { NotEvaluatedReason } from "../../../conditions/tables/shared.js";
import { dnsRecordsConfigMapName } from "../../../k8s/labels.js";
import type { ScrapeResult } from "../../../pipeline/types.js";
import type { NameHolder } from "../../shared/dns-owners.js";
import type { IngressNames } from "../../shared/ingress-names.js";
import { listNames } from "../../shared/node-names.js";
import { cond, type IngressCondition, type ReadyReason } from "./conditions.js";

/** Something that keeps Ready False, with the reason Ready then carries. */
export interface Blocker {
  ok: boolean;
  reason: ReadyReason;
  message: string;
}

/** The names one scrape asks the agent about (src/agent/dns-query.ts MAX_QUERIED_NAMES). */
export const MAX_ASKED_NAMES = 16;

/** The names to ask the agent's resolver about: every name the ingress could publish, none invalid. */
export function namesToAsk(names: IngressNames | undefined): string[] | undefined {
  if (!names || names.invalid.length > 0 || names.all.length === 0) return undefined;
  return names.all.slice(0, MAX_ASKED_NAMES);
}

/** The names published: all of them unless one is invalid (then none), less those another holds. */
export function publishedNames(names: IngressNames | undefined, lost: ReadonlySet<string>): string[] {
  if (!names || names.invalid.length > 0) return [];
  return names.all.filter((n) => !lost.has(n));
}

export function namesBlockers(
  names: IngressNames | undefined,
  held: NameHolder[],
  conflicts: { name: string; claimedBy: string }[],
): Blocker[] {
  const invalid = names?.invalidAt ?? [];
  return [
    {
      ok: invalid.length === 0,
      reason: "InvalidDNSName",
      message: `not a DNS label: ${listNames(invalid.map((i) => `${i.field} "${i.label}"`))} (a host or alias is one lower-case label; the Tailnet's baseDomain is appended); nothing is published`,
    },
    {
      ok: held.length === 0,
      reason: "DNSNameReserved",
      message: `the name of another machine: ${listNames(held.map((h) => `${h.name} (${h.heldBy})`))}; a record under it would take that machine's connections, so these names are not published for this ingress`,
    },
    {
      ok: conflicts.length === 0,
      reason: "DNSNameConflict",
      message: `already claimed by an older TailnetIngress: ${listNames(conflicts.map((c) => `${c.name} (${c.claimedBy})`))}; these names are not published for this ingress`,
    },
  ];
}

export interface DnsServedInput {
  /** The Tailnet's name, or why the conditions are not evaluated (its reason and message). */
  tailnet: { name: string } | { reason: NotEvaluatedReason; message: string };
  /** The names this sync publishes (status.dnsName, exposes[].dnsName and aliases). */
  published: readonly string[];
  scrapes: readonly ScrapeResult[];
}

/**
 * Per published name: served (some running pod's resolver answered addresses), not served (answered none),
 * unknown. Only pods whose tailscaled runs count: before its node joins, a resolver has no records to give.
 */
function answersFor(published: readonly string[], scrapes: readonly ScrapeResult[]) {
  const served = new Map<string, string[]>();
  const notServed = new Map<string, string>();
  const errors: string[] = [];
  for (const name of published) {
    const answers = scrapes.flatMap((s) =>
      s.ok && s.status.ready ? (s.status.names ?? []).filter((a) => a.name === name) : [],
    );
    const hit = answers.find((a) => a.addresses.length > 0);
    const answered = answers.find((a) => a.rcode !== undefined);
    if (hit) served.set(name, hit.addresses);
    else if (answered) notServed.set(name, answered.rcode ?? "");
    else errors.push(answers.find((a) => a.error)?.error ?? "");
  }
  return { served, notServed, errors };
}

function whyUnknown(scrapes: readonly ScrapeResult[], errors: readonly string[]): string {
  const ok = scrapes.filter((s) => s.ok);
  if (ok.length === 0) {
    const failed = scrapes.map((s) => (s.ok ? "" : `${s.pod}: ${s.error}`));
    return `no agent pod could be scraped${failed.length ? ` (${failed.join("; ")})` : ""}`;
  }
  if (!ok.some((s) => s.status.ready))
    return "no agent pod's tailscaled is running yet, so its resolver has no records";
  const error = errors.find((e) => e);
  return error
    ? `the agent could not ask its resolver: ${error}`
    : "the agent does not report names (an older agent image)";
}

export function dnsServedCondition(input: DnsServedInput): IngressCondition<"DNSServed"> {
  const { tailnet } = input;
  if (!("name" in tailnet)) return cond(C.DNSServed, "Unknown", tailnet.reason, `not evaluated: ${tailnet.message}`);
  if (input.published.length === 0)
    return cond(C.DNSServed, "True", R.NothingPublished, "no name is published for this ingress: nothing to serve");
  const asked = input.published.slice(0, MAX_ASKED_NAMES);
  const { served, notServed, errors } = answersFor(asked, input.scrapes);
  if (notServed.size > 0) {
    const names = [...notServed].map(([name, rcode]) => `${name} (${rcode})`);
    return cond(
      C.DNSServed,
      "False",
      R.NotServed,
      `Headscale does not hand out ${listNames(names)} to the agent's node; a new name takes a minute or two (the kubelet updates ConfigMap ${dnsRecordsConfigMapName(tailnet.name)}, Headscale reloads the file); if it stays, Headscale does not read that file: check dns.extra_records_path in Headscale's config (docs/troubleshooting.md, "A name does not resolve")`,
    );
  }
  if (served.size < asked.length) {
    return cond(C.DNSServed, "Unknown", R.ProbeFailed, whyUnknown(input.scrapes, errors));
  }
  const more = input.published.length > asked.length ? ` (the first ${asked.length} names checked)` : "";
  const shown = [...served].map(([name, addresses]) => `${name} (${addresses.join(", ")})`);
  return cond(C.DNSServed, "True", R.Served, `Headscale hands out ${listNames(shown)} to the agent's node${more}`);
}
