/**
 * `tailnet-operator render -f <file|dir>... [--headscale snapshot.json] [--agents status.json]
 * [--summary | --output yaml|json] [--policy-only] [--now RFC3339]`: checks every object as
 * `kubectl apply --validate=strict` would (./validate.ts), then plays customize → sync → finalize through
 * the real hook server and the same Metacontroller loop the tests use, against a Headscale snapshot
 * held in memory, and prints per object the children it would return, its status, and for each
 * Tailnet the rendered policy with a diff against the live one. Nothing is written anywhere.
 * Exit 0: every object would be Ready; 1: some would not; 2: unusable input (all problems listed).
 */
import { readFileSync } from "node:fs";
import { Document, isPair, isScalar, stringify, visit } from "yaml";
import { API_VERSION } from "../api/schemas.js";
import { type Command, InputError, packageVersion, parseCommand, UsageError, usageHint } from "../args.js";
import { configFrom } from "../config.js";
import type { AgentStatus } from "../contract/agent-status.js";
import {
  EMPTY_SNAPSHOT,
  type HeadscaleSnapshot,
  SnapshotHeadscale,
  snapshotFrom,
} from "../emulator/headscale/in-memory.js";
import { MetacontrollerLoop } from "../emulator/metacontroller/loop.js";
import type { Obj } from "../emulator/metacontroller/types.js";
import { HeadscaleViews } from "../headscale/view.js";
import type { K8sObject } from "../k8s/objects.js";
import type { AgentScraper } from "../pipeline/types.js";
import { buildServer } from "../server/app.js";
import { memoryEventRecorder } from "../server/events.js";
import { RenderInputError, readManifests } from "./input.js";
import { type RenderedObject, renderedObjects } from "./objects.js";
import { writeReplicaStates } from "./replica-state.js";
import { formatProblem, validateDocs } from "./validate.js";

export interface RenderResult {
  objects: RenderedObject[];
  headscaleWrites: string[];
  errors: string[];
}

export interface RenderInput {
  objects: K8sObject[];
  snapshot?: HeadscaleSnapshot;
  agents?: Record<string, AgentStatus>;
  now: Date;
}

const PLACEHOLDER_KEY = "render-placeholder-api-key";

/** A preview asks no resolver: names the --agents status does not answer are reported as unasked. */
function withNames(status: AgentStatus, names: readonly string[] | undefined): AgentStatus {
  if (!names?.length || status.names) return status;
  const error = "not asked in a preview (give the agent's names answers in --agents)";
  return { ...status, names: names.map((name) => ({ name, addresses: [], error })) };
}

function scraperFrom(agents: Record<string, AgentStatus> | undefined): AgentScraper {
  return {
    async scrape(pods, names) {
      return pods.map((pod) => {
        const owner = `${pod.metadata.namespace}/${pod.metadata.labels?.["app.kubernetes.io/instance"] ?? ""}`;
        const status = agents?.[owner];
        return status
          ? { ok: true as const, pod: pod.metadata.name, status: withNames(status, names) }
          : { ok: false as const, pod: pod.metadata.name, error: `no agent status for ${owner} in --agents` };
      });
    },
  };
}

/** Tailnets whose API key Secret is not among the inputs get a placeholder, so the preview is connected. */
function withPlaceholders(objects: K8sObject[]): K8sObject[] {
  const out = [...objects];
  for (const t of objects.filter((o) => o.kind === "Tailnet")) {
    const ref = ((t.spec as Record<string, unknown>)?.headscale as Record<string, unknown> | undefined)
      ?.apiKeySecretRef as { namespace?: string; name?: string; key?: string } | undefined;
    if (!ref?.name || !ref.namespace) continue;
    if (out.some((o) => o.kind === "Secret" && o.metadata.name === ref.name && o.metadata.namespace === ref.namespace))
      continue;
    out.push({
      apiVersion: "v1",
      kind: "Secret",
      metadata: { name: ref.name, namespace: ref.namespace },
      data: { [ref.key ?? "apiKey"]: Buffer.from(PLACEHOLDER_KEY).toString("base64") },
    });
  }
  return out;
}

export async function render(input: RenderInput): Promise<RenderResult> {
  const snapshot = input.snapshot ?? EMPTY_SNAPSHOT;
  const hs = new SnapshotHeadscale(snapshot, () => input.now);
  const config = configFrom({ logLevel: "silent" });
  const views = new HeadscaleViews({
    timeoutMs: 5000,
    cacheTTLSeconds: 0,
    now: () => input.now,
    retries: 0,
    dispatcherFactory: ({ url }) => hs.dispatcher(new URL(url).origin),
  });
  const events = memoryEventRecorder();
  const app = buildServer(config, {
    logger: false,
    deps: { views, now: () => input.now, scraper: scraperFrom(input.agents), events },
  });
  await app.ready();
  // Gateway API objects in the input mean the Gateway API is installed: with it the gateway-api component, whose
  // ReferenceGrants let a TailnetIngress name another namespace's Service (ingress/permitted.ts)
  const gatewayApi = input.objects.some((o) => String(o.apiVersion ?? "").startsWith("gateway.networking.k8s.io/"));
  const loop = new MetacontrollerLoop({
    app,
    agentPods: input.agents ? { metricsPort: () => 9080 } : undefined,
    ...(gatewayApi ? { components: ["gateway-api" as const] } : {}),
  });
  const errors: string[] = [];
  try {
    for (const o of withPlaceholders(input.objects)) loop.apply(o as Obj);
    try {
      await loop.settle(10);
      // the agents' tailscaled, once their pods run: each replica 0 writes the node it is (replica-state.ts)
      if (writeReplicaStates(loop, hs.state, input.agents)) await loop.settle(10);
    } catch (e) {
      errors.push((e as Error).message);
    }
    errors.push(...new Set(loop.errors));
    const objects = renderedObjects({ loop, events: events.events, liveText: snapshot.policy?.policy });
    return { objects, headscaleWrites: hs.writes, errors };
  } finally {
    await app.close();
    await views.close();
  }
}

function readJson(path: string, what: string): unknown {
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    throw new RenderInputError(
      `${path}: cannot read ${what} (${code === "ENOENT" ? "no such file or directory" : (e as Error).message})`,
    );
  }
  try {
    return JSON.parse(text);
  } catch (e) {
    throw new RenderInputError(`${path}: ${what} is not valid JSON (${(e as Error).message})`);
  }
}

export const RENDER: Command = {
  name: "render",
  usage: `usage: tailnet-operator render -f <file|dir>... [options]

Plays the operator's hooks as Metacontroller would, in process, against a Headscale snapshot held in
memory, and prints per object its status and children, and per Tailnet the rendered policy with a
diff against the live one. Nothing is written anywhere. Before rendering, every object is checked as
\`kubectl apply --validate=strict\` would: unknown kinds, apiVersions and fields, schema violations and
objects defined twice are all reported at once, each as <file>: document <n>: <field>: <problem>.

options:
  -f, --filename <file|dir>   manifests to read (*.yaml, *.yml, *.json; repeatable; directories recursively,
                              skipping snapshot*, agents* and expected* files; - reads standard input;
                              a v1 List, as kubectl get -o yaml writes, is read item by item)
  --headscale <file>          Headscale snapshot (\`tailnet-operator headscale snapshot\`); default: an empty server
  --agents <file>             agent /status per "<namespace>/<name>" (JSON); default: agents not scraped;
                              an ingress's "names" are its node's resolver answers (DNSServed)
  --summary                   one compact entry per object: Ready, conditions as Type=Status/Reason, children
  -o, --output yaml|json      full output format (default yaml)
  --policy-only               only the rendered policy of each Tailnet, with its diff
  --now <RFC3339>             the clock the hooks see (default: now), for stable output
  -h, --help                  print this help and exit
  --version                   print the version and exit

exit status: 0 every object would be Ready; 1 some would not (the conditions say why);
             2 unusable input (the problems are printed on stderr, nothing on stdout)
`,
  options: {
    filename: { type: "string", short: "f", multiple: true },
    headscale: { type: "string" },
    agents: { type: "string" },
    summary: { type: "boolean" },
    output: { type: "string", short: "o" },
    "policy-only": { type: "boolean" },
    now: { type: "string" },
  },
};

type Condition = { type: string; status: string; reason?: string; message?: string };

/** The compact form: what a reviewer reads in a CI log. */
export function summarize(result: RenderResult): Document {
  const objects = result.objects.map((o) => {
    const conditions = ((o.status.conditions ?? []) as Condition[]).map(
      (c) => `${c.type}=${c.status}/${c.reason ?? ""}`,
    );
    const blocking = ((o.status.conditions ?? []) as Condition[]).find((c) =>
      o.kind === "Tailnet" ? c.status !== "True" && c.type !== "SplitDNS" : c.type === "Ready" && c.status !== "True",
    );
    const status = o.status as {
      tag?: string;
      dnsName?: string;
      loadBalancer?: { ingress?: { ip?: string; hostname?: string }[] };
    };
    // What `kubectl get ingress` shows under ADDRESS and `kubectl get svc` under EXTERNAL-IP: each entry's
    // ip or hostname (a LoadBalancer Service lists its addresses, then its name).
    const address = (status.loadBalancer?.ingress ?? [])
      .map((i) => i.ip ?? i.hostname)
      .filter((a): a is string => a !== undefined)
      .join(",");
    const policy = o.policy
      ? {
          hash: o.policy.hash,
          diff: o.policy.diff
            ? `+${o.policy.diff.split("\n").filter((l) => /^\+(?!\+\+ )/.test(l)).length} -${o.policy.diff.split("\n").filter((l) => /^-(?!-- )/.test(l)).length} lines against the live policy`
            : "none (the live policy is the rendered one)",
        }
      : undefined;
    return {
      kind: o.kind,
      ...(o.namespace ? { namespace: o.namespace } : {}),
      name: o.name,
      ready: o.ready,
      ...(!o.ready && blocking
        ? { why: `${blocking.type}=${blocking.status}/${blocking.reason}: ${blocking.message ?? ""}` }
        : {}),
      ...(status.tag ? { tag: status.tag } : {}),
      ...(status.dnsName ? { dnsName: status.dnsName } : {}),
      ...(address ? { address } : {}),
      conditions,
      ...(policy ? { policy } : {}),
      children: o.children.map((c) => `${c.kind} ${c.metadata.name}`).sort(),
      ...(o.written ? { written: o.written } : {}),
      ...(o.kind === "Service" && o.status.loadBalancer ? { loadBalancer: o.status.loadBalancer } : {}),
      ...(o.events?.length ? { events: o.events } : {}),
    };
  });
  const doc = new Document({ objects, headscaleWrites: result.headscaleWrites, errors: result.errors });
  // Lists of short strings print on one line each, as the README shows them.
  visit(doc, {
    Seq(_, node, path) {
      const parent = path[path.length - 1];
      const key = parent && isPair(parent) && isScalar(parent.key) ? parent.key.value : undefined;
      if (key === "conditions" || key === "children") node.flow = true;
    },
  });
  return doc;
}

export async function runRender(
  args: string[],
  out: (s: string) => void = (s) => process.stdout.write(s),
  readStdin: () => string = () => readFileSync(0, "utf8"),
): Promise<number> {
  try {
    const parsed = parseCommand(RENDER, args);
    if (parsed.kind === "help") {
      out(RENDER.usage);
      return 0;
    }
    if (parsed.kind === "version") {
      out(`${packageVersion()}\n`);
      return 0;
    }
    const v = parsed.values;
    const options = renderOptions(v);
    const input = readInput(options.files, v, readStdin);
    const result = await render({ ...input, now: options.now });
    out(formatResult(result, options.output, !!v["policy-only"]));
    return result.errors.length === 0 && result.objects.every((o) => o.ready) ? 0 : 1;
  } catch (e) {
    if (e instanceof UsageError) {
      process.stderr.write(`${e.message}\n${usageHint("render")}\n`);
      return 2;
    }
    if (e instanceof InputError) {
      process.stderr.write(`${e.message}\n`);
      return 2;
    }
    throw e;
  }
}

type Values = Record<string, unknown>;

/** The files, the output format and the clock, checked; a usage error names the option. */
function renderOptions(v: Values): { files: string[]; output: string; now: Date } {
  const files = (v.filename as string[] | undefined) ?? [];
  const output = (v.output as string | undefined) ?? (v.summary ? "summary" : "yaml");
  const nowText = v.now as string | undefined;
  if (!files.length) throw new UsageError("render: give at least one -f <file|dir>", "render");
  if (!["yaml", "json", "summary"].includes(output))
    throw new UsageError(`render: --output must be yaml, json or summary, got ${output}`, "render");
  if (v.summary && v.output) throw new UsageError("render: --summary and --output exclude each other", "render");
  const now = nowText ? new Date(nowText) : new Date();
  if (Number.isNaN(now.getTime())) throw new UsageError(`render: --now: not an RFC 3339 time: ${nowText}`, "render");
  return { files, output, now };
}

/** The manifests (every problem of every file at once), the Headscale snapshot and the agent statuses. */
function readInput(files: string[], v: Values, readStdin: () => string): Omit<RenderInput, "now"> {
  const { docs, problems } = readManifests(files, readStdin);
  problems.push(...validateDocs(docs));
  if (problems.length) {
    const n = new Set(problems.map((p) => p.file)).size;
    throw new RenderInputError(
      `${problems.map(formatProblem).join("\n")}\nrender: ${problems.length} problem${problems.length > 1 ? "s" : ""} in ${n} file${n > 1 ? "s" : ""}; nothing rendered`,
    );
  }
  const snapPath = v.headscale as string | undefined;
  let snapshot: HeadscaleSnapshot | undefined;
  if (snapPath) {
    try {
      snapshot = snapshotFrom(readJson(snapPath, "Headscale snapshot"));
    } catch (e) {
      throw e instanceof RenderInputError ? e : new RenderInputError(`${snapPath}: ${(e as Error).message}`);
    }
  }
  const agentsPath = v.agents as string | undefined;
  const agents = agentsPath ? (readJson(agentsPath, "agent statuses") as Record<string, AgentStatus>) : undefined;
  if (!docs.some((d) => d.object.apiVersion === API_VERSION)) {
    throw new RenderInputError(`render: no ${API_VERSION} objects in ${files.join(", ")}`);
  }
  return { objects: docs.map((d) => d.object), snapshot, agents };
}

/** The result as asked: only the policies, the summary, or everything as YAML or JSON. */
function formatResult(result: RenderResult, output: string, policyOnly: boolean): string {
  if (policyOnly) {
    const payload = result.objects.filter((o) => o.policy).map((o) => ({ tailnet: o.name, ...o.policy }));
    return output === "json" ? `${JSON.stringify(payload, null, 2)}\n` : stringify(payload, { lineWidth: 0 });
  }
  if (output === "summary") return summarize(result).toString({ lineWidth: 0 });
  return output === "json" ? `${JSON.stringify(result, null, 2)}\n` : stringify(result, { lineWidth: 0 });
}
