/** Message pieces every Tailnet stage uses (pure, no imports of its own stages). */
import type { HeadscaleError } from "../../../headscale/errors.js";

export const SUPPORTED = "supported: Headscale 0.29.x";
export const NO_CALL = "no API key: no Headscale call is made (see ApiKeyValid)";

/** Headscale's multi-line messages ("multiple errors:\n\t…") on one line. */
export const oneLine = (text: string) => text.replace(/\s*\n\s*/g, " ").trim();

/**
 * A 401 that the client explained by `GET /health` failing: Headscale 0.29 cannot look any key up while its
 * database is down, so every `/api/v1` call is a 401 (see http.ts). Says nothing about the key.
 */
export const isDatabaseDown401 = (e: HeadscaleError) =>
  e.kind === "http" && e.status === 401 && e.classification === "databaseDown";
