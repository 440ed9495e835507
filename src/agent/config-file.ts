// The agent's config file (AGENT_CONFIG_PATH, or --config): read here, checked by the contract
// (src/contract/agent-config.ts), so an unreadable file fails like an invalid one, naming the path.
import { readFile } from "node:fs/promises";
import { type AgentConfig, AgentConfigError, parseAgentConfig } from "../contract/agent-config.js";

/** Reads, parses and validates the config file at `path`. */
export async function loadAgentConfig(path: string): Promise<AgentConfig> {
  let text: string;
  try {
    text = await readFile(path, "utf8");
  } catch (err) {
    throw new AgentConfigError(
      "",
      `cannot be read (${(err as NodeJS.ErrnoException).code ?? "error"})`,
      `agent config ${path}`,
    );
  }
  return parseAgentConfig(text, `agent config ${path}`);
}
