// The http pipe's request framer against the hostile corpus, in process: each case whole, split in two at
// every byte and fed byte by byte gives the same verdict and the same forwarded bytes, and whatever is
// forwarded carries exactly the agent's client identity.
import assert from "node:assert/strict";
import { test } from "node:test";
import { HttpFramingError, RequestFramer } from "../../src/agent/pipe.js";
import { HOSTILE_CORPUS } from "./hostile-corpus.js";

const CLIENT = "100.64.0.9";

interface Outcome {
  out: string;
  error?: string;
}

function run(pieces: Buffer[]): Outcome {
  const framer = new RequestFramer(CLIENT);
  const out: Buffer[] = [];
  try {
    for (const piece of pieces) out.push(...framer.push(piece));
  } catch (err) {
    assert.ok(err instanceof HttpFramingError, `not a framing error: ${(err as Error).stack}`);
    return { out: Buffer.concat(out).toString("latin1"), error: `${err.status}` };
  }
  return { out: Buffer.concat(out).toString("latin1") };
}

const IDENTITY_LINE =
  /^(x-forwarded-[a-z-]*|forwarded|x-real-ip|true-client-ip|x-client-ip|x-cluster-client-ip|connection|upgrade|http2-settings):.*$/gim;

for (const c of HOSTILE_CORPUS) {
  test(`framer, ${c.verdict}: ${c.name}`, () => {
    const wire = Buffer.from(c.wire, "latin1");
    const whole = run([wire]);
    if (c.verdict === "reject") assert.ok(whole.error, `accepted: ${JSON.stringify(whole.out)}`);
    else assert.equal(whole.error, undefined, `refused (${whole.error})`);

    // What a framer forwards before refusing depends on where the input was cut (a head forwarded in an
    // earlier push stays forwarded), so refusals are compared by status and as prefixes of the byte-wise run.
    const bytewise = run([...wire].map((b) => Buffer.from([b])));
    const same = (other: Outcome, what: string) => {
      if (c.verdict === "pass") assert.deepEqual(other, whole, what);
      else {
        assert.equal(other.error, whole.error, what);
        assert.ok(bytewise.out.startsWith(other.out), `${what}: forwarded ${JSON.stringify(other.out)}`);
      }
    };
    same(bytewise, "byte by byte");
    for (let i = 1; i < wire.length; i++) same(run([wire.subarray(0, i), wire.subarray(i)]), `split at ${i}`);

    // Forwarded heads: identity and hop-by-hop lines are the agent's own, one X-Forwarded-For per request.
    const forwarded = bytewise.out;
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
