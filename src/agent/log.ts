// A minimal structured logger for the agent: one JSON object per line on stdout. Callers pass names and
// causes as fields; nothing on the agent's paths carries credentials, and TLS keys are never logged.

export type LogFields = Record<string, string | number | boolean | undefined>;

export interface AgentLogger {
  debug(msg: string, fields?: LogFields): void;
  info(msg: string, fields?: LogFields): void;
  warn(msg: string, fields?: LogFields): void;
  error(msg: string, fields?: LogFields): void;
}

const levels = { debug: 10, info: 20, warn: 30, error: 40 } as const;
export type LogLevel = keyof typeof levels;

export function jsonLogger(
  level: LogLevel = "info",
  write: (line: string) => void = (line) => process.stdout.write(line),
): AgentLogger {
  const at =
    (lvl: LogLevel) =>
    (msg: string, fields?: LogFields): void => {
      if (levels[lvl] < levels[level]) return;
      write(`${JSON.stringify({ level: lvl, time: new Date().toISOString(), msg, ...fields })}\n`);
    };
  return { debug: at("debug"), info: at("info"), warn: at("warn"), error: at("error") };
}

export const silentLogger: AgentLogger = { debug() {}, info() {}, warn() {}, error() {} };
