/**
 * Operator configuration: `serve --config <file>` (YAML), validated at start; environment
 * overrides PORT, OPERATOR_NAMESPACE, TAILNET_CLUSTER_NAME, HOOK_TOKEN, LOG_LEVEL, HOOK_BODY_BUDGET_BYTES, HOOK_MAX_IN_FLIGHT. Every field has a default so
 * `npm start` runs with no file.
 */
import { readFileSync } from "node:fs";
import { parse as parseYaml } from "yaml";
import { newAjv } from "./api/ajv.js";
import realVersions from "./real-versions.json" with { type: "json" };

export interface NetworkPolicyPeer {
  namespaceSelector?: Record<string, unknown>;
  podSelector?: Record<string, unknown>;
  ipBlock?: { cidr: string; except?: string[] };
}

export interface OperatorConfig {
  port: number;
  logLevel: string;
  hookToken?: string;
  operatorNamespace: string;
  /**
   * This installation's name among the clusters that share one Headscale (docs/OPERATIONS.md "Several
   * clusters on one Headscale"): it names the cluster's section of the written policy. A DNS label;
   * default "default". Two installations that keep the default on one Headscale are told apart by their
   * Tailnet's uid: the second is refused (SharedPolicy=False/ClusterNameTaken) instead of overwriting the first.
   */
  clusterName: string;
  images: { agent: string; tailscale: string; coredns: string };
  /** Settings of every tailscale container the operator runs (agents and gateways). */
  tailscale: {
    /**
     * TS_NO_LOGS_NO_SUPPORT=true: tailscaled uploads no logs to Tailscale's log service
     * (log.tailscale.com). On by default: a Headscale tailnet keeps its data in-house.
     */
    noLogsNoSupport: boolean;
  };
  headscale: {
    timeoutSeconds: number;
    cacheTTLSeconds: number;
    /**
     * How long the parts that change rarely or only through the view (users, API keys, /health, the pre-auth key
     * list) are reused; never shorter than cacheTTLSeconds (src/headscale/view.ts SLOW_PARTS).
     */
    slowPartTTLSeconds: number;
  };
  hooks: {
    bodyLimitBytes: number;
    /** The Tailnet's hooks carry every workload object of the cluster: their own, larger limit. */
    tailnetBodyLimitBytes: number;
    maxInFlight: number;
    /**
     * Bytes of request bodies held at once across all hooks; unset: a sixth of the container's
     * memory (src/server/limits.ts). HOOK_BODY_BUDGET_BYTES / --body-budget override it.
     */
    bodyBudgetBytes?: number;
    /** A request's headers must arrive within this (slowloris). */
    headersTimeoutMs: number;
    /** A request's body must arrive within this from its headers, else 408. */
    bodyTimeoutMs: number;
    retryAfterSeconds: number;
    resyncSeconds: number;
  };
  agents: { scrapeTimeoutMs: number };
  monitoring: {
    podMonitor: { scrapeFrom: NetworkPolicyPeer[] };
    rules: { apiKeyExpiryWarningSeconds: number; authKeyExpiryWarningSeconds: number };
  };
  networkPolicy: { isolateOperator: boolean; metricsPeers: NetworkPolicyPeer[] };
  services: {
    /**
     * LoadBalancer Services without `spec.loadBalancerClass` are ours too (docs/services.md): the
     * cloud's load-balancer controller also acts on them, so off by default.
     */
    defaultLoadBalancerClass: boolean;
  };
}

export const DEFAULT_CONFIG: OperatorConfig = {
  port: 8080,
  logLevel: "info",
  operatorNamespace: "tailnet-system",
  clusterName: "default",
  // pinned to the versions the real-world tests build and run (src/real-versions.json, scripts/real-deps.sh)
  images: {
    agent: "ghcr.io/tailnet-operator/tailnet-operator:0.1.0",
    tailscale: `tailscale/tailscale:${realVersions.tailscale}`,
    coredns: `coredns/coredns:${realVersions.coredns}`,
  },
  tailscale: { noLogsNoSupport: true },
  headscale: { timeoutSeconds: 5, cacheTTLSeconds: 10, slowPartTTLSeconds: 60 },
  // 64 targets with their children and related objects are ~600 KiB: 8 MiB for every kind but
  // the Tailnet. A Tailnet sync carries every workload object of the cluster as the API server
  // holds it (managedFields, kubectl's last-applied annotation, status: 3-4 KiB each): 128 MiB
  // takes well over 30,000 workloads (bench/tailnet-scale.ts measures 20,000 at ~74 MiB).
  hooks: {
    bodyLimitBytes: 8 * 1024 * 1024,
    tailnetBodyLimitBytes: 128 * 1024 * 1024,
    maxInFlight: 64,
    headersTimeoutMs: 10_000,
    bodyTimeoutMs: 20_000,
    retryAfterSeconds: 2,
    resyncSeconds: 60,
  },
  agents: { scrapeTimeoutMs: 2000 },
  monitoring: {
    podMonitor: { scrapeFrom: [] },
    rules: { apiKeyExpiryWarningSeconds: 604800, authKeyExpiryWarningSeconds: 86400 },
  },
  networkPolicy: { isolateOperator: false, metricsPeers: [] },
  services: { defaultLoadBalancerClass: false },
};

const peer = {
  type: "object",
  additionalProperties: false,
  properties: {
    namespaceSelector: { type: "object" },
    podSelector: { type: "object" },
    ipBlock: {
      type: "object",
      required: ["cidr"],
      additionalProperties: false,
      properties: { cidr: { type: "string" }, except: { type: "array", items: { type: "string" } } },
    },
  },
} as const;
/** A cluster name is a DNS label (RFC 1123), as a namespace name is. */
export const DNS_LABEL = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;
const posInt = { type: "integer", minimum: 1 } as const;

const configSchema = {
  type: "object",
  additionalProperties: false,
  properties: {
    port: { type: "integer", minimum: 0, maximum: 65535 },
    logLevel: { enum: ["fatal", "error", "warn", "info", "debug", "trace", "silent"] },
    hookToken: { type: "string", minLength: 16 },
    operatorNamespace: { type: "string", pattern: "^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$" },
    clusterName: { type: "string", pattern: DNS_LABEL.source },
    images: {
      type: "object",
      additionalProperties: false,
      properties: {
        agent: { type: "string", minLength: 1 },
        tailscale: { type: "string", minLength: 1 },
        coredns: { type: "string", minLength: 1 },
      },
    },
    tailscale: {
      type: "object",
      additionalProperties: false,
      properties: { noLogsNoSupport: { type: "boolean" } },
    },
    headscale: {
      type: "object",
      additionalProperties: false,
      properties: {
        timeoutSeconds: posInt,
        cacheTTLSeconds: { type: "integer", minimum: 0 },
        slowPartTTLSeconds: { type: "integer", minimum: 0 },
      },
    },
    hooks: {
      type: "object",
      additionalProperties: false,
      properties: {
        bodyLimitBytes: { type: "integer", minimum: 65536 },
        tailnetBodyLimitBytes: { type: "integer", minimum: 65536 },
        maxInFlight: { type: "integer", minimum: 1, maximum: 4096 },
        bodyBudgetBytes: { type: "integer", minimum: 1048576 },
        headersTimeoutMs: { type: "integer", minimum: 100 },
        bodyTimeoutMs: { type: "integer", minimum: 100 },
        retryAfterSeconds: posInt,
        resyncSeconds: posInt,
      },
    },
    agents: { type: "object", additionalProperties: false, properties: { scrapeTimeoutMs: posInt } },
    monitoring: {
      type: "object",
      additionalProperties: false,
      properties: {
        podMonitor: {
          type: "object",
          additionalProperties: true,
          properties: { scrapeFrom: { type: "array", items: peer } },
        },
        rules: {
          type: "object",
          additionalProperties: true,
          properties: { apiKeyExpiryWarningSeconds: posInt, authKeyExpiryWarningSeconds: posInt },
        },
      },
    },
    networkPolicy: {
      type: "object",
      additionalProperties: false,
      properties: { isolateOperator: { type: "boolean" }, metricsPeers: { type: "array", items: peer } },
    },
    services: {
      type: "object",
      additionalProperties: false,
      properties: { defaultLoadBalancerClass: { type: "boolean" } },
    },
  },
} as const;

const validate = newAjv({ allErrors: false, strict: false }).compile(configSchema);

export class ConfigError extends Error {}

/** The chart enforces the same minimum (values.schema.json hookToken.value). */
export const MIN_HOOK_TOKEN_LENGTH = 16;

type Plain = Record<string, unknown>;
function deepMerge<T>(base: T, over: unknown): T {
  if (!over || typeof over !== "object" || Array.isArray(over)) return (over ?? base) as T;
  const out: Plain = { ...(base as Plain) };
  for (const [k, v] of Object.entries(over as Plain)) {
    const b = (base as Plain)[k];
    out[k] = b && typeof b === "object" && !Array.isArray(b) ? deepMerge(b, v) : v;
  }
  return out as T;
}

/** Validates a parsed config object; throws ConfigError naming the field. */
export function configFrom(raw: unknown, env: NodeJS.ProcessEnv = {}): OperatorConfig {
  const input = raw ?? {};
  if (!validate(input)) {
    const e = validate.errors?.[0];
    const field = `${e?.instancePath.replace(/^\//, "").replaceAll("/", ".") || "(root)"}${
      e?.keyword === "additionalProperties" ? `.${(e.params as { additionalProperty: string }).additionalProperty}` : ""
    }`;
    throw new ConfigError(`invalid operator config: ${field}: ${e?.message ?? "invalid"}`);
  }
  const config = deepMerge(DEFAULT_CONFIG, input);
  if (env.PORT !== undefined) {
    const port = Number(env.PORT);
    if (!Number.isInteger(port) || port < 0 || port > 65535) throw new ConfigError("invalid PORT: must be 0-65535");
    config.port = port;
  }
  if (env.OPERATOR_NAMESPACE) config.operatorNamespace = env.OPERATOR_NAMESPACE;
  if (env.TAILNET_CLUSTER_NAME !== undefined) {
    if (!DNS_LABEL.test(env.TAILNET_CLUSTER_NAME)) {
      throw new ConfigError(
        `invalid TAILNET_CLUSTER_NAME: ${JSON.stringify(env.TAILNET_CLUSTER_NAME)} is not a DNS label (lower-case letters, digits and '-', at most 63, starting and ending with a letter or digit)`,
      );
    }
    config.clusterName = env.TAILNET_CLUSTER_NAME;
  }
  if (env.HOOK_TOKEN) config.hookToken = env.HOOK_TOKEN;
  if (config.hookToken !== undefined) {
    // Metacontroller trims the Secret value it sends (pkg/hooks/auth.go), so a token read from a
    // Secret made with `--from-file` or `echo` (trailing newline) is compared trimmed.
    config.hookToken = config.hookToken.trim();
    if (config.hookToken.length < MIN_HOOK_TOKEN_LENGTH) {
      const source = env.HOOK_TOKEN ? "invalid HOOK_TOKEN" : "invalid operator config: hookToken";
      throw new ConfigError(
        `${source}: must be at least ${MIN_HOOK_TOKEN_LENGTH} characters (without surrounding whitespace), got ${config.hookToken.length}`,
      );
    }
  }
  if (env.LOG_LEVEL) config.logLevel = env.LOG_LEVEL;
  if (env.HOOK_BODY_BUDGET_BYTES)
    config.hooks.bodyBudgetBytes = envInt("HOOK_BODY_BUDGET_BYTES", env.HOOK_BODY_BUDGET_BYTES, 1048576);
  if (env.HOOK_MAX_IN_FLIGHT) config.hooks.maxInFlight = envInt("HOOK_MAX_IN_FLIGHT", env.HOOK_MAX_IN_FLIGHT, 1, 4096);
  const budget = config.hooks.bodyBudgetBytes;
  if (budget !== undefined && budget < config.hooks.maxInFlight * 128 * 1024) {
    throw new ConfigError(
      `invalid hook limits: bodyBudgetBytes ${budget} is below maxInFlight ${config.hooks.maxInFlight} × 131072 (the reserve every request has)`,
    );
  }
  return config;
}

function envInt(name: string, value: string, min: number, max = Number.MAX_SAFE_INTEGER): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < min || n > max)
    throw new ConfigError(`invalid ${name}: must be an integer ${min}-${max}`);
  return n;
}

/**
 * `serve` without a hook token answers any pod that reaches it: allowed only when asked for
 * (ALLOW_UNAUTHENTICATED_HOOKS=true or --allow-unauthenticated-hooks), and then logged loudly.
 */
export function checkHookAuth(config: OperatorConfig, allowUnauthenticated: boolean): void {
  if (config.hookToken || allowUnauthenticated) return;
  throw new ConfigError(
    "no hook token: set HOOK_TOKEN (the Secret Metacontroller's webhook.authorization names), or pass --allow-unauthenticated-hooks (ALLOW_UNAUTHENTICATED_HOOKS=true) to serve /hooks/* to anyone who can reach the port",
  );
}

/** Reads and validates the config file (YAML); no file means the defaults. */
export function loadConfig(path: string | undefined, env: NodeJS.ProcessEnv = process.env): OperatorConfig {
  if (!path) return configFrom({}, env);
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (e) {
    throw new ConfigError(`cannot read operator config ${path}: ${(e as Error).message}`);
  }
  let raw: unknown;
  try {
    raw = parseYaml(text);
  } catch (e) {
    throw new ConfigError(`operator config ${path} is not valid YAML: ${(e as Error).message.split("\n")[0]}`);
  }
  return configFrom(raw, env);
}
