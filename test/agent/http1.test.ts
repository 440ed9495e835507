// The http pipe's request framer against the hostile corpus, in process: each case whole, split in two at
// every byte and fed byte by byte gives the same verdict and the same forwarded bytes, and whatever is
// forwarded carries exactly the agent's client identity.
import assert from "node:assert/strict";
import { test } from "node:test";
import { RequestFramer } from "../../src/agent/framer.js";
import { HOSTILE_CORPUS } from "./hostile-corpus.js";

const CLIENT = "100.64.0.9";

interface Outcome {
  out: string;
  error?: string;
}

function run(pieces: Buffer[]): Outcome {
  const framer = new RequestFramer(CLIENT);
  const out: Buffer[] = [];
  for (const piece of pieces) out.push(...framer.push(piece));
  const forwarded = Buffer.concat(out).toString("latin1");
  return framer.failed ? { out: forwarded, error: `${framer.failed.status}` } : { out: forwarded };
}

const IDENTITY_LINE =
  /^(x-forwarded-[a-z-]*|forwarded|x-real-ip|true-client-ip|x-client-ip|x-cluster-client-ip|connection|upgrade|http2-settings):.*$/gim;

for (const c of HOSTILE_CORPUS) {
  test(`framer, ${c.verdict}: ${c.name}`, () => {
    const wire = Buffer.from(c.wire, "latin1");
    const whole = run([wire]);
    if (c.verdict === "reject") assert.ok(whole.error, `accepted: ${JSON.stringify(whole.out)}`);
    else assert.equal(whole.error, undefined, `refused (${whole.error})`);

    // Everything before the first bad byte is forwarded, nothing after it, wherever the input was cut.
    for (let i = 1; i < wire.length; i++)
      assert.deepEqual(run([wire.subarray(0, i), wire.subarray(i)]), whole, `split at ${i}`);
    assert.deepEqual(run([...wire].map((b) => Buffer.from([b]))), whole, "byte by byte");

    // Forwarded heads: identity and hop-by-hop lines are the agent's own, one X-Forwarded-For per request.
    const forwarded = whole.out;
    const heads = forwarded.match(/^[A-Za-z]+ \S+ HTTP\/1\.[01]\r\n/gm) ?? [];
    const forwardedFor = forwarded.match(/^x-forwarded-for:.*$/gim) ?? [];
    assert.equal(forwardedFor.length, heads.length, forwarded);
    for (const line of forwarded.match(IDENTITY_LINE) ?? [])
      assert.match(
        line,
        /^(x-forwarded-for: 100\.64\.0\.9|x-forwarded-proto: https|x-forwarded-host: app\.example|connection: (close|keep-alive|upgrade)(, (close|keep-alive|upgrade))*|upgrade: websocket)\r?$/,
        line,
      );
    assert.doesNotMatch(forwarded, /GET \/admin/);
  });
}

test("framer: an upgrade request holds what follows until the answer; declined, the held bytes are framed", () => {
  const ask = "GET /ws HTTP/1.1\r\nhost: a\r\nconnection: upgrade\r\nupgrade: websocket\r\n\r\n";
  const next = "GET /b HTTP/1.1\r\nhost: a\r\nx-forwarded-for: 6.6.6.6\r\n\r\n";
  const declined = new RequestFramer(CLIENT);
  const requests: [boolean, boolean][] = [];
  declined.onRequest = (head, upgrade) => requests.push([head, upgrade]);
  const first = Buffer.concat(declined.push(Buffer.from(ask + next))).toString("latin1");
  assert.match(first, /^GET \/ws HTTP\/1\.1\r\n.*upgrade: websocket\r\nconnection: upgrade\r\n/s);
  assert.doesNotMatch(first, /GET \/b/);
  assert.equal(declined.awaiting, true);
  assert.equal(declined.held, next.length);
  const after = Buffer.concat(declined.answered(false)).toString("latin1");
  assert.equal(
    after,
    `GET /b HTTP/1.1\r\nhost: a\r\nx-forwarded-for: ${CLIENT}\r\nx-forwarded-proto: https\r\nx-forwarded-host: a\r\n\r\n`,
  );
  assert.deepEqual(requests, [
    [false, true],
    [false, false],
  ]);

  const accepted = new RequestFramer(CLIENT);
  accepted.push(Buffer.from(ask + next));
  assert.equal(Buffer.concat(accepted.answered(true)).toString("latin1"), next, "raw after 101");
  assert.equal(Buffer.concat(accepted.push(Buffer.from("\0raw"))).toString("latin1"), "\0raw");
});
