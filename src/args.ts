/**
 * Command-line parsing shared by every subcommand (`serve`, `agent`, `render`, `headscale snapshot`):
 * `--help`/`-h` prints the usage and exits 0 before anything starts, `--version` prints the
 * package.json version, an unknown flag or a flag without its value is a UsageError (exit 2).
 */
import { readFileSync } from "node:fs";
import { type ParseArgsConfig, parseArgs } from "node:util";

/** Bad command line: the CLI prints the message and where the usage is, and exits 2. */
export class UsageError extends Error {
  constructor(
    message: string,
    /** The subcommand, e.g. "render", for the `--help` hint. */
    readonly command: string,
  ) {
    super(message);
  }
}

/** Input the command cannot use (a missing file, an invalid snapshot): one line, exit 2. */
export class InputError extends Error {}

/** The line printed under a usage error (the full usage is one `--help` away, not repeated). */
export const usageHint = (command: string): string => `run \`tailnet-operator ${command} --help\` for its usage`;

export type Options = NonNullable<ParseArgsConfig["options"]>;

export interface Command {
  /** e.g. "render", "headscale snapshot" */
  name: string;
  usage: string;
  options: Options;
}

export type Parsed =
  | { kind: "help" }
  | { kind: "version" }
  | { kind: "run"; values: Record<string, string | boolean | string[] | undefined> };

/** The version in package.json (src/ and the image's dist/ both sit beside it). */
export function packageVersion(): string {
  const pkg = JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8")) as { version: string };
  return pkg.version;
}

function describe(e: { code?: string; message: string }): string {
  const quoted = /'([^']+)'/.exec(e.message)?.[1] ?? "";
  switch (e.code) {
    case "ERR_PARSE_ARGS_UNKNOWN_OPTION":
      return `unknown flag ${quoted}`;
    case "ERR_PARSE_ARGS_UNEXPECTED_POSITIONAL":
      return `unexpected argument ${quoted}`;
    case "ERR_PARSE_ARGS_INVALID_OPTION_VALUE":
      return /argument missing/.test(e.message) ? `${quoted.split(" ")[0]} needs a value` : e.message;
    default:
      return e.message;
  }
}

export function parseCommand(cmd: Command, args: readonly string[]): Parsed {
  let parsed: ReturnType<typeof parseArgs>;
  try {
    parsed = parseArgs({
      args: [...args],
      options: { ...cmd.options, help: { type: "boolean", short: "h" }, version: { type: "boolean" } },
      strict: true,
      allowPositionals: false,
    });
  } catch (e) {
    // --help wins over a bad flag next to it: the user asked how to call the command.
    if (args.includes("--help") || args.includes("-h")) return { kind: "help" };
    throw new UsageError(`${cmd.name}: ${describe(e as { code?: string; message: string })}`, cmd.name);
  }
  if (parsed.values.help) return { kind: "help" };
  if (parsed.values.version) return { kind: "version" };
  return { kind: "run", values: parsed.values as Record<string, string | boolean | string[] | undefined> };
}
