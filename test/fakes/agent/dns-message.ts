// DNS answers as tailscaled's LocalAPI dns-query returns them (the raw message, base64 in `Bytes`), built
// from Headscale's records-file entries: for the fake LocalAPI and the agent's parser tests.

/** One entry of Headscale's dns.extra_records_path file. */
export interface ExtraRecord {
  name: string;
  type: string;
  value: string;
}

function encodeName(name: string): Buffer {
  const labels = name.replace(/\.$/, "").split(".").filter(Boolean);
  return Buffer.concat([
    ...labels.map((l) => Buffer.concat([Buffer.from([l.length]), Buffer.from(l)])),
    Buffer.from([0]),
  ]);
}

const u16 = (n: number) => {
  const b = Buffer.alloc(2);
  b.writeUInt16BE(n);
  return b;
};

/**
 * The answer to an A query for `name`: NOERROR with one A record per matching entry (names compared as DNS
 * does, without case or the trailing dot), else `rcodeIfNone` (3, NXDOMAIN). Answers point back to the
 * question's name (compression), as real resolvers write them.
 */
export function dnsAnswer(name: string, records: readonly ExtraRecord[], rcodeIfNone = 3): Buffer {
  const key = (n: string) => n.toLowerCase().replace(/\.$/, "");
  const ips = records.filter((r) => r.type === "A" && key(r.name) === key(name)).map((r) => r.value);
  const rcode = ips.length > 0 ? 0 : rcodeIfNone;
  const header = Buffer.concat([u16(1), u16(0x8180 | rcode), u16(1), u16(ips.length), u16(0), u16(0)]);
  const question = Buffer.concat([encodeName(name), u16(1), u16(1)]);
  const answers = ips.map((ip) =>
    Buffer.concat([
      u16(0xc00c), // pointer to the question's name at offset 12
      u16(1),
      u16(1),
      Buffer.from([0, 0, 2, 88]), // TTL 600
      u16(4),
      Buffer.from(ip.split(".").map(Number)),
    ]),
  );
  return Buffer.concat([header, question, ...answers]);
}
