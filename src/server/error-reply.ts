/**
 * The app's error, refusal and not-found answers: one line `{ error }` each, the status code the
 * client earned (4xx, or 503 when the hooks are overloaded), 500 for everything else.
 */
import type { FastifyError, FastifyInstance } from "fastify";

export interface ErrorReplyOptions {
  bodyLimitBytes: number;
  retryAfterSeconds: number;
}

// Body parser and limit errors are the client's: say what is wrong in one line.
const BODY_ERROR_MESSAGES: ReadonlyMap<string, (o: ErrorReplyOptions) => string> = new Map([
  ["FST_ERR_CTP_BODY_TOO_LARGE", (o: ErrorReplyOptions) => `body: larger than the limit of ${o.bodyLimitBytes} bytes`],
  ["FST_ERR_CTP_INVALID_MEDIA_TYPE", () => "body: Content-Type must be application/json"],
  ["FST_ERR_CTP_EMPTY_JSON_BODY", () => "body: empty; expected a JSON object"],
  ["FST_ERR_CTP_INVALID_JSON_BODY", () => "body: invalid JSON"],
]);

// A body cut short is not read further: the connection closes after the answer.
const CLOSING_CODES: ReadonlySet<number> = new Set([408, 413, 415]);

const isOverloaded = (err: FastifyError) => err.statusCode === 503 && err.code === "TAILNET_OVERLOADED";

/** The status code of an error: the client's 4xx or the overload 503 as thrown, anything else 500. */
export function errorStatusCode(err: FastifyError): number {
  const clientError = err.statusCode !== undefined && err.statusCode >= 400 && err.statusCode < 500;
  return isOverloaded(err) || clientError ? (err.statusCode as number) : 500;
}

/** The one-line message answered for an error (its status code from errorStatusCode). */
export function errorMessage(err: FastifyError, code: number, options: ErrorReplyOptions): string {
  const known = BODY_ERROR_MESSAGES.get(err.code);
  if (known) return known(options);
  if (code === 400 && err instanceof SyntaxError) return "body: invalid JSON";
  return code < 500 || isOverloaded(err) ? err.message.split("\n")[0] : "internal error";
}

/** The error handler, the refusal of bodies outside /hooks, and the not-found answer. */
export function registerErrorReplies(app: FastifyInstance, options: ErrorReplyOptions): void {
  app.setErrorHandler((err: FastifyError, req, reply) => {
    const code = errorStatusCode(err);
    const overloaded = isOverloaded(err);
    if (CLOSING_CODES.has(code) || overloaded) reply.header("Connection", "close");
    if (overloaded) reply.header("Retry-After", String(options.retryAfterSeconds));
    if (code === 500) req.log.error({ err }, "unhandled error");
    void reply.code(code).send({ error: errorMessage(err, code, options) });
  });
  // Outside /hooks no route takes a body: refuse one before reading it (fastify's default
  // parsers would buffer up to bodyLimit per request, outside the slots and the byte budget).
  app.removeAllContentTypeParsers();
  app.addContentTypeParser("*", (req, _payload, done) => {
    const err = Object.assign(new Error(`body: ${req.method} ${req.url.split("?")[0].slice(0, 100)} takes no body`), {
      statusCode: 415,
    });
    done(err, undefined);
  });
  app.setNotFoundHandler((req, reply) => {
    void reply.code(404).send({ error: `no route ${req.method} ${req.url.split("?")[0].slice(0, 100)}` });
  });
}
