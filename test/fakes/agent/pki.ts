// A throwaway PKI for TLS tests: a CA and leaf certificates with chosen SANs and validity, made with the
// `openssl` CLI in a temporary directory (node:crypto cannot sign X.509). `openssl ca` is used for leaves
// because it takes explicit start and end dates, which is how an already-expired certificate is made.
// writeSecretVolume lays files out like the kubelet does for a Secret volume (`..data` symlink swap).
import { execFile } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdir, mkdtemp, readFile, readlink, rename, rm, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { missingToolMessage } from "../../helpers/tools.js";

const run = promisify(execFile);

export interface IssuedCertificate {
  certPem: string;
  keyPem: string;
  certFile: string;
  keyFile: string;
}

export interface IssueOptions {
  /** DNS subjectAltNames; the first is also the common name. */
  names: string[];
  /** IP subjectAltNames (a server reached as https://<ip>:<port>, e.g. the real Headscale in test/real). */
  ips?: string[];
  /** Default: one hour ago. */
  notBefore?: Date;
  /** Default: 30 days from now. */
  notAfter?: Date;
}

export interface TestPki {
  dir: string;
  caPem: string;
  issue(opts: IssueOptions): Promise<IssuedCertificate>;
  cleanup(): Promise<void>;
}

/** "20200101000000Z": the GeneralizedTime `openssl ca -startdate/-enddate` take. */
function asn1Time(date: Date): string {
  return `${date.toISOString().replace(/[-:T]/g, "").slice(0, 14)}Z`;
}

const CA_CONFIG = `[ ca ]
default_ca = testca
[ testca ]
database = index.txt
new_certs_dir = issued
certificate = ca.crt
private_key = ca.key
default_md = sha256
policy = anything
unique_subject = no
copy_extensions = none
rand_serial = yes
[ anything ]
commonName = supplied
`;

export async function createTestPki(): Promise<TestPki> {
  const dir = await mkdtemp(join(tmpdir(), "agent-pki-"));
  const openssl = (args: string[]) =>
    run("openssl", args, { cwd: dir }).catch((e: NodeJS.ErrnoException) => {
      throw e.code === "ENOENT" ? new Error(missingToolMessage("openssl")) : e;
    });
  await mkdir(join(dir, "issued"));
  await writeFile(join(dir, "index.txt"), "");
  await writeFile(join(dir, "ca.cnf"), CA_CONFIG);
  const ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"];
  await openssl([
    "req",
    "-x509",
    ...ec,
    "-keyout",
    "ca.key",
    "-out",
    "ca.crt",
    "-subj",
    "/CN=agent test CA",
    "-days",
    "3650",
  ]);
  const caPem = await readFile(join(dir, "ca.crt"), "utf8");
  let serial = 0;
  let queue: Promise<unknown> = Promise.resolve();

  const issueNow = async (opts: IssueOptions): Promise<IssuedCertificate> => {
    const id = `leaf${++serial}`;
    const notBefore = opts.notBefore ?? new Date(Date.now() - 3600_000);
    const notAfter = opts.notAfter ?? new Date(Date.now() + 30 * 86400_000);
    await openssl(["req", "-new", ...ec, "-keyout", `${id}.key`, "-out", `${id}.csr`, "-subj", `/CN=${opts.names[0]}`]);
    await writeFile(
      join(dir, `${id}.ext`),
      `subjectAltName=${[...opts.names.map((n) => `DNS:${n}`), ...(opts.ips ?? []).map((ip) => `IP:${ip}`)].join(",")}\n`,
    );
    await openssl([
      "ca",
      "-batch",
      "-config",
      "ca.cnf",
      "-notext",
      "-in",
      `${id}.csr`,
      "-out",
      `${id}.crt`,
      "-startdate",
      asn1Time(notBefore),
      "-enddate",
      asn1Time(notAfter),
      "-extfile",
      `${id}.ext`,
    ]);
    const certFile = join(dir, `${id}.crt`);
    const keyFile = join(dir, `${id}.key`);
    return { certPem: await readFile(certFile, "utf8"), keyPem: await readFile(keyFile, "utf8"), certFile, keyFile };
  };

  return {
    dir,
    caPem,
    // openssl ca keeps a database file: issue one certificate at a time.
    issue(opts) {
      const next = queue.then(() => issueNow(opts));
      queue = next.catch(() => undefined);
      return next;
    },
    cleanup: () => rm(dir, { recursive: true, force: true }),
  };
}

/**
 * Writes files into `dir` the way the kubelet updates a Secret volume: a fresh `..<timestamp>` directory,
 * a `..data` symlink renamed over the old one (atomic), and top-level symlinks `name -> ..data/name`.
 * Returns the top-level paths.
 */
export async function writeSecretVolume(dir: string, files: Record<string, string>): Promise<Record<string, string>> {
  await mkdir(dir, { recursive: true });
  const version = `..${new Date().toISOString().replace(/[-:.]/g, "_")}.${randomBytes(4).toString("hex")}`;
  await mkdir(join(dir, version));
  for (const [name, content] of Object.entries(files))
    await writeFile(join(dir, version, name), content, { mode: 0o600 });
  let previous: string | undefined;
  try {
    previous = await readlink(join(dir, "..data"));
  } catch {
    previous = undefined;
  }
  await symlink(version, join(dir, "..data_tmp"));
  await rename(join(dir, "..data_tmp"), join(dir, "..data"));
  const paths: Record<string, string> = {};
  for (const name of Object.keys(files)) {
    paths[name] = join(dir, name);
    try {
      await symlink(join("..data", name), paths[name]);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
    }
  }
  if (previous) await rm(join(dir, previous), { recursive: true, force: true });
  return paths;
}
