/**
 * The written policy as sections, one per cluster (docs/OPERATIONS.md "Several clusters on one Headscale").
 * Several operators (one per cluster) may write one Headscale. Headscale stores the policy text verbatim and
 * returns it so (juanfont/headscale hscontrol/db/policy.go; HuJSON, so comments are allowed), so the text
 * itself carries who contributed what, in comment lines after the marker (marker.ts):
 *
 *   // tailnet-operator policy sha256:<hash of the body> (written by tailnet-operator; …)
 *   // tailnet-operator base {"by":"<cluster>/<tailnet>","text":"<the base policy, verbatim>"}
 *   // tailnet-operator section {"id":"<cluster>/<tailnet>","uid":"…","tags":{…},"names":{…},"gen":{…}}
 *   // tailnet-operator section {…another cluster…}
 *   { the body: the base merged with every section's generated parts (merge.ts) }
 *
 * A section holds everything its cluster generates (`gen`) and when each tag and DNS name first appeared in it
 * (`tags`, `names`: RFC 3339). The body is a pure function of the base and the sections, so every operator
 * composes the same body from the same lines: an operator replaces only its own section line, copies every other
 * line byte for byte, and recomposes the body. A tag (a generated tagOwners key) or a name two sections claim
 * belongs to the older claim (first appearance, then the section id): the newer section's claim stays in its
 * line (so both sides can report the contest) and is left out of the body, with every grant, route approver
 * and exit-node approver of that section that names the tag.
 */
import type { GeneratedPolicy, Grant } from "./generated-types.js";
import { type MergeResult, mergePolicy } from "./merge.js";
import {
  type BaseData,
  baseLine,
  type Line,
  type LiveShared,
  type SectionData,
  type SectionGen,
  sectionLine,
  sortedRecord,
} from "./section-lines.js";

export * from "./section-lines.js";

/** The claim order: the first appearance, then the section id (both compare as strings: RFC 3339 UTC sorts). */
const older = (a: [string, string], b: [string, string]) => a[0] < b[0] || (a[0] === b[0] && a[1] < b[1]);

/** Per claimed value (a tag or a name), the id of the section that holds it: the oldest claim. */
export function holders(sections: readonly SectionData[], pick: (s: SectionData) => Record<string, string>) {
  const best = new Map<string, [string, string]>();
  for (const s of sections) {
    for (const [value, since] of Object.entries(pick(s))) {
      const cur = best.get(value);
      if (!cur || older([since, s.id], cur)) best.set(value, [since, s.id]);
    }
  }
  return new Map([...best].map(([value, [, id]]) => [value, id]));
}

/** What a section may put into the body: its generated parts without the tags another, older section holds. */
function effectiveGen(s: SectionData, tagHolder: Map<string, string>): SectionGen {
  const lost = new Set(Object.keys(s.gen.tagOwners).filter((t) => (tagHolder.get(t) ?? s.id) !== s.id));
  if (lost.size === 0) return s.gen;
  const keep = (xs: readonly string[]) => !xs.some((x) => lost.has(x));
  const routes: Record<string, string[]> = {};
  for (const [prefix, tags] of Object.entries(s.gen.routes)) {
    const left = tags.filter((t) => !lost.has(t));
    if (left.length) routes[prefix] = left;
  }
  return {
    tagOwners: Object.fromEntries(Object.entries(s.gen.tagOwners).filter(([t]) => !lost.has(t))),
    grants: s.gen.grants.filter((g) => keep(g.src) && keep(g.dst)),
    routes,
    exitNode: s.gen.exitNode.filter((t) => !lost.has(t)),
  };
}

/** Every section's generated parts as one, in section id order; exact duplicate grants once. */
export function unionOf(sections: readonly SectionData[]): GeneratedPolicy {
  const sorted = [...sections].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  const tagHolder = holders(sorted, (s) => s.tags);
  const tagOwners = new Map<string, string[]>();
  const routes = new Map<string, Set<string>>();
  const exit = new Set<string>();
  const grants: Grant[] = [];
  const seen = new Set<string>();
  for (const s of sorted) {
    const gen = effectiveGen(s, tagHolder);
    for (const [tag, owners] of Object.entries(gen.tagOwners)) if (!tagOwners.has(tag)) tagOwners.set(tag, owners);
    // one section's grants are unique already (generated.ts): only a second section can repeat one
    const dedupe = sorted.length > 1;
    for (const g of gen.grants) {
      const key = dedupe ? JSON.stringify([g.src, g.dst, g.ip]) : "";
      if (dedupe && seen.has(key)) continue;
      if (dedupe) seen.add(key);
      grants.push(g);
    }
    for (const [prefix, tags] of Object.entries(gen.routes)) {
      const set = routes.get(prefix) ?? new Set();
      for (const t of tags) set.add(t);
      routes.set(prefix, set);
    }
    for (const t of gen.exitNode) exit.add(t);
  }
  const byKey = <T>(m: Map<string, T>) => new Map([...m].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
  return {
    tagOwners: byKey(tagOwners),
    grants,
    autoApproverRoutes: byKey(new Map([...routes].map(([p, s]) => [p, [...s].sort()]))),
    autoApproverExitNode: [...exit].sort(),
  };
}

/** A claim of this cluster another section also makes. */
export interface Contest {
  kind: "tag" | "name";
  value: string;
  /** The other section's id. */
  other: string;
}

/** What this cluster is, for its own section. */
export interface SelfId {
  cluster: string;
  tailnet: string;
  /** The Tailnet's metadata.uid ("" when unknown: then never taken for another installation). */
  uid: string;
}

export const sectionId = (self: SelfId) => `${self.cluster}/${self.tailnet}`;

export interface SharedInput {
  self: SelfId;
  /** This cluster's configured base policy text; undefined: none configured (keep another cluster's). */
  baseText: string | undefined;
  gen: GeneratedPolicy;
  /** The DNS names this cluster publishes; undefined when not known (no node list): the live section's stand. */
  names: readonly string[] | undefined;
  /** The live policy's lines; undefined when none is stored or it could not be read. */
  live: LiveShared | undefined;
  now: Date;
  /** Take this section id over from another installation (Tailnet spec.policy.replaceLivePolicy). */
  takeOver?: boolean;
}

export interface SharedRender {
  merged: MergeResult;
  /** The base and section lines, in order, joined by "\n" (what is written between the marker and the body). */
  meta: string;
  /** This cluster's section as written. */
  own: SectionData;
  /** Its line; "" when none is written (nothing to claim, or the id is another installation's). */
  ownLine: string;
  /** Claims of this cluster an older section holds: left out of the body (tags) or of the DNS records (names). */
  refused: Contest[];
  /** Claims of a newer section this cluster holds: refused there. */
  contested: Contest[];
  /** Another installation writes this section id (another Tailnet uid): this cluster's section is not written. */
  nameTaken?: { uid: string };
  /** This cluster configures a base, but another cluster's base is live: that one is kept. */
  baseHeldBy?: string;
  /** The other sections' ids, sorted. */
  others: string[];
}

const toRecord = (m: Map<string, string[]>) => sortedRecord(m);

/** This cluster's section: its generated parts and names, each with the first appearance the live section recorded. */
export function ownSection(input: SharedInput, liveOwn: SectionData | undefined, alone = false): SectionData {
  const at = input.now.toISOString().replace(/\.\d{3}Z$/, "Z");
  const since = (had: Record<string, string> | undefined, values: Iterable<string>, first = at) => {
    const out: Record<string, string> = {};
    for (const v of [...values].sort()) out[v] = (had && Object.hasOwn(had, v) ? had[v] : undefined) ?? first;
    return out;
  };
  return {
    id: sectionId(input.self),
    uid: input.self.uid,
    tags: since(liveOwn?.tags, input.gen.tagOwners.keys()),
    names: ownNames(input, liveOwn, alone, since),
    gen: {
      tagOwners: toRecord(input.gen.tagOwners),
      grants: input.gen.grants,
      routes: toRecord(input.gen.autoApproverRoutes),
      exitNode: input.gen.autoApproverExitNode,
    },
  };
}

/**
 * The published names of this cluster's section. Names matter only between clusters, and a name published
 * later than the policy changed (an ingress's node registers after its grant was written) would cost a PUT
 * whose body is unchanged: a cluster alone keeps the names its line has. Once another cluster's section is
 * live, its names are recorded; those first recorded then are as old as this cluster's section (its oldest
 * first appearance), since they were published before the other cluster came.
 */
function ownNames(
  input: SharedInput,
  liveOwn: SectionData | undefined,
  alone: boolean,
  since: (had: Record<string, string> | undefined, values: Iterable<string>, first?: string) => Record<string, string>,
): Record<string, string> {
  const had = liveOwn?.names ?? {};
  if (input.names === undefined || alone) return { ...had };
  const oldest = Object.values(liveOwn?.tags ?? {}).sort()[0];
  const first = Object.keys(had).length === 0 && oldest !== undefined ? oldest : undefined;
  return since(had, input.names, first);
}

/** The base line to write: this cluster's configured base, unless another cluster's base is live. */
function chooseBase(input: SharedInput, live: LiveShared | undefined, others: Set<string>) {
  const id = sectionId(input.self);
  const liveBase = live?.base;
  if (input.baseText === undefined) {
    // a base this cluster wrote and no longer configures goes, as a removed base does on one cluster
    return liveBase && liveBase.data.by !== id ? { base: liveBase } : {};
  }
  const mine: BaseData = { by: id, text: input.baseText };
  if (!liveBase || liveBase.data.by === id || !others.has(liveBase.data.by))
    return { base: { line: baseLine(mine), data: mine } };
  if (sameBase(liveBase.data.text, input.baseText)) return { base: liveBase };
  return { base: liveBase, heldBy: liveBase.data.by };
}

function sameBase(a: string, b: string): boolean {
  if (a === b) return true;
  const ma = mergePolicy(a, EMPTY);
  const mb = mergePolicy(b, EMPTY);
  return ma.ok && mb.ok && ma.hash === mb.hash;
}

const EMPTY: GeneratedPolicy = {
  tagOwners: new Map(),
  grants: [],
  autoApproverRoutes: new Map(),
  autoApproverExitNode: [],
};

function contests(own: SectionData, others: readonly SectionData[], all: readonly SectionData[]) {
  const refused: Contest[] = [];
  const contested: Contest[] = [];
  if (others.length === 0) return { refused, contested };
  for (const [kind, pick] of [
    ["tag", (s: SectionData) => s.tags],
    ["name", (s: SectionData) => s.names],
  ] as const) {
    const holder = holders(all, pick);
    for (const o of others) {
      for (const value of Object.keys(pick(o))) {
        if (!Object.hasOwn(pick(own), value)) continue;
        const h = holder.get(value);
        if (h === o.id) refused.push({ kind, value, other: o.id });
        else if (h === own.id) contested.push({ kind, value, other: o.id });
      }
    }
  }
  const order = (a: Contest, b: Contest) => (a.kind + a.value + a.other < b.kind + b.value + b.other ? -1 : 1);
  return { refused: refused.sort(order), contested: contested.sort(order) };
}

/**
 * This cluster's render among the live sections: its own section replaced (or added), every other section and
 * another cluster's base kept as they are stored, and the body merged from the base and every section.
 */
export function composeShared(input: SharedInput): SharedRender {
  const id = sectionId(input.self);
  const live = input.live;
  const liveOwn = live?.sections.find((s) => s.data.id === id);
  const othersLines = (live?.sections ?? []).filter((s) => s.data.id !== id);
  const own = ownSection(input, liveOwn?.data, othersLines.length === 0);
  const taken =
    liveOwn &&
    !input.takeOver &&
    liveOwn.data.uid !== "" &&
    input.self.uid !== "" &&
    liveOwn.data.uid !== input.self.uid
      ? { uid: liveOwn.data.uid }
      : undefined;
  const others = new Set(othersLines.map((s) => s.data.id));
  const { base, heldBy } = taken ? { base: live?.base, heldBy: undefined } : chooseBase(input, live, others);
  // another installation's section under this id is kept as it is: this cluster writes nothing of its own;
  // an empty section is not written (a cluster that generates nothing leaves no line behind), unless the
  // base is this cluster's: the line says the cluster is still there, so no other cluster takes the base over
  const keepOwn = !isEmpty(own) || base?.data.by === id;
  const ownLine = taken || !keepOwn ? "" : sectionLine(own);
  const sections: Line<SectionData>[] = taken
    ? (live?.sections ?? [])
    : [...othersLines, ...(ownLine ? [{ line: ownLine, data: own }] : [])];
  sections.sort((a, b) => (a.data.id < b.data.id ? -1 : a.data.id > b.data.id ? 1 : 0));
  const all = sections.map((s) => s.data);
  // this cluster alone: its generated parts as they are (the union of one section is the section)
  const alone = !taken && othersLines.length === 0;
  const merged = mergePolicy(base?.data.text, alone ? input.gen : unionOf(all));
  const meta = [...(base ? [base.line] : []), ...sections.map((s) => s.line)].join("\n");
  const c = taken
    ? { refused: [], contested: [] }
    : contests(
        own,
        othersLines.map((s) => s.data),
        all,
      );
  return {
    merged: merged.ok ? { ...merged, generated: countsOf(input.gen) } : merged,
    meta,
    own,
    ownLine,
    ...c,
    ...(taken ? { nameTaken: taken } : {}),
    ...(heldBy ? { baseHeldBy: heldBy } : {}),
    others: [...others].sort(),
  };
}

const isEmpty = (s: SectionData) =>
  Object.keys(s.tags).length === 0 &&
  Object.keys(s.names).length === 0 &&
  s.gen.grants.length === 0 &&
  Object.keys(s.gen.routes).length === 0 &&
  s.gen.exitNode.length === 0;

const countsOf = (gen: GeneratedPolicy) => ({
  tags: gen.tagOwners.size,
  grants: gen.grants.length,
  routes: gen.autoApproverRoutes.size,
});
