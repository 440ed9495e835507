import { createHash, timingSafeEqual } from "node:crypto";
import type { FastifyReply, FastifyRequest } from "fastify";

const digest = (s: string) => createHash("sha256").update(s).digest();

/**
 * Bearer check for the hook context only (Metacontroller ≥ 4.16 `webhook.authorization`).
 * Both sides are hashed first so the comparison is constant-time whatever the lengths.
 */
export function bearerAuth(token: string) {
  const expected = digest(`Bearer ${token}`);
  return async (req: FastifyRequest, reply: FastifyReply) => {
    const header = req.headers.authorization;
    if (typeof header !== "string" || !timingSafeEqual(digest(header), expected)) {
      reply.header("WWW-Authenticate", 'Bearer realm="tailnet-operator"');
      await reply.code(401).send({ error: "unauthorized: a valid bearer token is required" });
    }
  };
}
