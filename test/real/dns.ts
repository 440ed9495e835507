/**
 * The pods' nameserver: a UDP DNS stub on the test process's leg of the bridge (port 53). It answers
 * A questions for the names the pod runner knows (Services, the test world's hosts) and NXDOMAIN for
 * everything else, and records each question it could not answer with the asking address — so a test
 * can assert that no pod even tried to resolve a name outside the test world (log.tailscale.com,
 * controlplane.tailscale.com, a public DERP...). No question is ever forwarded anywhere.
 */
import { createSocket, type RemoteInfo } from "node:dgram";

export interface DnsStub {
  /** Questions answered NXDOMAIN, in order (name without the trailing dot, lower case). */
  unanswered(): { from: string; name: string }[];
  close(): Promise<void>;
}

const TYPE_A = 1;

/** Parses the question of a DNS query: name, qtype and the offset just past the question. */
function question(msg: Buffer): { name: string; qtype: number; end: number } | undefined {
  if (msg.length < 12 || msg.readUInt16BE(4) < 1) return undefined;
  const labels: string[] = [];
  let off = 12;
  while (off < msg.length) {
    const len = msg[off];
    if (len === 0) {
      off++;
      break;
    }
    if (len > 63 || off + 1 + len > msg.length) return undefined;
    labels.push(msg.subarray(off + 1, off + 1 + len).toString("latin1"));
    off += 1 + len;
  }
  if (off + 4 > msg.length) return undefined;
  return { name: labels.join(".").toLowerCase(), qtype: msg.readUInt16BE(off), end: off + 4 };
}

function answer(msg: Buffer, q: { qtype: number; end: number }, ip: string | undefined): Buffer {
  const header = Buffer.from(msg.subarray(0, q.end));
  const rd = header[2] & 0x01;
  header[2] = 0x80 | 0x04 | rd; // QR, AA, RD echoed
  const rcode = ip === undefined ? 3 : 0; // NXDOMAIN for unknown names
  header[3] = 0x80 | rcode; // RA
  header.writeUInt16BE(1, 4); // one question
  const withA = ip !== undefined && q.qtype === TYPE_A;
  header.writeUInt16BE(withA ? 1 : 0, 6);
  header.writeUInt16BE(0, 8);
  header.writeUInt16BE(0, 10);
  if (!withA) return header;
  const rr = Buffer.alloc(16);
  rr.writeUInt16BE(0xc00c, 0); // pointer to the question's name
  rr.writeUInt16BE(TYPE_A, 2);
  rr.writeUInt16BE(1, 4); // IN
  rr.writeUInt32BE(5, 6); // TTL 5 s
  rr.writeUInt16BE(4, 10);
  ip.split(".").forEach((o, i) => {
    rr[12 + i] = Number(o);
  });
  return Buffer.concat([header, rr]);
}

/** `lookup(from, name)` → an IPv4 address, or undefined (NXDOMAIN, recorded). */
export async function startDnsStub(
  ip: string,
  lookup: (from: string, name: string) => string | undefined,
  port = 53,
): Promise<DnsStub> {
  const sock = createSocket("udp4");
  const unanswered: { from: string; name: string }[] = [];
  sock.on("message", (msg: Buffer, rinfo: RemoteInfo) => {
    const q = question(msg);
    if (!q) return;
    const found = lookup(rinfo.address, q.name);
    if (found === undefined) unanswered.push({ from: rinfo.address, name: q.name });
    sock.send(answer(msg, q, found), rinfo.port, rinfo.address);
  });
  await new Promise<void>((resolve, reject) => {
    sock.once("error", reject);
    sock.bind(port, ip, () => {
      sock.off("error", reject);
      resolve();
    });
  });
  return {
    unanswered: () => [...unanswered],
    close: () => new Promise<void>((resolve) => sock.close(() => resolve())),
  };
}
