// Certificates of http exposes, read from the mounted kubernetes.io/tls Secret files and selected by SNI.
// Kubernetes updates a Secret volume by swapping its `..data` symlink, so the files are simply re-read on a
// timer and compared with what is loaded: a changed pair becomes a new SecureContext that the next handshakes
// use, while established connections keep theirs (nothing is dropped). A pair that does not load (a half-written
// update, a key that does not match) keeps the previous context. Key material never reaches logs or errors.
import { createHash, X509Certificate } from "node:crypto";
import { readFile } from "node:fs/promises";
import { createSecureContext, type SecureContext } from "node:tls";
import type { AgentLogger } from "./log.js";

export interface CertificateEntry {
  readonly expose: string;
  readonly certFile: string;
  readonly keyFile: string;
  /** The context new handshakes get; undefined until a pair has loaded once. */
  context?: SecureContext;
  /** The PEMs behind `context`, for servers' default (no-SNI) context. */
  pem?: { cert: string; key: string };
  /** sha256 over the loaded files, to notice changes without keeping a second copy. */
  digest?: string;
  /** Why the last read did not load (no key material in it). */
  error?: string;
}

/** Lower-case, no trailing dot: how SNI names and configured names are compared. */
export function normalizeName(name: string): string {
  return name.toLowerCase().replace(/\.$/, "");
}

/**
 * Picks the entry for an SNI server name: an exact name, then a configured wildcard ("*.example.com" covers
 * one label), else the fallback (the first expose of the listener, as for clients that send no SNI).
 */
export function selectByServerName<T>(names: ReadonlyMap<string, T>, serverName: string | undefined, fallback: T): T {
  if (!serverName) return fallback;
  const name = normalizeName(serverName);
  const exact = names.get(name);
  if (exact !== undefined) return exact;
  const dot = name.indexOf(".");
  if (dot > 0) {
    const wildcard = names.get(`*${name.slice(dot)}`);
    if (wildcard !== undefined) return wildcard;
  }
  return fallback;
}

/**
 * (Re)reads an entry's files. Returns true when a new pair was loaded; false when unchanged or unusable
 * (then `error` says why and the previous context stays).
 */
export async function loadCertificate(entry: CertificateEntry, log: AgentLogger): Promise<boolean> {
  let cert: string;
  let key: string;
  try {
    [cert, key] = await Promise.all([readFile(entry.certFile, "utf8"), readFile(entry.keyFile, "utf8")]);
  } catch (err) {
    return fail(entry, `cannot read certificate files (${(err as NodeJS.ErrnoException).code ?? "error"})`, log);
  }
  const digest = createHash("sha256").update(cert).update("\0").update(key).digest("hex");
  if (digest === entry.digest) return false;
  let context: SecureContext;
  let notAfter = "";
  try {
    context = createSecureContext({ cert, key });
    notAfter = new X509Certificate(cert).validTo;
  } catch (err) {
    // OpenSSL's messages ("key values mismatch", "no start line") describe the problem, not the key.
    return fail(entry, `certificate does not load (${(err as Error).message.split("\n")[0]})`, log);
  }
  const reloaded = entry.context !== undefined;
  entry.context = context;
  entry.pem = { cert, key };
  entry.digest = digest;
  entry.error = undefined;
  log.info(reloaded ? "certificate reloaded" : "certificate loaded", { expose: entry.expose, notAfter });
  return true;
}

function fail(entry: CertificateEntry, error: string, log: AgentLogger): false {
  if (entry.error !== error) log.warn("certificate not loaded", { expose: entry.expose, error });
  entry.error = error;
  return false;
}
