/**
 * Reading one source's records file: a cluster's records ConfigMap through its Kubernetes API (one GET on
 * the one object, which is all the Role the docs give the sidecar allows), or a local file. A read either
 * gives the parsed JSON list or throws an error whose message is safe to log: a status code and the API
 * server's own Status message, never a request header (the bearer token lives there), a kubeconfig or a body.
 */
import { readFile, stat } from "node:fs/promises";
import { request } from "node:https";
import type { SourceConfig, SourceSpec } from "./config.js";

/** A ConfigMap holds at most 1 MiB of data; an answer much larger than that is not one. */
export const MAX_SOURCE_BYTES = 3 * 1024 * 1024;

export class SourceError extends Error {}

export interface SourceReader {
  /** The source's records file, parsed (a JSON list), or a SourceError. */
  read(): Promise<unknown[]>;
}

function parseList(text: string, what: string): unknown[] {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    throw new SourceError(`${what} is not JSON`);
  }
  if (!Array.isArray(raw)) throw new SourceError(`${what} is not a JSON list`);
  return raw;
}

function fileReader(path: string): SourceReader {
  return {
    async read() {
      try {
        if ((await stat(path)).size > MAX_SOURCE_BYTES)
          throw new SourceError(`${path} is larger than ${MAX_SOURCE_BYTES} bytes`);
        return parseList(await readFile(path, "utf8"), path);
      } catch (e) {
        if (e instanceof SourceError) throw e;
        throw new SourceError(`${path}: ${(e as NodeJS.ErrnoException).code ?? "unreadable"}`);
      }
    },
  };
}

type KubeSpec = Extract<SourceSpec, { kind: "kubernetes" }>;

interface KubeTarget {
  base: URL;
  opts: import("node:https").RequestOptions;
}

/**
 * The kubeconfig (or the pod's own ServiceAccount when none is named), loaded for every read: a token the
 * kubelet rotates in a mounted Secret or projection is the next read's. A kubeconfig that turns TLS
 * verification off or talks plain HTTP is refused: the bearer token would go to whoever answers.
 */
async function loadKube(spec: KubeSpec): Promise<KubeTarget> {
  const k8s = await import("@kubernetes/client-node");
  const kc = new k8s.KubeConfig();
  try {
    if (spec.kubeconfig) kc.loadFromFile(spec.kubeconfig);
    else kc.loadFromCluster();
    if (spec.context) kc.setCurrentContext(spec.context);
  } catch (e) {
    // loadFromFile's errors may quote the file; keep only what kind of failure it was
    const what = spec.kubeconfig ?? "(in-cluster)";
    throw new SourceError(`kubeconfig ${what}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).name}`);
  }
  const cluster = kc.getCurrentCluster();
  if (!cluster) throw new SourceError("the kubeconfig names no cluster for its current context");
  if (cluster.skipTLSVerify) throw new SourceError("the kubeconfig sets insecure-skip-tls-verify: refused");
  const base = new URL(cluster.server);
  if (base.protocol !== "https:") throw new SourceError(`the kubeconfig's server is ${base.protocol}// (https only)`);
  const opts: import("node:https").RequestOptions = {};
  try {
    await kc.applyToHTTPSOptions(opts);
  } catch (e) {
    throw new SourceError(`credentials: ${(e as Error).name}`);
  }
  return { base, opts };
}

async function kubeReader(spec: KubeSpec, timeoutMs: number): Promise<SourceReader> {
  await loadKube(spec); // a kubeconfig that can never work fails at once, naming why
  const what = `configmap ${spec.namespace}/${spec.configMap}`;
  const tail = `/api/v1/namespaces/${encodeURIComponent(spec.namespace)}/configmaps/${encodeURIComponent(spec.configMap)}`;
  return {
    async read() {
      const { base, opts } = await loadKube(spec);
      const body = await getJson(base, `${base.pathname.replace(/\/$/, "")}${tail}`, opts, timeoutMs, what);
      const data = (body as { data?: Record<string, unknown> }).data ?? {};
      const text = data[spec.key];
      if (typeof text !== "string") throw new SourceError(`${what} has no key ${spec.key}`);
      return parseList(text, `${what} key ${spec.key}`);
    },
  };
}

/** One GET with the kubeconfig's TLS and credentials; resolves the JSON body of a 200. */
function getJson(
  base: URL,
  path: string,
  opts: import("node:https").RequestOptions,
  timeoutMs: number,
  what: string,
): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: base.hostname.replace(/^\[|\]$/g, ""),
        port: base.port || 443,
        path,
        method: "GET",
        ca: opts.ca,
        cert: opts.cert,
        key: opts.key,
        servername: opts.servername,
        headers: { ...(opts.headers ?? {}), accept: "application/json" },
        auth: opts.auth,
        agent: false,
        timeout: timeoutMs,
      },
      (res) => {
        const chunks: Buffer[] = [];
        let size = 0;
        res.on("data", (c: Buffer) => {
          size += c.length;
          if (size > MAX_SOURCE_BYTES)
            req.destroy(new SourceError(`GET ${what}: answer larger than ${MAX_SOURCE_BYTES} bytes`));
          else chunks.push(c);
        });
        res.on("end", () => {
          const text = Buffer.concat(chunks).toString("utf8");
          let body: unknown;
          try {
            body = JSON.parse(text);
          } catch {
            return reject(new SourceError(`GET ${what}: HTTP ${res.statusCode}, not JSON`));
          }
          if (res.statusCode === 200) return resolve(body);
          // a metav1.Status: its message is the API server's ("configmaps \"x\" is forbidden: User ...")
          const message = (body as { message?: unknown }).message;
          const detail = typeof message === "string" ? `: ${message.slice(0, 300)}` : "";
          reject(new SourceError(`GET ${what}: HTTP ${res.statusCode}${detail}`));
        });
        res.on("error", (e) => reject(e instanceof SourceError ? e : new SourceError(`GET ${what}: ${e.message}`)));
      },
    );
    req.on("timeout", () => req.destroy(new SourceError(`GET ${what}: no answer within ${timeoutMs} ms`)));
    req.on("error", (e: NodeJS.ErrnoException) =>
      reject(e instanceof SourceError ? e : new SourceError(`GET ${what}: ${e.code ?? e.message}`)),
    );
    req.end();
  });
}

/** The reader of a configured source; a kubeconfig that cannot be used is a SourceError naming why. */
export async function sourceReader(source: SourceConfig, timeoutMs: number): Promise<SourceReader> {
  if (source.spec.kind === "file") return fileReader(source.spec.path);
  return await kubeReader(source.spec, timeoutMs);
}
