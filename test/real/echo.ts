/**
 * A TCP echo server run as a process inside a host (node from the devDependency, one line of script),
 * and a tiny TCP client for checks from inside a host. Both stay within the host's namespace.
 */
import { bins } from "./bins.js";
import type { Host, RealProcess } from "./net.js";

const ECHO = `const net=require("node:net");const port=Number(process.argv[1]);
net.createServer(s=>{s.on("error",()=>{});s.pipe(s)}).listen(port,"0.0.0.0",()=>console.log("echo listening on "+port));`;

/** Starts a TCP echo on 0.0.0.0:port in the host and waits until it listens. */
export async function startEcho(host: Host, port: number): Promise<RealProcess> {
  const p = host.spawn(bins.node, ["-e", ECHO, String(port)], { logName: `echo-${port}` });
  const deadline = Date.now() + 10_000;
  while (Date.now() < deadline) {
    if (p.logs().includes(`echo listening on ${port}`)) return p;
    const early = await Promise.race([p.exited.then(() => true), sleep(50).then(() => false)]);
    if (early) break;
  }
  await p.kill("SIGKILL");
  throw new Error(`echo on ${host.name}:${port} did not start\n${p.logs()}`);
}

const CLIENT = `const net=require("node:net");const [h,p,msg]=process.argv.slice(1);
const s=net.connect({host:h,port:Number(p),timeout:5000});let got="";
s.on("connect",()=>s.write(msg));s.on("data",d=>{got+=d;if(got.length>=msg.length){process.stdout.write(got);s.end();process.exit(0)}});
s.on("timeout",()=>{console.error("timeout");process.exit(2)});s.on("error",e=>{console.error(e.code||e.message);process.exit(1)});`;

/** Connects from inside `from` to host:port, sends msg, returns what came back (or the error code). */
export async function echoFrom(from: Host, host: string, port: number, msg = "ping"): Promise<string> {
  const r = await from.exec(bins.node, ["-e", CLIENT, host, String(port), msg], { timeoutMs: 15_000 });
  return r.code === 0 ? r.stdout : `error: ${r.stderr.trim()}`;
}

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
