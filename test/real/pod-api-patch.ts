/**
 * The two patch formats the tailscale kube client sends (tailscale.com kube/kubeclient/client.go
 * JSONPatchResource, StrategicMergePatchSecret), applied as kube-apiserver applies them to a Secret:
 * RFC 6902 add/replace/remove/test (a path that is not there is an error, which the server answers with 422 —
 * containerboot's deleteAuthKey counts that as "already gone", cmd/containerboot/kube.go) and a merge patch
 * (a strategic merge patch of a Secret has no lists to merge by key, so it is RFC 7386: objects merge, a null
 * removes the key, anything else replaces).
 */

export class PatchError extends Error {}

type Json = unknown;
type Container = Record<string, Json> | Json[];

function isObject(v: Json): v is Record<string, Json> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** "/data/a~1b" → ["data", "a/b"] (RFC 6901). */
function pointer(path: string): string[] {
  if (path === "") return [];
  if (!path.startsWith("/")) throw new PatchError(`invalid JSON pointer ${JSON.stringify(path)}`);
  return path
    .slice(1)
    .split("/")
    .map((t) => t.replaceAll("~1", "/").replaceAll("~0", "~"));
}

function parentOf(doc: Json, tokens: string[], op: string, path: string): Container {
  let cur: Json = doc;
  for (const t of tokens.slice(0, -1)) {
    const next: Json = Array.isArray(cur) ? cur[Number(t)] : isObject(cur) ? cur[t] : undefined;
    if (next === undefined || next === null)
      throw new PatchError(`jsonpatch ${op} operation does not apply: doc is missing path: "${path}": missing value`);
    cur = next;
  }
  if (!isObject(cur) && !Array.isArray(cur))
    throw new PatchError(`jsonpatch ${op} operation does not apply: doc is missing path: "${path}": missing value`);
  return cur;
}

/** Applies an RFC 6902 patch to `doc` (mutated and returned). */
export function applyJsonPatch(doc: Json, patch: Json): Json {
  if (!Array.isArray(patch))
    throw new PatchError("json: cannot unmarshal object into Go value of type jsonpatch.Patch");
  for (const raw of patch) {
    const { op, path, value } = raw as { op: string; path: string; value?: Json };
    const tokens = pointer(path);
    if (tokens.length === 0) throw new PatchError(`jsonpatch ${op}: the whole document cannot be replaced`);
    const parent = parentOf(doc, tokens, op, path);
    const key = tokens[tokens.length - 1];
    const missing = () =>
      new PatchError(`jsonpatch ${op} operation does not apply: doc is missing key: ${path}: missing value`);
    if (Array.isArray(parent)) {
      const i = key === "-" ? parent.length : Number(key);
      if (!Number.isInteger(i) || i < 0 || i > parent.length) throw missing();
      if (op === "add") parent.splice(i, 0, value);
      else if (i >= parent.length) throw missing();
      else if (op === "remove") parent.splice(i, 1);
      else if (op === "replace") parent[i] = value;
      else if (op === "test" && JSON.stringify(parent[i]) !== JSON.stringify(value))
        throw new PatchError(`testing value ${path} failed`);
      continue;
    }
    if (op === "add") parent[key] = value;
    else if (!Object.hasOwn(parent, key)) throw missing();
    else if (op === "remove") delete parent[key];
    else if (op === "replace") parent[key] = value;
    else if (op === "test") {
      if (JSON.stringify(parent[key]) !== JSON.stringify(value)) throw new PatchError(`testing value ${path} failed`);
    } else throw new PatchError(`Unexpected kind: ${op}`);
  }
  return doc;
}

/** Applies an RFC 7386 merge patch to `doc` (returns the result). */
export function mergePatch(doc: Json, patch: Json): Json {
  if (!isObject(patch)) return patch;
  const out: Record<string, Json> = isObject(doc) ? { ...doc } : {};
  for (const [k, v] of Object.entries(patch)) {
    if (v === null) delete out[k];
    else out[k] = mergePatch(out[k], v);
  }
  return out;
}
