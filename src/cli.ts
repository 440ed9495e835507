/**
 * One image, one CLI: `serve` (hook server), `agent` (data plane), `render` (offline preview),
 * `headscale snapshot` (read-only export for render), `records` (the DNS records sidecar next to
 * Headscale). Every subcommand answers `--help` (exit 0, nothing started) and `--version`; an
 * unknown flag is exit 2 with the usage; a missing or invalid file is one line on stderr (exit 2
 * for render/snapshot input, exit 1 for a service's config).
 */
import { type Command, InputError, packageVersion, parseCommand, UsageError, usageHint } from "./args.js";
import { ConfigError, checkHookAuth, loadConfig } from "./config.js";

const ENV = `environment:
  PORT                 listen port (default 8080)
  OPERATOR_NAMESPACE   namespace of the operator's own children (default tailnet-system)
  HOOK_TOKEN           bearer token Metacontroller must send on /hooks/* (at least 16 characters);
                       required unless ALLOW_UNAUTHENTICATED_HOOKS=true
  ALLOW_UNAUTHENTICATED_HOOKS
                       true: serve /hooks/* without a token (logged as a warning at start)
  HOOK_BODY_BUDGET_BYTES
                       bytes of hook bodies held at once (default: a sixth of the container's memory)
  HOOK_MAX_IN_FLIGHT   hooks answered at once (default 64); the rest get 429
  LOG_LEVEL            info (default), debug (one line per sync: duration and Headscale calls), warn, error, silent`;

export const SERVE: Command = {
  name: "serve",
  usage: `usage: tailnet-operator serve [--config <file>] [--allow-unauthenticated-hooks]
           [--body-budget <bytes>] [--max-in-flight <n>] [--cluster-name <name>]

Runs the Metacontroller hook server: POST /hooks/<kind>/{customize,sync,finalize}, plus /healthz,
/readyz and /metrics, on one port.

options:
  --config <file>   operator config (YAML); every field has a default, so it is optional
  --allow-unauthenticated-hooks
                    serve /hooks/* without HOOK_TOKEN: any pod that reaches the port can call them
  --body-budget <bytes>
                    bytes of hook bodies held at once (overrides HOOK_BODY_BUDGET_BYTES)
  --max-in-flight <n>
                    hooks answered at once (overrides HOOK_MAX_IN_FLIGHT)
  --cluster-name <name>
                    this cluster's name among those sharing one Headscale (a DNS label; overrides
                    TAILNET_CLUSTER_NAME and the config's clusterName; default "default")
  -h, --help        print this help and exit
  --version         print the version and exit

${ENV}
`,
  options: {
    config: { type: "string" },
    "allow-unauthenticated-hooks": { type: "boolean" },
    "body-budget": { type: "string" },
    "max-in-flight": { type: "string" },
    "cluster-name": { type: "string" },
  },
};

export const AGENT: Command = {
  name: "agent",
  usage: `usage: tailnet-operator agent [--config <file>]

Runs the data-plane agent of a TailnetEgress or TailnetIngress (the operator renders its config
into a ConfigMap): the forwarders, and /metrics, /status and /healthz on 9080.

options:
  --config <file>   agent config (JSON, default /etc/tailnet-agent/config.json)
  -h, --help        print this help and exit
  --version         print the version and exit

environment:
  LOG_LEVEL         info (default), debug, warn, error
`,
  options: { config: { type: "string" } },
};

const USAGE = `usage: tailnet-operator <command> [options]

commands:
  serve  [--config <file>]     run the Metacontroller hook server (PORT, default 8080)
  agent  [--config <file>]     run the data-plane agent (egress/ingress)
  render -f <file|dir>... [--headscale snapshot.json] [--agents status.json]
         [--summary | --output yaml|json] [--policy-only] [--now RFC3339]
                              print the children, status and policy the operator would produce
  headscale snapshot --url <url> --api-key-file <file> [--ca-file <file>]
                              read-only snapshot of a live Headscale for render --headscale
  records --config <file>     next to Headscale: every cluster's DNS records into its
                              dns.extra_records_path

Run \`tailnet-operator <command> --help\` for a command's options; --version prints the version.
`;

async function serve(args: string[]): Promise<void> {
  const parsed = parseCommand(SERVE, args);
  if (parsed.kind === "help") return void process.stdout.write(SERVE.usage);
  if (parsed.kind === "version") return void process.stdout.write(`${packageVersion()}\n`);
  const v = parsed.values;
  // flags win over the environment, which wins over the file
  const env = { ...process.env };
  if (v["body-budget"] !== undefined) env.HOOK_BODY_BUDGET_BYTES = v["body-budget"] as string;
  if (v["max-in-flight"] !== undefined) env.HOOK_MAX_IN_FLIGHT = v["max-in-flight"] as string;
  if (v["cluster-name"] !== undefined) env.TAILNET_CLUSTER_NAME = v["cluster-name"] as string;
  const config = loadConfig(v.config as string | undefined, env);
  const allowOpen = v["allow-unauthenticated-hooks"] === true || env.ALLOW_UNAUTHENTICATED_HOOKS === "true";
  checkHookAuth(config, allowOpen);
  const { buildServer } = await import("./server/app.js");
  const { hookLimits } = await import("./server/limits.js");
  const limits = hookLimits(config);
  const app = buildServer(config, { limits });
  if (!config.hookToken) {
    app.log.warn(
      "UNAUTHENTICATED HOOKS: no HOOK_TOKEN, so any pod that reaches this port can call /hooks/* (allowed by --allow-unauthenticated-hooks / ALLOW_UNAUTHENTICATED_HOOKS); set HOOK_TOKEN and webhook.authorization for anything but local development",
    );
  }
  app.log.info(
    {
      memoryBytes: limits.memory.bytes,
      memorySource: limits.memory.source,
      bodyBudgetBytes: limits.bodyBudgetBytes,
      maxInFlight: limits.maxInFlight,
      tailnetBodyLimitBytes: limits.tailnetBodyLimitBytes,
      bodyLimitBytes: limits.bodyLimitBytes,
    },
    "hook limits",
  );
  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    app.log.info({ signal }, "shutting down: draining in-flight hooks");
    await app.close(); // stops accepting, waits for in-flight requests, runs onClose hooks
    process.exit(0);
  };
  process.on("SIGTERM", () => void stop("SIGTERM"));
  process.on("SIGINT", () => void stop("SIGINT"));
  await app.listen({ port: config.port, host: "::" });
}

async function agent(args: string[]): Promise<void> {
  const parsed = parseCommand(AGENT, args);
  if (parsed.kind === "help") return void process.stdout.write(AGENT.usage);
  if (parsed.kind === "version") return void process.stdout.write(`${packageVersion()}\n`);
  const { runAgent } = await import("./agent/main.js");
  return await runAgent(args);
}

export async function main(argv: string[]): Promise<void> {
  const [command, ...args] = argv;
  try {
    switch (command) {
      case "serve":
        return await serve(args);
      case "agent":
        return await agent(args);
      case "render": {
        const { runRender } = await import("./render/main.js");
        process.exitCode = await runRender(args);
        return;
      }
      case "records": {
        const { RECORDS, runRecords } = await import("./records/main.js");
        const parsed = parseCommand(RECORDS, args);
        if (parsed.kind === "help") return void process.stdout.write(RECORDS.usage);
        if (parsed.kind === "version") return void process.stdout.write(`${packageVersion()}\n`);
        if (typeof parsed.values.config !== "string") throw new UsageError("records needs --config <file>", "records");
        return await runRecords(parsed.values.config);
      }
      case "headscale": {
        const { runHeadscale } = await import("./render/fetch-snapshot.js");
        process.exitCode = await runHeadscale(args);
        return;
      }
      case "--version":
      case "version":
        process.stdout.write(`${packageVersion()}\n`);
        return;
      case undefined:
      case "help":
      case "--help":
      case "-h":
        process.stdout.write(USAGE);
        return;
      default:
        process.stderr.write(`unknown command "${command}"\n${USAGE}`);
        process.exitCode = 2;
    }
  } catch (e) {
    if (e instanceof UsageError) {
      process.stderr.write(`${e.message}\n${usageHint(e.command)}\n`);
      process.exitCode = 2;
      return;
    }
    if (e instanceof InputError) {
      process.stderr.write(`${e.message}\n`);
      process.exitCode = 2;
      return;
    }
    if (e instanceof ConfigError || (e instanceof Error && e.name === "RecordsConfigError")) {
      process.stderr.write(`${e.message}\n`);
      process.exitCode = 1; // nothing was started, so the process ends here
      return;
    }
    throw e;
  }
}

// `tsx src/cli.ts serve` (npm start) runs this file directly; bin/tailnet-operator.js imports main().
if (process.argv[1] && import.meta.url === (await import("node:url")).pathToFileURL(process.argv[1]).href) {
  await main(process.argv.slice(2));
}
