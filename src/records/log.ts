// The records sidecar's logger: one JSON object per line on stdout. Fields are names, counts and error
// messages the sidecar wrote itself (never a request header, a kubeconfig or a token; sources.ts).
// Its own, not the agent's: the sidecar is control-plane code and imports nothing from src/agent/.

export type LogFields = Record<string, string | number | boolean | undefined>;

export interface RecordsLogger {
  info(msg: string, fields?: LogFields): void;
  warn(msg: string, fields?: LogFields): void;
  error(msg: string, fields?: LogFields): void;
}

const LEVELS = { debug: 10, info: 20, warn: 30, error: 40 } as const;
export type LogLevel = keyof typeof LEVELS;
export const isLogLevel = (s: string): s is LogLevel => Object.hasOwn(LEVELS, s);

export function jsonLogger(
  level: LogLevel = "info",
  write: (line: string) => void = (line) => process.stdout.write(line),
): RecordsLogger {
  const at = (lvl: LogLevel) => (msg: string, fields?: LogFields) => {
    if (LEVELS[lvl] >= LEVELS[level])
      write(`${JSON.stringify({ level: lvl, time: new Date().toISOString(), msg, ...fields })}\n`);
  };
  return { info: at("info"), warn: at("warn"), error: at("error") };
}
