/**
 * Reads CR manifests for `render`: files or directories (*.yaml, *.yml, *.json), multi-document YAML.
 * Every problem is collected (unreadable paths, YAML errors, documents that are not objects), so one
 * run names them all; src/render/validate.ts then checks the objects themselves.
 */
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, resolve } from "node:path";
import { parseAllDocuments } from "yaml";
import { InputError } from "../args.js";
import type { K8sObject } from "../k8s/objects.js";

/** Unreadable input: render prints it and exits 2. */
export class RenderInputError extends InputError {}

export interface InputDoc {
  file: string;
  index: number;
  /** Position inside a `kind: List` document (what `kubectl get -o yaml` exports), when it came from one. */
  item?: number;
  object: K8sObject;
}

const isObject = (o: Partial<K8sObject>): boolean =>
  typeof o === "object" &&
  o !== null &&
  !Array.isArray(o) &&
  typeof o.apiVersion === "string" &&
  typeof o.kind === "string" &&
  typeof o.metadata?.name === "string";

/** What is wrong with one input file or document (validate.ts adds the schema checks). */
export interface Problem {
  file: string;
  /** The document's index in its file (0-based, as kubectl counts); absent for a file-level problem. */
  index?: number;
  /** Position inside a `kind: List` document. */
  item?: number;
  message: string;
}

/** `-f -`: the manifests come from standard input (kubectl's convention); problems name it `<stdin>`. */
export const STDIN = "-";
const STDIN_NAME = "<stdin>";

function files(path: string, problems: Problem[]): string[] {
  if (path === STDIN) return [STDIN];
  let st: ReturnType<typeof statSync>;
  try {
    st = statSync(path);
  } catch {
    problems.push({ file: path, message: "no such file or directory" });
    return [];
  }
  if (!st.isDirectory()) return [path];
  return readdirSync(path)
    .sort()
    .flatMap((name) => {
      const p = join(path, name);
      if (statSync(p).isDirectory()) return files(p, problems);
      return /\.(ya?ml|json)$/.test(name) && !/^(snapshot|agents|expected)[.-]/.test(name) ? [p] : [];
    });
}

export function readManifests(
  paths: readonly string[],
  readStdin: () => string = () => readFileSync(0, "utf8"),
): { docs: InputDoc[]; problems: Problem[] } {
  const docs: InputDoc[] = [];
  const problems: Problem[] = [];
  // A file reached twice (a directory and a file inside it) is read once, not reported as a duplicate.
  const seen = new Set<string>();
  for (const path of paths.flatMap((p) => files(p, problems))) {
    const key = path === STDIN ? STDIN : resolve(path);
    if (seen.has(key)) continue;
    seen.add(key);
    const file = path === STDIN ? STDIN_NAME : path;
    let text: string;
    try {
      text = path === STDIN ? readStdin() : readFileSync(path, "utf8");
    } catch (e) {
      problems.push({ file, message: `cannot read (${(e as Error).message})` });
      continue;
    }
    parseAllDocuments(text).forEach((doc, index) => {
      if (doc.errors.length) {
        problems.push({ file, index, message: doc.errors[0].message.split("\n")[0] });
        return;
      }
      const value = doc.toJSON() as unknown;
      if (value === null || value === undefined) return;
      const o = value as Partial<K8sObject> & { items?: unknown };
      // kubectl apply takes a v1 List as its items, one by one.
      if (o && typeof o === "object" && o.apiVersion === "v1" && o.kind === "List" && Array.isArray(o.items)) {
        o.items.forEach((item, i) => {
          if (isObject(item as Partial<K8sObject>)) docs.push({ file, index, item: i, object: item as K8sObject });
          else
            problems.push({
              file,
              index,
              item: i,
              message: "not a Kubernetes object (needs apiVersion, kind, metadata.name)",
            });
        });
        return;
      }
      if (!isObject(o)) {
        problems.push({ file, index, message: "not a Kubernetes object (needs apiVersion, kind, metadata.name)" });
        return;
      }
      docs.push({ file, index, object: o as K8sObject });
    });
  }
  return { docs, problems };
}
