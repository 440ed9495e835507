import { createHash, timingSafeEqual } from "node:crypto";
import type { FastifyReply, FastifyRequest } from "fastify";

const digest = (s: string) => createHash("sha256").update(s).digest();

/**
 * Bearer check for the hook context only (Metacontroller ≥ 4.16 `webhook.authorization`).
 * Metacontroller sends `TrimSpace(type) + " " + TrimSpace(secret value)` (pkg/hooks/auth.go
 * ResolveAuthorization), so a Secret made with `--from-file` or `echo` (ending in a newline) is
 * sent trimmed: both sides are trimmed here, and the scheme is compared case-insensitively
 * (RFC 9110 §11.1). The credentials are hashed first so the comparison is constant-time whatever
 * the lengths.
 */
export function bearerAuth(token: string) {
  const expected = digest(token.trim());
  return async (req: FastifyRequest, reply: FastifyReply) => {
    const header = req.headers.authorization;
    const value = typeof header === "string" ? header.trim() : "";
    const space = value.search(/\s/);
    const scheme = space > 0 ? value.slice(0, space) : value;
    const credential = space > 0 ? value.slice(space + 1).trim() : "";
    // Always hash and compare, so a wrong scheme costs the same time as a wrong token.
    const tokenOk = timingSafeEqual(digest(credential), expected);
    if (!(scheme.toLowerCase() === "bearer" && credential !== "" && tokenOk)) {
      reply.header("WWW-Authenticate", 'Bearer realm="tailnet-operator"');
      await reply.code(401).send({ error: "unauthorized: a valid bearer token is required" });
    }
  };
}
