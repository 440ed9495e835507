/**
 * The baseline of bench/hooks.ts, run as its own process like the hook server: a fastify server that
 * parses a JSON body and answers it back (same body limit as the hooks). PORT and BODY_LIMIT from the env.
 */
import Fastify from "fastify";

const app = Fastify({ bodyLimit: Number(process.env.BODY_LIMIT ?? 8 * 1024 * 1024) });
app.post("/echo", async (req) => req.body);
app.get("/healthz", async () => "ok");
await app.listen({ port: Number(process.env.PORT ?? 0), host: "127.0.0.1" });
