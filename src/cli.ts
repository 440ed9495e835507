/**
 * One image, one CLI: `serve` (hook server), `agent` (data plane), `render` (offline preview).
 */
import { ConfigError, loadConfig } from "./config.js";
import { buildServer } from "./server/app.js";

const USAGE = `usage: tailnet-operator <command> [options]

commands:
  serve  [--config <file>]     run the Metacontroller hook server (PORT, default 8080)
  agent  --config <file>       run the data-plane agent (egress/ingress)
  render -f <file|dir>... [--headscale snapshot.json] [--agents status.json] [--output yaml|json]
                              [--policy-only] [--now RFC3339]
                              print the children, status and policy the operator would produce
  headscale snapshot --url <url> --api-key-file <file> [--ca-file <file>]
                              read-only snapshot of a live Headscale for render --headscale
`;

function flag(args: string[], name: string): string | undefined {
  const i = args.indexOf(name);
  if (i >= 0) return args[i + 1];
  const eq = args.find((a) => a.startsWith(`${name}=`));
  return eq?.slice(name.length + 1);
}

async function serve(args: string[]): Promise<void> {
  const config = loadConfig(flag(args, "--config"));
  const app = buildServer(config);
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

export async function main(argv: string[]): Promise<void> {
  const [command, ...args] = argv;
  try {
    switch (command) {
      case "serve":
        return await serve(args);
      case "agent": {
        const { runAgent } = await import("./agent/main.js");
        return await runAgent(args);
      }
      case "render": {
        const { runRender } = await import("./render/main.js");
        process.exitCode = await runRender(args);
        return;
      }
      case "headscale": {
        const { runHeadscale } = await import("./render/fetch-snapshot.js");
        process.exitCode = await runHeadscale(args);
        return;
      }
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
    if (e instanceof ConfigError) {
      process.stderr.write(`${e.message}\n`);
      process.exit(1);
    }
    throw e;
  }
}

// `tsx src/cli.ts serve` (npm start) runs this file directly; bin/tailnet-operator.js imports main().
if (process.argv[1] && import.meta.url === (await import("node:url")).pathToFileURL(process.argv[1]).href) {
  await main(process.argv.slice(2));
}
