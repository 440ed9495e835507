/**
 * The 4 MiB cap on one gRPC message that the real Headscale's REST API inherits. 0.29.3 serves /api/v1 through
 * grpc-gateway over a local gRPC connection (juanfont/headscale hscontrol/app.go: `grpc.NewServer()` on the unix
 * socket and `grpc.Dial` to it, neither with a size option), so grpc-go's defaults apply both ways:
 * defaultServerMaxReceiveMessageSize and defaultClientMaxReceiveMessageSize, 4 MiB (grpc/grpc-go server.go,
 * clientconn.go at v1.81.1). A request message past it is refused before the handler runs; an answer past it is
 * refused by the gateway after the handler ran (a PUT's policy is then stored and live). Either way grpc-go's
 * ResourceExhausted (rpc_util.go recvMsg) reaches the client as grpc-gateway's 429 (runtime/errors.go
 * HTTPStatusFromCode). Sizes are protobuf wire sizes: headscale/v1/policy.proto's messages hold the policy in
 * field 1 and updated_at (google.protobuf.Timestamp) in field 2. test/real/policy-size.test.ts holds these
 * figures to the real server.
 */
import type { FakeResponse } from "./routes.js";

/** grpc-go's default receive cap, on both sides of Headscale's gateway connection. */
export const GRPC_MAX_MESSAGE = 4 * 1024 * 1024;

function varintSize(n: number): number {
  let size = 1;
  for (let rest = n; rest >= 128; rest = Math.floor(rest / 128)) size++;
  return size;
}

/** A length-delimited field (tag < 16: one byte); proto3 leaves out an empty one. */
function lengthDelimited(bytes: number): number {
  return bytes === 0 ? 0 : 1 + varintSize(bytes) + bytes;
}

/** A string field's wire size: its UTF-8 bytes, not its JSON-escaped length. */
function stringFieldSize(value: unknown): number {
  return typeof value === "string" ? lengthDelimited(Buffer.byteLength(value, "utf8")) : 0;
}

/** A Timestamp field from its protojson text (seconds = 1, nanos = 2, zeros left out); 0 for null. */
function timestampFieldSize(value: unknown): number {
  if (typeof value !== "string") return 0;
  const ms = Date.parse(value);
  if (Number.isNaN(ms)) return 0;
  const seconds = Math.floor(ms / 1000);
  const nanos = (ms - seconds * 1000) * 1_000_000;
  const inner = (seconds > 0 ? 1 + varintSize(seconds) : 0) + (nanos > 0 ? 1 + varintSize(nanos) : 0);
  return 1 + varintSize(inner) + inner;
}

/** SetPolicyRequest, CheckPolicyRequest, SetPolicyResponse and GetPolicyResponse: `policy` and `updatedAt`. */
export function policyMessageSize(message: Record<string, unknown>): number {
  return stringFieldSize(message.policy) + timestampFieldSize(message.updatedAt);
}

/** grpc-go's refusal, as grpc-gateway answers it; undefined when the message fits. */
export function refusedForSize(size: number): FakeResponse | undefined {
  if (size <= GRPC_MAX_MESSAGE) return undefined;
  // routes.ts rpcError's shape (not imported: routes.ts imports this file)
  const message = `grpc: received message larger than max (${size} vs. ${GRPC_MAX_MESSAGE})`;
  return { status: 429, body: { code: 8, message, details: [] } };
}

/** How a test policy reaches its size: spaces, newlines (2 bytes each in the JSON body) or a comment of "é" (2 UTF-8 bytes). */
export type Padding = "space" | "newline" | "utf8";

/**
 * A valid policy (one rule: every source to `dst`) of exactly `bytes` UTF-8 bytes, padded after its JSON, for
 * tests of the cap (test/real/policy-size.test.ts, message-size.test.ts).
 */
export function policyOfSize(bytes: number, dst = "*:*", padding: Padding = "space"): string {
  const json = JSON.stringify({ acls: [{ action: "accept", src: ["*"], dst: [dst] }] });
  const room = bytes - Buffer.byteLength(json);
  if (room < 3) throw new Error(`policyOfSize: ${bytes} bytes is smaller than the rule itself`);
  if (padding === "space") return json + " ".repeat(room);
  if (padding === "newline") return json + "\n".repeat(room);
  return `${json}\n//${"é".repeat(Math.floor((room - 3) / 2))}${" ".repeat((room - 3) % 2)}`;
}
