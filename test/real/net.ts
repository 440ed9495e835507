/**
 * The test network of the real world: one Linux bridge per run with a /24 of its own
 * (10.213.<n>.0/24), and one network namespace per host whose only interface is a veth on that bridge
 * (plus lo; a subnet router also holds a veth to its subnet's namespace). No namespace has a default
 * route and IPv6 is off in all of them, so a stray dial to anything outside the test subnet fails
 * inside the namespace (ENETUNREACH) and is counted by the kernel (Ip OutNoRoutes, see
 * noRouteAttempts) instead of leaving the machine. Subnets made by addSubnet are "unreachable" routes
 * in every other namespace: a dial there is refused at once (EHOSTUNREACH) and not counted, since a test
 * namespace holds the address — the counter counts only addresses no test namespace holds. The test process's own leg is the bridge's address
 * in the root namespace: a connected route for the test subnet only (no forwarding is enabled).
 *
 * Runs are told apart by <n>: a pid file in /run/tailnet-real/<n>.pid claims the number (O_EXCL), and
 * create() first removes the namespaces, links and processes of runs whose pid is gone (crashed runs).
 * Names: bridge rw<n>br, host-side veths rw<n>h<i>, namespaces rw<n>-<host>.
 */
import { type ChildProcess, execFile, execFileSync, spawn } from "node:child_process";
import { existsSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { appendFile, mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";

const run = promisify(execFile);
const IP = "/usr/sbin/ip";
const STATE = "/run/tailnet-real";
const PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
/** The nameserver of every namespace: unroutable there (see makeNetns). */
export const UNROUTABLE_DNS = "203.0.113.53";

export interface SpawnOptions {
  env?: Record<string, string>;
  cwd?: string;
  /** Name of the log file under the run's log folder (default: the command's base name). */
  logName?: string;
  /** Run as this user (setpriv), e.g. postgres. */
  user?: string;
}

export interface ExecOptions {
  env?: Record<string, string>;
  cwd?: string;
  /** Default 30 s. */
  timeoutMs?: number;
  input?: string;
  user?: string;
}

export interface ExecResult {
  code: number;
  stdout: string;
  stderr: string;
}

export interface RealProcess {
  pid: number;
  /** The last lines of stdout+stderr, for failure messages. */
  logs(): string;
  /** Resolves with the exit code (null when killed by a signal). */
  exited: Promise<number | null>;
  /** Sends the signal (default SIGTERM), SIGKILL after 5 s, resolves once exited. */
  kill(signal?: NodeJS.Signals): Promise<void>;
  /** The whole stdout+stderr so far, as written to the run's log folder. */
  logFile: string;
  /** Resolves once everything the process printed so far is in logFile. */
  flush(): Promise<void>;
}

export interface Host {
  name: string;
  netns: string;
  /** Its address on the test bridge (or on its subnet, for a subnet host). */
  ip: string;
  /** A private folder for this host's files (state, sockets, config). */
  dir: string;
  spawn(cmd: string, args: string[], opts?: SpawnOptions): RealProcess;
  exec(cmd: string, args: string[], opts?: ExecOptions): Promise<ExecResult>;
}

const LOG_LINES = 60;

class Proc implements RealProcess {
  pid: number;
  exited: Promise<number | null>;
  private lines: string[] = [];
  private partial = "";
  private done = false;

  constructor(
    private child: ChildProcess,
    readonly logFile: string,
    private label: string,
  ) {
    this.pid = child.pid ?? -1;
    this.exited = new Promise((resolve) => {
      child.on("exit", (code) => {
        this.done = true;
        resolve(code);
      });
      child.on("error", (err) => {
        this.push(`spawn error: ${err.message}\n`);
        this.done = true;
        resolve(null);
      });
    });
    const onData = (d: Buffer) => this.push(d.toString("utf8"));
    child.stdout?.on("data", onData);
    child.stderr?.on("data", onData);
  }

  /** Appends in arrival order (concurrent appendFile calls could reorder chunks and split lines). */
  private writing: Promise<void> = Promise.resolve();

  /** Resolves once everything received so far is in the log file. */
  flush(): Promise<void> {
    return this.writing;
  }

  private push(text: string) {
    this.writing = this.writing.then(() => appendFile(this.logFile, text)).catch(() => undefined);
    const parts = (this.partial + text).split("\n");
    this.partial = parts.pop() ?? "";
    this.lines.push(...parts);
    if (this.lines.length > LOG_LINES * 4) this.lines = this.lines.slice(-LOG_LINES);
  }

  logs(): string {
    const all = [...this.lines, ...(this.partial ? [this.partial] : [])].slice(-LOG_LINES);
    return `--- last lines of ${this.label} ---\n${all.join("\n")}`;
  }

  get running(): boolean {
    return !this.done;
  }

  async kill(signal: NodeJS.Signals = "SIGTERM"): Promise<void> {
    if (this.done) return;
    this.child.kill(signal);
    const timer = setTimeout(() => this.child.kill("SIGKILL"), 5000);
    await this.exited;
    clearTimeout(timer);
  }
}

async function ip(args: string[]): Promise<void> {
  try {
    await run(IP, args);
  } catch (err) {
    const e = err as { stderr?: string; message: string };
    throw new Error(`ip ${args.join(" ")}: ${(e.stderr ?? e.message).trim()}`);
  }
}

async function quiet(cmd: string, args: string[]): Promise<void> {
  await run(cmd, args).catch(() => undefined);
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === "EPERM";
  }
}

/** Run numbers whose pid file names a live process. */
function liveRuns(): Set<number> {
  const live = new Set<number>();
  if (!existsSync(STATE)) return live;
  for (const f of readdirSync(STATE)) {
    const m = /^(\d+)\.pid$/.exec(f);
    if (!m) continue;
    const pid = Number(readFileSync(join(STATE, f), "utf8").trim());
    if (pid > 0 && alive(pid)) live.add(Number(m[1]));
  }
  return live;
}

async function netnsList(): Promise<string[]> {
  const { stdout } = await run(IP, ["netns", "list"]);
  return stdout
    .split("\n")
    .map((l) => l.split(" ")[0])
    .filter(Boolean);
}

async function killNetns(ns: string): Promise<void> {
  const { stdout } = await run(IP, ["netns", "pids", ns]).catch(() => ({ stdout: "" }));
  for (const pid of stdout.split(/\s+/).filter(Boolean)) {
    try {
      process.kill(Number(pid), "SIGKILL");
    } catch {
      // already gone
    }
  }
}

/** Removes every namespace, link and pid file of runs that are no longer alive. */
async function removeStale(): Promise<void> {
  const live = liveRuns();
  const stale = (n: number) => !live.has(n);
  for (const ns of await netnsList()) {
    const m = /^rw(\d+)-/.exec(ns);
    if (!m || !stale(Number(m[1]))) continue;
    await killNetns(ns);
    await quiet(IP, ["netns", "del", ns]);
    await rm(`/etc/netns/${ns}`, { recursive: true, force: true });
  }
  const { stdout } = await run(IP, ["-o", "link", "show"]);
  for (const line of stdout.split("\n")) {
    const m = /^\d+: (rw(\d+)(?:br|h\d+|s\d+))[@:]/.exec(line);
    if (m && stale(Number(m[2]))) await quiet(IP, ["link", "del", m[1]]);
  }
  if (existsSync(STATE)) {
    for (const f of readdirSync(STATE)) {
      const m = /^(\d+)\.pid$/.exec(f);
      if (m && stale(Number(m[1]))) await rm(join(STATE, f), { force: true });
    }
  }
}

/** Third octets already used by some route of this machine in 10.213.0.0/16. */
async function usedOctets(): Promise<Set<number>> {
  const { stdout } = await run(IP, ["-4", "route", "show", "table", "all"]);
  const used = new Set<number>();
  for (const line of stdout.split("\n")) {
    const m = /\b10\.213\.(\d+)\./.exec(line);
    if (m) used.add(Number(m[1]));
  }
  return used;
}

/** Nets not closed yet: torn down synchronously if the process exits first (a crash, a SIGTERM). */
const open = new Set<TestNet>();
let exitHooked = false;
function hookExit(): void {
  if (exitHooked) return;
  exitHooked = true;
  process.on("exit", () => {
    for (const net of open) net.closeSync();
  });
  for (const sig of ["SIGINT", "SIGTERM"] as const) {
    if (process.listenerCount(sig) === 0) process.once(sig, () => process.exit(sig === "SIGINT" ? 130 : 143));
  }
}

export interface AddHostOptions {
  /** A fixed last octet on the bridge (default: the next free one). */
  octet?: number;
}

export class TestNet {
  readonly hosts: Host[] = [];
  private procs = new Set<Proc>();
  private nextOctet = 2;
  private nextLink = 2;
  private subnets = 0;
  private subnetCidrs = new Set<string>();
  /** addInternet: the one route through a link each such host may hold (namespace → the route's pattern). */
  private viaRoutes = new Map<string, RegExp>();
  private closed = false;

  private constructor(
    /** The run number: the third octet of the test subnet. */
    readonly n: number,
    /** Folder of this run: logs and the hosts' own folders. */
    readonly dir: string,
  ) {}

  get bridge(): string {
    return `rw${this.n}br`;
  }
  /** The test subnet. */
  get cidr(): string {
    return `10.213.${this.n}.0/24`;
  }
  /** The test process's own address on the bridge (root namespace). */
  get rootIp(): string {
    return `10.213.${this.n}.1`;
  }
  get logDir(): string {
    return join(this.dir, "logs");
  }

  static async create(opts: { id?: string } = {}): Promise<TestNet> {
    await mkdir(STATE, { recursive: true });
    await removeStale();
    const used = await usedOctets();
    const live = liveRuns();
    const start = 1 + Math.floor(Math.random() * 250);
    for (let i = 0; i < 250; i++) {
      const n = ((start + i - 1) % 250) + 1;
      if (used.has(n) || live.has(n)) continue;
      try {
        await writeFile(join(STATE, `${n}.pid`), `${process.pid}\n`, { flag: "wx" });
      } catch {
        continue;
      }
      const dir = await mkdtemp(join(tmpdir(), `real-${opts.id ?? "world"}-${n}-`));
      const net = new TestNet(n, dir);
      open.add(net);
      hookExit();
      await mkdir(net.logDir, { recursive: true });
      try {
        await ip(["link", "add", net.bridge, "type", "bridge"]);
        await writeFile(`/proc/sys/net/ipv6/conf/${net.bridge}/disable_ipv6`, "1");
        await ip(["addr", "add", `${net.rootIp}/24`, "dev", net.bridge]);
        await ip(["link", "set", net.bridge, "up"]);
      } catch (err) {
        await net.close();
        throw err;
      }
      return net;
    }
    throw new Error("no free 10.213.<n>.0/24 for a test network");
  }

  private async makeNetns(ns: string): Promise<void> {
    await ip(["netns", "add", ns]);
    // The namespace's resolv.conf (ip netns exec bind-mounts /etc/netns/<ns>/*) names a nameserver
    // no namespace holds and no route reaches (TEST-NET-3): a process never asks the machine's
    // resolver, and every lookup it tries fails at once with ENETUNREACH and counts in OutNoRoutes —
    // so noRouteAttempts() also sees a process looking up a public name (a log or update server).
    await mkdir(`/etc/netns/${ns}`, { recursive: true });
    await writeFile(
      `/etc/netns/${ns}/resolv.conf`,
      `# real-world test namespace: unroutable on purpose\nnameserver ${UNROUTABLE_DNS}\noptions attempts:1 timeout:1\n`,
    );
    await ip(["-n", ns, "link", "set", "lo", "up"]);
    await run(IP, [
      "netns",
      "exec",
      ns,
      "sysctl",
      "-q",
      "-w",
      "net.ipv6.conf.all.disable_ipv6=1",
      "net.ipv6.conf.default.disable_ipv6=1",
    ]);
  }

  private host(name: string, ns: string, addr: string): Host {
    const dir = join(this.dir, name);
    return {
      name,
      netns: ns,
      ip: addr,
      dir,
      spawn: (cmd, args, opts = {}) => this.spawnIn(ns, cmd, args, opts, dir),
      exec: (cmd, args, opts = {}) => this.execIn(ns, cmd, args, opts, dir),
    };
  }

  /** A host: a namespace with one veth on the bridge, address 10.213.<n>.<octet>/24, no default route. */
  async addHost(name: string, opts: AddHostOptions = {}): Promise<Host> {
    if (!/^[a-z][a-z0-9-]{0,30}$/.test(name)) throw new Error(`host name ${name}: lower-case letters, digits, -`);
    if (this.hosts.some((h) => h.name === name)) throw new Error(`host ${name} exists already`);
    const octet = opts.octet ?? this.nextOctet++;
    const ns = `rw${this.n}-${name}`;
    const link = `rw${this.n}h${this.nextLink++}`;
    const addr = `10.213.${this.n}.${octet}`;
    await this.makeNetns(ns);
    await ip(["link", "add", link, "type", "veth", "peer", "name", "eth0", "netns", ns]);
    await writeFile(`/proc/sys/net/ipv6/conf/${link}/disable_ipv6`, "1");
    await ip(["link", "set", link, "master", this.bridge, "up"]);
    await ip(["-n", ns, "addr", "add", `${addr}/24`, "dev", "eth0"]);
    await ip(["-n", ns, "link", "set", "eth0", "up"]);
    for (const cidr of this.subnetCidrs) await ip(["-n", ns, "route", "add", "unreachable", cidr]);
    const host = this.host(name, ns, addr);
    await mkdir(host.dir, { recursive: true });
    this.hosts.push(host);
    return host;
  }

  /**
   * A subnet behind a router host: a further namespace holding hostIp, linked to the router by a veth
   * pair (the router gets the subnet's first address). Neither side gets a default route: the router
   * reaches the subnet over the connected route, and the subnet host answers only its subnet.
   */
  async addSubnet(router: Host, cidr: string, hostIp: string): Promise<Host> {
    const m = /^(\d+\.\d+\.\d+)\.0\/24$/.exec(cidr);
    if (!m) throw new Error(`addSubnet: ${cidr}: only x.y.z.0/24 subnets`);
    const routerIp = `${m[1]}.1`;
    if (!hostIp.startsWith(`${m[1]}.`) || hostIp === routerIp) throw new Error(`addSubnet: ${hostIp} not in ${cidr}`);
    const name = `${router.name}-lan${this.subnets++}`;
    this.subnetCidrs.add(cidr);
    const ns = `rw${this.n}-${name}`;
    await this.makeNetns(ns);
    await ip(["-n", router.netns, "link", "add", "sub0", "type", "veth", "peer", "name", "eth0", "netns", ns]);
    await ip(["-n", router.netns, "addr", "add", `${routerIp}/24`, "dev", "sub0"]);
    await ip(["-n", router.netns, "link", "set", "sub0", "up"]);
    await ip(["-n", ns, "addr", "add", `${hostIp}/24`, "dev", "eth0"]);
    await ip(["-n", ns, "link", "set", "eth0", "up"]);
    const host = this.host(name, ns, hostIp);
    await mkdir(host.dir, { recursive: true });
    // Everyone else learns the subnet as unreachable: a dial there (e.g. tailscaled's SOCKS5 falling
    // back to the OS when the tailnet gives no route) fails at once with EHOSTUNREACH and is not
    // counted as a dial outside, since a test namespace does hold the address.
    for (const other of this.hosts) {
      if (other !== router) await ip(["-n", other.netns, "route", "add", "unreachable", cidr]);
    }
    this.hosts.push(host);
    return host;
  }

  /**
   * "The internet" one hop behind a host (an exit node's pod): a further namespace holding `address` on lo,
   * linked to `via` by a veth pair on the /24 `link` (`via` gets .1 on sub0, the far end .2), and a route to
   * address's /24 through that link in `via`'s namespace only. One hop, not a connected subnet: tailscaled
   * does not forward exit traffic to networks its host is attached to (ipn/ipnlocal shrinkDefaultRoute).
   * Every other namespace learns both /24s as unreachable, as for addSubnet.
   */
  async addInternet(via: Host, link: string, address: string): Promise<Host> {
    const m = /^(\d+\.\d+\.\d+)\.0\/24$/.exec(link);
    const a = /^(\d+\.\d+\.\d+)\.\d+$/.exec(address);
    if (!m || !a) throw new Error(`addInternet: ${link} must be x.y.z.0/24 and ${address} an IPv4 address`);
    const far = `${m[1]}.2`;
    const world = `${a[1]}.0/24`;
    const name = `${via.name}-inet`;
    const ns = `rw${this.n}-${name}`;
    for (const c of [link, world]) this.subnetCidrs.add(c);
    this.viaRoutes.set(
      via.netns,
      new RegExp(`^${world.replaceAll(".", "\\.")} via ${far.replaceAll(".", "\\.")} dev sub0\\s*$`),
    );
    await this.makeNetns(ns);
    await ip(["-n", via.netns, "link", "add", "sub0", "type", "veth", "peer", "name", "eth0", "netns", ns]);
    await ip(["-n", via.netns, "addr", "add", `${m[1]}.1/24`, "dev", "sub0"]);
    await ip(["-n", via.netns, "link", "set", "sub0", "up"]);
    await ip(["-n", via.netns, "route", "add", world, "via", far, "dev", "sub0"]);
    await ip(["-n", ns, "addr", "add", `${far}/24`, "dev", "eth0"]);
    await ip(["-n", ns, "addr", "add", `${address}/32`, "dev", "lo"]);
    await ip(["-n", ns, "link", "set", "eth0", "up"]);
    const host = this.host(name, ns, address);
    await mkdir(host.dir, { recursive: true });
    for (const other of this.hosts) {
      if (other === via) continue;
      for (const c of [link, world]) await ip(["-n", other.netns, "route", "add", "unreachable", c]);
    }
    this.hosts.push(host);
    return host;
  }

  private argv(ns: string, cmd: string, args: string[], user?: string): string[] {
    // setpriv execs the command itself (runuser forks and keeps a parent, which would swallow signals).
    const as = user ? ["/usr/bin/setpriv", `--reuid=${user}`, `--regid=${user}`, "--init-groups", "--"] : [];
    return ["netns", "exec", ns, ...as, cmd, ...args];
  }

  private spawnIn(ns: string, cmd: string, args: string[], opts: SpawnOptions, dir: string): RealProcess {
    if (this.closed) throw new Error("TestNet is closed");
    const base = opts.logName ?? cmd.split("/").pop() ?? "proc";
    const child = spawn(IP, this.argv(ns, cmd, args, opts.user), {
      cwd: opts.cwd ?? dir,
      env: { PATH, HOME: dir, ...opts.env },
      stdio: ["ignore", "pipe", "pipe"],
    });
    const proc = new Proc(child, join(this.logDir, `${ns}.${base}.log`), `${base} in ${ns}`);
    this.procs.add(proc);
    void proc.exited.then(() => this.procs.delete(proc));
    return proc;
  }

  private execIn(ns: string, cmd: string, args: string[], opts: ExecOptions, dir: string): Promise<ExecResult> {
    return new Promise((resolve) => {
      const child = execFile(
        IP,
        this.argv(ns, cmd, args, opts.user),
        {
          cwd: opts.cwd ?? dir,
          env: { PATH, HOME: dir, ...opts.env },
          timeout: opts.timeoutMs ?? 30_000,
          maxBuffer: 64 * 1024 * 1024,
        },
        (err, stdout, stderr) => {
          const code = err ? (typeof err.code === "number" ? err.code : -1) : 0;
          resolve({ code, stdout: String(stdout), stderr: String(stderr) || (err && code === -1 ? err.message : "") });
        },
      );
      if (opts.input !== undefined) child.stdin?.end(opts.input);
      else child.stdin?.end();
    });
  }

  /**
   * Containment evidence: per host, how many times the kernel found no route for a packet a process
   * tried to send (Ip OutNoRoutes + Ip6OutNoRoutes of its namespace). Every dial to an address outside
   * the test subnet lands here, because no namespace has a default route.
   */
  async noRouteAttempts(): Promise<Record<string, number>> {
    const out: Record<string, number> = {};
    for (const h of this.hosts) {
      const r = await h.exec("/bin/cat", ["/proc/net/snmp", "/proc/net/snmp6"]);
      if (r.code !== 0) throw new Error(`reading /proc/net/snmp in ${h.netns}: ${r.stderr}`);
      out[h.name] = outNoRoutes(r.stdout);
    }
    return out;
  }

  /**
   * Containment problems, one line each (empty when contained): a namespace with an interface other
   * than lo, eth0 and a router's sub0; an IPv4 route that is not a connected route of the test subnet
   * (or of a router's subnet); any IPv6 route; and any dial the kernel refused for want of a route.
   */
  async containmentProblems(): Promise<string[]> {
    const problems: string[] = [];
    const attempts = await this.noRouteAttempts();
    for (const h of this.hosts) {
      const links = await h.exec(IP, ["-o", "link", "show"]);
      for (const line of links.stdout.split("\n").filter(Boolean)) {
        const name = /^\d+: ([^:@]+)/.exec(line)?.[1];
        if (name && !["lo", "eth0", "sub0"].includes(name)) problems.push(`${h.name}: interface ${name}`);
      }
      // Every IPv4 route of every table: the kernel's own local/broadcast entries, and connected /24s
      // of the test subnet or of a subnet made by addSubnet. Nothing else (no default, no gateway).
      const v4 = await h.exec(IP, ["-4", "route", "show", "table", "all"]);
      for (const line of v4.stdout.split("\n").filter(Boolean)) {
        if (/^(local|broadcast|multicast) \S+ dev (lo|eth0|sub0) table local /.test(line)) continue;
        const m = /^(\S+) dev (eth0|sub0) proto kernel scope link src \S+\s*$/.exec(line);
        if (m && (m[1] === this.cidr || this.subnetCidrs.has(m[1]))) continue;
        const u = /^unreachable (\S+)\s*$/.exec(line);
        if (u && this.subnetCidrs.has(u[1])) continue;
        if (this.viaRoutes.get(h.netns)?.test(line)) continue;
        problems.push(`${h.name}: route ${line.trim()}`);
      }
      const v6 = await h.exec(IP, ["-6", "route", "show", "table", "all"]);
      for (const line of v6.stdout.split("\n").filter(Boolean)) problems.push(`${h.name}: IPv6 route ${line.trim()}`);
      if (attempts[h.name] !== 0) problems.push(`${h.name}: ${attempts[h.name]} sends found no route (a dial outside)`);
    }
    return problems;
  }

  /** Processes started by this net that are still running. */
  get running(): number {
    return [...this.procs].filter((p) => p.running).length;
  }

  /** close() for the process's exit: synchronous, SIGKILL only. */
  closeSync(): void {
    if (this.closed) return;
    this.closed = true;
    open.delete(this);
    const sync = (args: string[]) => {
      try {
        return execFileSync(IP, args, { encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] });
      } catch {
        return "";
      }
    };
    for (const ns of sync(["netns", "list"])
      .split("\n")
      .map((l) => l.split(" ")[0])
      .filter((x) => x?.startsWith(`rw${this.n}-`))) {
      for (const pid of sync(["netns", "pids", ns]).split(/\s+/).filter(Boolean)) {
        try {
          process.kill(Number(pid), "SIGKILL");
        } catch {
          // gone
        }
      }
      sync(["netns", "del", ns]);
      rmSync(`/etc/netns/${ns}`, { recursive: true, force: true });
    }
    sync(["link", "del", this.bridge]);
    rmSync(join(STATE, `${this.n}.pid`), { force: true });
    if (!process.env.REAL_KEEP_LOGS) rmSync(this.dir, { recursive: true, force: true });
  }

  /** Removes a host: its processes killed, its namespace (and so its veths) deleted. */
  async removeHost(host: Host): Promise<void> {
    const i = this.hosts.indexOf(host);
    if (i < 0) throw new Error(`removeHost: ${host.name} is not a host of this net`);
    this.hosts.splice(i, 1);
    await killNetns(host.netns);
    await quiet(IP, ["netns", "del", host.netns]);
    await rm(`/etc/netns/${host.netns}`, { recursive: true, force: true });
  }

  /**
   * Tears everything down; safe to call twice and after failures. Before that, it checks containment
   * (containmentProblems) over everything the run did, and throws after the teardown when any host
   * broke it — so every real-world test file asserts the hard rule, whatever it tests.
   */
  async close(): Promise<void> {
    if (this.closed) return;
    const problems = await this.containmentProblems().catch((err: Error) => [
      `containment check failed: ${err.message}`,
    ]);
    this.closed = true;
    open.delete(this);
    await Promise.all([...this.procs].map((p) => p.kill("SIGTERM").catch(() => undefined)));
    for (const ns of (await netnsList()).filter((x) => x.startsWith(`rw${this.n}-`))) {
      await killNetns(ns);
      await quiet(IP, ["netns", "del", ns]);
      await rm(`/etc/netns/${ns}`, { recursive: true, force: true });
    }
    await quiet(IP, ["link", "del", this.bridge]);
    await rm(join(STATE, `${this.n}.pid`), { force: true });
    if (!process.env.REAL_KEEP_LOGS) await rm(this.dir, { recursive: true, force: true });
    if (problems.length) throw new Error(`test network ${this.cidr} was not contained: ${problems.join("; ")}`);
  }
}

/** Ip OutNoRoutes (from /proc/net/snmp's "Ip:" header and value lines) + Ip6OutNoRoutes. */
export function outNoRoutes(text: string): number {
  const lines = text.split("\n");
  let total = 0;
  for (let i = 0; i + 1 < lines.length; i++) {
    if (lines[i].startsWith("Ip: ") && lines[i + 1].startsWith("Ip: ")) {
      const names = lines[i].split(/\s+/);
      const values = lines[i + 1].split(/\s+/);
      const k = names.indexOf("OutNoRoutes");
      if (k > 0 && /^\d+$/.test(values[k])) total += Number(values[k]);
      break;
    }
  }
  const v6 = /^Ip6OutNoRoutes\s+(\d+)/m.exec(text);
  if (v6) total += Number(v6[1]);
  return total;
}
