/** Reads CR manifests for `render`: files or directories (*.yaml, *.yml, *.json), multi-document YAML. */
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { parseAllDocuments } from "yaml";
import type { K8sObject } from "../k8s/objects.js";

export class RenderInputError extends Error {}

export interface InputDoc {
  file: string;
  index: number;
  object: K8sObject;
}

function files(path: string): string[] {
  let st: ReturnType<typeof statSync>;
  try {
    st = statSync(path);
  } catch {
    throw new RenderInputError(`${path}: no such file or directory`);
  }
  if (!st.isDirectory()) return [path];
  return readdirSync(path)
    .sort()
    .flatMap((name) => {
      const p = join(path, name);
      if (statSync(p).isDirectory()) return files(p);
      return /\.(ya?ml|json)$/.test(name) && !/^(snapshot|agents|expected)[.-]/.test(name) ? [p] : [];
    });
}

export function readManifests(paths: readonly string[]): InputDoc[] {
  const out: InputDoc[] = [];
  for (const file of paths.flatMap(files)) {
    let text: string;
    try {
      text = readFileSync(file, "utf8");
    } catch (e) {
      throw new RenderInputError(`${file}: cannot read (${(e as Error).message})`);
    }
    const docs = parseAllDocuments(text);
    docs.forEach((doc, index) => {
      if (doc.errors.length) {
        throw new RenderInputError(`${file}: document ${index}: ${doc.errors[0].message.split("\n")[0]}`);
      }
      const value = doc.toJSON() as unknown;
      if (value === null || value === undefined) return;
      const o = value as Partial<K8sObject>;
      if (
        typeof o !== "object" ||
        typeof o.apiVersion !== "string" ||
        typeof o.kind !== "string" ||
        typeof o.metadata?.name !== "string"
      ) {
        throw new RenderInputError(
          `${file}: document ${index}: not a Kubernetes object (needs apiVersion, kind, metadata.name)`,
        );
      }
      out.push({ file, index, object: o as K8sObject });
    });
  }
  return out;
}
