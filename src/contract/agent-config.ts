// The agent config: a JSON file the operator renders into a ConfigMap and mounts at AGENT_CONFIG_PATH.
// It is validated once at start (ajv, defaults filled in); an invalid file is a one-line error naming the
// field, and the process exits non-zero instead of running half-configured. The agent reads the file
// (src/agent/config-file.ts); this module only checks its text, so the operator imports no file reading.
import { isIP } from "node:net";
import type { ErrorObject } from "ajv";
import { newAjv } from "../api/ajv.js";
import { ConfigError } from "../config.js";
import { type AgentPath, agentPathsSchema, backendProtocolSchema, pathsProblem } from "./paths.js";

export type { AgentPath } from "./paths.js";

import { POD_IP_ENV, POD_IP_HOST, POD_LOCAL_HOST } from "./ports.js";

export type AgentRole = "egress" | "ingress";
export type ExposeMode = "tcp" | "http" | "kube-api";

export interface AgentTargetPort {
  /** Port on the tailnet target. */
  port: number;
  /** Local listen port (0 = ephemeral, tests only). */
  listenPort: number;
}

export interface AgentTarget {
  /** Target name (DNS-1035 label): the only label value metrics carry. */
  name: string;
  /** Tailnet node name, MagicDNS FQDN or IP address. */
  host: string;
  ports: AgentTargetPort[];
}

/**
 * http mode: how the agent speaks to a backend. http1 (default): HTTP/1.1, also for clients that came over
 * HTTP/2 (translated); h2c: HTTP/2 without TLS (prior knowledge), which gRPC servers speak.
 */
export type BackendProtocol = "http1" | "h2c";

export interface AgentBackend {
  host: string;
  port: number;
  protocol?: BackendProtocol;
}

export interface AgentExpose {
  /** Expose name (DNS-1035 label): the only label value metrics carry. */
  name: string;
  /** Local port tailscaled's serve config forwards to (0 = ephemeral, tests only). */
  listenPort: number;
  mode: ExposeMode;
  /** The cluster Service (or any host) the expose forwards to. */
  backend: AgentBackend;
  /**
   * http mode: per-request routes by path (src/agent/routes.ts, Kubernetes Ingress semantics); a request no
   * path matches goes to `backend`.
   */
  paths?: AgentPath[];
  /** http mode, with paths: where a request no path matches goes — `backend` (default) or a 404 (a Gateway's host). */
  unmatched?: "backend" | "notFound";
  /** http mode (required) and kube-api mode (optional: HTTPS instead of plain HTTP): the mounted kubernetes.io/tls Secret files. */
  tls?: { certFile: string; keyFile: string };
  /**
   * kube-api mode: the backend is the API server; requests go there with this ServiceAccount token and
   * impersonate the tailnet peer (kube-api.ts). The files are the pod's projected token and cluster CA.
   */
  kubeApi?: { caFile: string; tokenFile: string };
  /** http mode: the DNS name and aliases this expose answers for (SNI). */
  names: string[];
  /**
   * http mode: every connection starts with a PROXY protocol v1/v2 header (tailscaled serve `ProxyProtocol`
   * on the TCPForward), whose source address becomes the client address in X-Forwarded-For. Exposes sharing
   * a listen port agree on it.
   */
  proxyProtocol?: boolean;
}

export interface AgentLimits {
  /** Open client connections across all listeners; more are closed at once and counted. */
  maxConnections: number;
  /** A connection with no bytes in either direction for this long is closed. */
  idleTimeoutSeconds: number;
  /** Upper bound for dialling a target or backend (and for a probe). */
  dialTimeoutSeconds: number;
  /** Period of the reachability probes and of the LocalAPI status poll. */
  probeIntervalSeconds: number;
  /** http mode: time allowed for the TLS handshake plus the request headers (slowloris bound). */
  headerTimeoutSeconds: number;
  /** http and kube-api mode: how often the mounted certificate files are re-read. */
  tlsReloadIntervalSeconds: number;
}

export interface AgentConfig {
  role: AgentRole;
  /** Port of /metrics, /status, /healthz (AGENT_METRICS_PORT; 0 = ephemeral in tests). */
  metricsPort: number;
  /** Address of the metrics server; default `pod-ip` (the POD_IP variable): never where netstack forwards (ports.ts). */
  metricsHost: string;
  /** Address of the data listeners; default `pod-ip` for egress (Services), 127.0.0.2 for ingress (serve's only). */
  listenHost: string;
  /** Each listen port is also bound here only to reset and count what arrives (refuse.ts); absent: not. */
  refuseHost?: string;
  tailscale: {
    /** tailscaled's SOCKS5 proxy, "host:port"; absent = dial targets directly (tests). */
    socksAddr?: string;
    /** tailscaled's LocalAPI socket; absent = no netmap (self and peers stay empty). */
    localApiSocket?: string;
  };
  limits: AgentLimits;
  targets: AgentTarget[];
  exposes: AgentExpose[];
}

/** What callers may pass (the operator's tests through startAgent): everything defaulted may be left out. */
export interface AgentConfigInput {
  role: AgentRole;
  metricsPort: number;
  metricsHost?: string;
  listenHost?: string;
  refuseHost?: string;
  tailscale?: AgentConfig["tailscale"];
  limits?: Partial<AgentLimits>;
  targets?: AgentTarget[];
  exposes?: (Omit<AgentExpose, "names"> & { names?: string[] })[];
}

/**
 * A config that cannot run. `field` is the dotted path of the offending field ("limits.maxConnections").
 * It is a ConfigError, so the CLI prints its one-line message and exits 1 as for the operator's config.
 */
export class AgentConfigError extends ConfigError {
  readonly field: string;
  constructor(field: string, problem: string, source = "agent config") {
    super(`${source}: ${field ? `${field} ` : ""}${problem}`);
    this.name = "AgentConfigError";
    this.field = field;
  }
}

export const DEFAULT_LIMITS: Readonly<AgentLimits> = {
  maxConnections: 4096,
  idleTimeoutSeconds: 300,
  dialTimeoutSeconds: 5,
  probeIntervalSeconds: 15,
  headerTimeoutSeconds: 10,
  tlsReloadIntervalSeconds: 5,
};

const dns1035 = "^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$";
const port = { type: "integer", minimum: 1, maximum: 65535 };
const listenPort = { type: "integer", minimum: 0, maximum: 65535 };
const seconds = { type: "number", exclusiveMinimum: 0, maximum: 86400 };

const schema = {
  type: "object",
  additionalProperties: false,
  required: ["role", "metricsPort"],
  properties: {
    role: { type: "string", enum: ["egress", "ingress"] },
    metricsPort: listenPort,
    metricsHost: { type: "string", minLength: 1, default: POD_IP_HOST },
    listenHost: { type: "string", minLength: 1 },
    refuseHost: { type: "string", minLength: 1 },
    tailscale: {
      type: "object",
      additionalProperties: false,
      default: {},
      properties: {
        socksAddr: { type: "string", pattern: "^(\\[[0-9a-fA-F:.]+\\]|[^:\\s]+):[0-9]{1,5}$" },
        localApiSocket: { type: "string", minLength: 1 },
      },
    },
    limits: {
      type: "object",
      additionalProperties: false,
      default: {},
      properties: {
        maxConnections: { type: "integer", minimum: 1, maximum: 1_000_000, default: DEFAULT_LIMITS.maxConnections },
        idleTimeoutSeconds: { ...seconds, default: DEFAULT_LIMITS.idleTimeoutSeconds },
        dialTimeoutSeconds: { ...seconds, default: DEFAULT_LIMITS.dialTimeoutSeconds },
        probeIntervalSeconds: { ...seconds, default: DEFAULT_LIMITS.probeIntervalSeconds },
        headerTimeoutSeconds: { ...seconds, default: DEFAULT_LIMITS.headerTimeoutSeconds },
        tlsReloadIntervalSeconds: { ...seconds, default: DEFAULT_LIMITS.tlsReloadIntervalSeconds },
      },
    },
    targets: {
      type: "array",
      default: [],
      maxItems: 64,
      items: {
        type: "object",
        additionalProperties: false,
        required: ["name", "host", "ports"],
        properties: {
          name: { type: "string", pattern: dns1035 },
          host: { type: "string", minLength: 1, maxLength: 253 },
          ports: {
            type: "array",
            minItems: 1,
            items: {
              type: "object",
              additionalProperties: false,
              required: ["port", "listenPort"],
              properties: { port, listenPort },
            },
          },
        },
      },
    },
    exposes: {
      type: "array",
      default: [],
      maxItems: 32,
      items: {
        type: "object",
        additionalProperties: false,
        required: ["name", "listenPort", "mode", "backend"],
        properties: {
          name: { type: "string", pattern: dns1035 },
          listenPort,
          mode: { type: "string", enum: ["tcp", "http", "kube-api"] },
          backend: {
            type: "object",
            additionalProperties: false,
            required: ["host", "port"],
            properties: { host: { type: "string", minLength: 1 }, port, protocol: backendProtocolSchema },
          },
          paths: agentPathsSchema(port),
          unmatched: { type: "string", enum: ["backend", "notFound"] },
          tls: {
            type: "object",
            additionalProperties: false,
            required: ["certFile", "keyFile"],
            properties: { certFile: { type: "string", minLength: 1 }, keyFile: { type: "string", minLength: 1 } },
          },
          kubeApi: {
            type: "object",
            additionalProperties: false,
            required: ["caFile", "tokenFile"],
            properties: { caFile: { type: "string", minLength: 1 }, tokenFile: { type: "string", minLength: 1 } },
          },
          names: { type: "array", default: [], items: { type: "string", minLength: 1, maxLength: 253 } },
          proxyProtocol: { type: "boolean" },
        },
      },
    },
  },
} as const;

const ajv = newAjv({ allErrors: false, useDefaults: true, strict: true });
const validateSchema = ajv.compile(schema);

/** "/targets/0/ports/1/port" → "targets[0].ports[1].port". */
function fieldPath(instancePath: string, child?: string): string {
  const parts = instancePath.split("/").filter((part) => part !== "");
  if (child !== undefined) parts.push(child);
  let out = "";
  for (const part of parts) {
    if (/^[0-9]+$/.test(part)) out += `[${part}]`;
    else out += out === "" ? part : `.${part}`;
  }
  return out;
}

function schemaError(error: ErrorObject, source: string): AgentConfigError {
  const params = error.params as Record<string, unknown>;
  switch (error.keyword) {
    case "required":
      return new AgentConfigError(fieldPath(error.instancePath, String(params.missingProperty)), "is required", source);
    case "additionalProperties":
      return new AgentConfigError(
        fieldPath(error.instancePath, String(params.additionalProperty)),
        "is not a known field",
        source,
      );
    case "enum":
      return new AgentConfigError(
        fieldPath(error.instancePath),
        `must be one of ${(params.allowedValues as unknown[]).join(", ")}`,
        source,
      );
    case "pattern":
      return new AgentConfigError(fieldPath(error.instancePath), `does not match ${String(params.pattern)}`, source);
    default:
      return new AgentConfigError(fieldPath(error.instancePath) || "(root)", error.message ?? "is invalid", source);
  }
}

/** Checks the schema cannot express; the first problem found is thrown. */
function checkSemantics(config: AgentConfig, source: string): void {
  const fail = (field: string, problem: string): never => {
    throw new AgentConfigError(field, problem, source);
  };
  if (config.role === "egress") {
    if (config.targets.length === 0) fail("targets", "must list at least one target for role egress");
    if (config.exposes.length > 0) fail("exposes", "must be empty for role egress");
  } else {
    // no expose: every one of the TailnetIngress is refused (a backend another namespace did not give it,
    // src/kinds/composite/ingress/permitted.ts); the agent keeps its node and serves nothing
    if (config.targets.length > 0) fail("targets", "must be empty for role ingress");
  }
  const seenTargets = new Map<string, number>();
  config.targets.forEach((target, i) => {
    const previous = seenTargets.get(target.name);
    if (previous !== undefined) fail(`targets[${i}].name`, `duplicates targets[${previous}].name "${target.name}"`);
    seenTargets.set(target.name, i);
  });
  // Listen ports: one owner each, except http exposes, which may share a TLS listener (SNI picks the expose).
  const portOwners = new Map<number, { field: string; http: boolean }>();
  const claim = (listen: number, field: string, http: boolean) => {
    if (listen === 0) return; // ephemeral (tests): never collides
    const owner = portOwners.get(listen);
    if (owner && !(owner.http && http)) fail(field, `${listen} is already used by ${owner.field}`);
    if (!owner) portOwners.set(listen, { field, http });
  };
  if (config.refuseHost !== undefined && config.refuseHost === config.listenHost)
    fail("refuseHost", `must differ from listenHost ${config.listenHost}`);
  if (listenPortsClash(config.metricsPort, config)) fail("metricsPort", `${config.metricsPort} is also a listen port`);
  config.targets.forEach((target, t) => {
    target.ports.forEach((p, i) => {
      claim(p.listenPort, `targets[${t}].ports[${i}].listenPort`, false);
    });
  });
  const seenExposes = new Map<string, number>();
  const namesByListener = new Map<number, Map<string, number>>();
  config.exposes.forEach((expose, i) => {
    const previous = seenExposes.get(expose.name);
    if (previous !== undefined) fail(`exposes[${i}].name`, `duplicates exposes[${previous}].name "${expose.name}"`);
    seenExposes.set(expose.name, i);
    claim(expose.listenPort, `exposes[${i}].listenPort`, expose.mode === "http");
    if ((expose.mode === "kube-api") !== (expose.kubeApi !== undefined))
      fail(`exposes[${i}].kubeApi`, expose.kubeApi ? "is only for mode kube-api" : "is required in kube-api mode");
    if (expose.mode === "kube-api" && !config.tailscale.localApiSocket)
      fail("tailscale.localApiSocket", "is required by a kube-api expose (WhoIs)");
    if (expose.paths && expose.mode !== "http") fail(`exposes[${i}].paths`, "is only for mode http");
    if (expose.backend.protocol && expose.mode !== "http")
      fail(`exposes[${i}].backend.protocol`, "is only for mode http (tcp passes bytes; kube-api is HTTP/1.1)");
    if (expose.unmatched && !expose.paths) fail(`exposes[${i}].unmatched`, "is only for an expose with paths");
    if (expose.mode !== "http") return;
    const bad = pathsProblem(expose.paths ?? []);
    if (bad) fail(`exposes[${i}].paths[${bad.index}]`, bad.problem);
    if (!expose.tls) fail(`exposes[${i}].tls`, "is required in http mode");
    if (expose.names.length === 0) fail(`exposes[${i}].names`, "must list the DNS name in http mode");
    const listenerKey = expose.listenPort === 0 ? -1 - i : expose.listenPort;
    const names = namesByListener.get(listenerKey) ?? new Map<string, number>();
    namesByListener.set(listenerKey, names);
    const first = names.size > 0 ? [...names.values()][0] : undefined;
    if (first !== undefined && !!config.exposes[first].proxyProtocol !== !!expose.proxyProtocol)
      fail(`exposes[${i}].proxyProtocol`, `must match exposes[${first}] (same listen port)`);
    expose.names.forEach((name, n) => {
      const key = name.toLowerCase().replace(/\.$/, "");
      const owner = names.get(key);
      if (owner !== undefined && owner !== i)
        fail(`exposes[${i}].names[${n}]`, `"${name}" is already served by exposes[${owner}]`);
      names.set(key, i);
    });
  });
}

/**
 * Replaces `pod-ip` in metricsHost/listenHost with the POD_IP environment variable (downward API
 * status.podIP). A config that asks for it without one cannot run: binding 0.0.0.0 instead would hand every
 * port to tailscaled's netstack forward (ports.ts POD_LOCAL_HOST).
 */
export function resolvePodIp(config: AgentConfig, env: NodeJS.ProcessEnv = process.env): AgentConfig {
  const podIp = env[POD_IP_ENV]?.trim() ?? "";
  const resolve = (field: "metricsHost" | "listenHost"): string => {
    if (config[field] !== POD_IP_HOST) return config[field];
    if (isIP(podIp) === 0)
      throw new AgentConfigError(
        field,
        `is ${POD_IP_HOST} but ${POD_IP_ENV} is ${podIp ? `not an IP address (${JSON.stringify(podIp)})` : "not set"} (downward API status.podIP)`,
      );
    return podIp;
  };
  return { ...config, metricsHost: resolve("metricsHost"), listenHost: resolve("listenHost") };
}

function listenPortsClash(metricsPort: number, config: AgentConfig): boolean {
  if (metricsPort === 0) return false;
  return (
    config.targets.some((t) => t.ports.some((p) => p.listenPort === metricsPort)) ||
    config.exposes.some((e) => e.listenPort === metricsPort)
  );
}

/**
 * Validates a parsed config (or a test's object), fills in defaults and returns a fresh copy.
 * Throws AgentConfigError naming the first invalid field.
 */
export function validateAgentConfig(input: unknown, source = "agent config"): AgentConfig {
  if (typeof input !== "object" || input === null || Array.isArray(input)) {
    throw new AgentConfigError("", "must be a JSON object", source);
  }
  const copy: Record<string, unknown> = structuredClone(input as Record<string, unknown>);
  if (!validateSchema(copy)) {
    const [first] = validateSchema.errors ?? [];
    throw first ? schemaError(first, source) : new AgentConfigError("", "is invalid", source);
  }
  if (copy.listenHost === undefined) copy.listenHost = copy.role === "ingress" ? POD_LOCAL_HOST : POD_IP_HOST;
  const config = copy as unknown as AgentConfig;
  checkSemantics(config, source);
  return config;
}

/** Parses and validates the JSON text of a config file. */
export function parseAgentConfig(text: string, source = "agent config"): AgentConfig {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (err) {
    throw new AgentConfigError("", `is not valid JSON (${(err as Error).message})`, source);
  }
  return validateAgentConfig(parsed, source);
}
