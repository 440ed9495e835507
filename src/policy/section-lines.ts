/**
 * The comment lines of the written policy (sections.ts says what they are for): reading them from a stored
 * text without trusting them beyond their shape, and writing them so that equal data gives equal bytes.
 */
import type { Grant } from "./generated-types.js";

const PREFIX = "// tailnet-operator ";
const MARKER_LINE = /^\/\/ tailnet-operator policy (sha256:[0-9a-f]{64})(?=[ \n\r])/;

/** What one cluster's section carries. */
export interface SectionData {
  /** "<cluster>/<tailnet>": the cluster name (operator config clusterName) and the Tailnet's name. */
  id: string;
  /** The writing Tailnet's metadata.uid: tells two installations that use one cluster name apart. */
  uid: string;
  /** Generated tag → when it first appeared in this section. */
  tags: Record<string, string>;
  /** Published DNS name → when it first appeared in this section. */
  names: Record<string, string>;
  gen: SectionGen;
}

export interface SectionGen {
  tagOwners: Record<string, string[]>;
  grants: Grant[];
  routes: Record<string, string[]>;
  exitNode: string[];
}

export interface BaseData {
  /** The section id of the cluster that wrote the base. */
  by: string;
  text: string;
}

export interface Line<T> {
  /** The comment line as stored (kept byte for byte when it is another cluster's). */
  line: string;
  data: T;
}

/** The comment lines of a live policy text, read without trusting them beyond their shape. */
export interface LiveShared {
  /** The marker names a hash (marker.ts); whether it matches the body is the marker's business. */
  marked: boolean;
  base?: Line<BaseData>;
  sections: Line<SectionData>[];
  /** Marked, but no base and no section line: written by a version before sections (single cluster). */
  legacy: boolean;
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);
const isStrings = (v: unknown): v is string[] => Array.isArray(v) && v.every((x) => typeof x === "string");
const isStringMap = (v: unknown): v is Record<string, string> =>
  isObject(v) && Object.values(v).every((x) => typeof x === "string");
const isListMap = (v: unknown): v is Record<string, string[]> => isObject(v) && Object.values(v).every(isStrings);
const isGrant = (g: unknown): g is Grant => isObject(g) && isStrings(g.src) && isStrings(g.dst) && isStrings(g.ip);

function sectionOf(v: unknown): SectionData | undefined {
  if (!isObject(v) || typeof v.id !== "string" || typeof v.uid !== "string") return undefined;
  const g = v.gen;
  if (!isStringMap(v.tags) || !isStringMap(v.names) || !isObject(g)) return undefined;
  if (!isListMap(g.tagOwners) || !isListMap(g.routes) || !isStrings(g.exitNode)) return undefined;
  if (!Array.isArray(g.grants) || !g.grants.every(isGrant)) return undefined;
  return v as unknown as SectionData;
}

function baseOf(v: unknown): BaseData | undefined {
  return isObject(v) && typeof v.by === "string" && typeof v.text === "string" ? (v as unknown as BaseData) : undefined;
}

function parseLine<T>(line: string, kind: string, read: (v: unknown) => T | undefined): T | undefined {
  try {
    return read(JSON.parse(line.slice(PREFIX.length + kind.length + 1)));
  } catch {
    return undefined;
  }
}

/** The marker and the base and section lines at the top of a live policy text; a line that does not parse is skipped. */
export function parseShared(text: string): LiveShared {
  const lines = text.split("\n");
  const marked = MARKER_LINE.test(lines[0] ?? "");
  const out: LiveShared = { marked, sections: [], legacy: false };
  if (!marked) return out;
  for (const raw of lines.slice(1)) {
    const line = raw.endsWith("\r") ? raw.slice(0, -1) : raw;
    if (line.startsWith(`${PREFIX}section `)) {
      const data = parseLine(line, "section", sectionOf);
      if (data && !out.sections.some((s) => s.data.id === data.id)) out.sections.push({ line, data });
    } else if (line.startsWith(`${PREFIX}base `)) {
      const data = parseLine(line, "base", baseOf);
      if (data && !out.base) out.base = { line, data };
    } else {
      break;
    }
  }
  out.legacy = !out.base && out.sections.length === 0;
  return out;
}

/**
 * One comment line holding `value` as JSON. JSON.stringify escapes \n and \r but not U+2028/U+2029, which some
 * readers take for line ends: escaped too, so the comment cannot end early.
 */
function commentLine(kind: string, value: unknown): string {
  return `${PREFIX}${kind} ${JSON.stringify(value)
    .replace(/\u2028/g, "\\u2028")
    .replace(/\u2029/g, "\\u2029")}`;
}

export const sortedRecord = <T>(m: Map<string, T> | Record<string, T>): Record<string, T> => {
  const entries = m instanceof Map ? [...m] : Object.entries(m);
  const out: Record<string, T> = {};
  for (const [k, v] of entries.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) out[k] = v;
  return out;
};

/** The section line of `data`, keys in a fixed order so that equal data gives the same bytes. */
export function sectionLine(data: SectionData): string {
  const { id, uid, tags, names, gen } = data;
  return commentLine("section", {
    id,
    uid,
    tags: sortedRecord(tags),
    names: sortedRecord(names),
    gen: {
      tagOwners: sortedRecord(gen.tagOwners),
      grants: gen.grants.map((g) => ({ src: g.src, dst: g.dst, ip: g.ip })),
      routes: sortedRecord(gen.routes),
      exitNode: gen.exitNode,
    },
  });
}

export const baseLine = (data: BaseData): string => commentLine("base", { by: data.by, text: data.text });

/** The text to PUT: the marker naming the body's hash, the base and section lines, the body. */
export function sharedPolicyText(hash: string, meta: string, body: string): string {
  const marker = `// tailnet-operator policy ${hash} (written by tailnet-operator; edits here are overwritten: change the Tailnet's base policy instead)`;
  return meta ? `${marker}\n${meta}\n${body}` : `${marker}\n${body}`;
}

/** The lines between the marker and the body of a live text, as composeShared's `meta` joins them. */
export function metaOf(live: LiveShared): string {
  return [...(live.base ? [live.base.line] : []), ...live.sections.map((s) => s.line)].join("\n");
}
