// The http pipe's response side: which answer belongs to which request, so that only a 101 to an upgrade
// request turns the connection raw — through HEAD, 1xx, 204/304, chunked and length bodies, split anywhere.
import assert from "node:assert/strict";
import { test } from "node:test";
import { ResponseFramingError, ResponseTracker } from "../../src/agent/response.js";

function feed(tracker: ResponseTracker, wire: string, every = 0): void {
  const bytes = Buffer.from(wire, "latin1");
  if (every === 0) tracker.push(bytes);
  else for (let i = 0; i < bytes.length; i += every) tracker.push(bytes.subarray(i, i + every));
}

const ok = (body: string) => `HTTP/1.1 200 OK\r\ncontent-length: ${body.length}\r\n\r\n${body}`;
// A body that looks like a 101: only framing tells it apart from a real one.
const fake101 = "HTTP/1.1 101 Switching Protocols\r\n\r\n";

test("responses: the upgrade's own 101 switches; one hidden in earlier bodies, HEAD or 1xx does not", () => {
  for (const every of [0, 1, 3, 7]) {
    const tracker = new ResponseTracker();
    const seen: boolean[] = [];
    tracker.onUpgrade = (switched) => seen.push(switched);
    tracker.sent(false, false); // GET, length body containing a fake 101
    tracker.sent(true, false); // HEAD: content-length but no body
    tracker.sent(false, false); // GET, chunked body with a fake 101 and a trailer
    tracker.sent(false, false); // 204
    tracker.sent(false, true); // the upgrade
    feed(
      tracker,
      ok(fake101) +
        "HTTP/1.1 200 OK\r\ncontent-length: 50\r\n\r\n" +
        "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n" +
        `${fake101.length.toString(16)};x=1\r\n${fake101}\r\n0\r\nx-t: 1\r\n\r\n` +
        "HTTP/1.1 204 No Content\r\n\r\n" +
        "HTTP/1.1 101 Switching Protocols\r\nupgrade: websocket\r\n\r\nHTTP/1.1 999 raw bytes",
      every,
    );
    assert.deepEqual(seen, [true], `every ${every}`);
    assert.equal(tracker.idle, false, "raw");
  }
});

test("responses: a declined upgrade is reported once its final answer is read; idle after all answers", () => {
  const tracker = new ResponseTracker();
  const seen: boolean[] = [];
  tracker.onUpgrade = (switched) => seen.push(switched);
  assert.equal(tracker.idle, true);
  tracker.sent(false, true);
  assert.equal(tracker.idle, false);
  feed(tracker, "HTTP/1.1 426 Upgrade Required\r\ncontent-length: 2\r\n\r\nn");
  assert.deepEqual(seen, [false]);
  assert.equal(tracker.idle, false, "body not read yet");
  feed(tracker, "o");
  assert.equal(tracker.idle, true);
});

test("responses: a 101 nobody asked for, a bad status line or conflicting lengths are errors", () => {
  const unasked = new ResponseTracker();
  unasked.sent(false, false);
  assert.throws(() => feed(unasked, fake101), ResponseFramingError);
  const garbage = new ResponseTracker();
  garbage.sent(false, false);
  assert.throws(() => feed(garbage, "SSH-2.0-OpenSSH\r\n\r\n"), ResponseFramingError);
  const lengths = new ResponseTracker();
  lengths.sent(false, false);
  assert.throws(
    () => feed(lengths, "HTTP/1.1 200 OK\r\ncontent-length: 1\r\ncontent-length: 2\r\n\r\n"),
    ResponseFramingError,
  );
});

test("responses: a body without length runs to the end of the connection", () => {
  const tracker = new ResponseTracker();
  const seen: boolean[] = [];
  tracker.onUpgrade = (switched) => seen.push(switched);
  tracker.sent(false, false);
  tracker.sent(false, true);
  feed(tracker, `HTTP/1.0 200 OK\r\n\r\n${fake101}`);
  assert.deepEqual(seen, [], "the 101 is body");
});
