/**
 * What `render` prints per object once the loop has settled (main.ts): each parent with the
 * children of its last sync, its status and Events (a Tailnet with its rendered policy and the
 * diff against the live one), then the annotated Services and the Ingresses of our class with
 * what the operator wrote back on them. Secret values never reach the output.
 */
import { KINDS } from "../api/schemas.js";
import type { MetacontrollerLoop } from "../emulator/metacontroller/loop.js";
import type { HookCall, Obj } from "../emulator/metacontroller/types.js";
import { type K8sObject, qualifiedName } from "../k8s/objects.js";
import { Written as IngressWritten } from "../kinds/decorators/ingress-class/written.js";
import { Written } from "../kinds/decorators/service/annotations.js";
import type { OperatorEvent } from "../pipeline/types.js";
import { canonicalJson } from "../policy/canonical.js";
import { parseHuJson } from "../policy/hujson.js";
import { unifiedDiff } from "./diff.js";
import { renderedGatewayApi } from "./gateway-api.js";
import type { RenderedObject } from "./rendered-object.js";

export type { RenderedObject } from "./rendered-object.js";

/** The settled loop, the Events the hooks recorded and the live policy text: what every object is read from. */
export interface Rendered {
  loop: MetacontrollerLoop;
  events: OperatorEvent[];
  liveText: string | undefined;
}

/** Secret values never reach the output: the keys are listed (as stringData) with "<redacted>". */
function redact(o: K8sObject): K8sObject {
  if (o.kind !== "Secret") return o;
  const keys = [
    ...Object.keys((o.data as Record<string, string>) ?? {}),
    ...Object.keys((o.stringData as Record<string, string>) ?? {}),
  ];
  const { data: _data, ...rest } = o;
  return { ...rest, stringData: Object.fromEntries([...new Set(keys)].sort().map((k) => [k, "<redacted>"])) };
}

function conditionOf(status: Record<string, unknown>, type: string) {
  const list = (status.conditions ?? []) as { type: string; status: string; reason: string }[];
  return list.find((c) => c.type === type);
}

function isReady(kind: string, status: Record<string, unknown>): boolean {
  if (kind === "Tailnet") {
    const rendered = conditionOf(status, "PolicyRendered");
    const applied = conditionOf(status, "PolicyApplied");
    return rendered?.status === "True" && ["InSync", "Applied", "DryRun"].includes(applied?.reason ?? "");
  }
  return conditionOf(status, "Ready")?.status === "True";
}

const eventLine = (e: OperatorEvent) => `${e.type} ${e.reason}: ${e.message}`;

/** The last successful sync of an object (parents by kind and namespace/name). */
function lastSync(calls: HookCall[], kind: string, id: string): HookCall | undefined {
  return [...calls].reverse().find((c) => c.kind === kind && c.parent === id && c.hook === "sync" && c.code === 200);
}

/** Every object in the order render prints them: parents by kind, then Services, Ingresses, the Gateway API. */
export function renderedObjects(r: Rendered): RenderedObject[] {
  const order = (k: string) => KINDS.findIndex((i) => i.kind === k);
  const parents = r.loop.parents().sort((a, b) => order(a.kind) - order(b.kind));
  return [
    ...parents.map((p) => renderedParent(r, p)),
    ...renderedServices(r),
    ...renderedIngresses(r),
    ...renderedGatewayApi(r.loop),
  ];
}

function renderedParent({ loop, events, liveText }: Rendered, p: Obj): RenderedObject {
  const id = p.metadata.namespace ? `${p.metadata.namespace}/${p.metadata.name}` : p.metadata.name;
  const last = lastSync(loop.calls, p.kind, id);
  const children = ((last?.response as { children?: K8sObject[] } | undefined)?.children ?? []).map(redact);
  const status = (p.status ?? {}) as Record<string, unknown>;
  const out: RenderedObject = {
    kind: p.kind,
    ...(p.metadata.namespace ? { namespace: p.metadata.namespace } : {}),
    name: p.metadata.name,
    ready: isReady(p.kind, status),
    status,
    children,
  };
  const evs = events.filter((e) => e.regarding.kind === p.kind && e.regarding.metadata.name === p.metadata.name);
  if (evs.length) out.events = evs.map(eventLine);
  if (p.kind === "Tailnet") {
    const policy = tailnetPolicy(p, children, status, liveText);
    if (policy) out.policy = policy;
  }
  return out;
}

/** A Tailnet's rendered policy (its ConfigMap child), pretty-printed, with the diff against the live one. */
function tailnetPolicy(
  p: Obj,
  children: K8sObject[],
  status: Record<string, unknown>,
  liveText: string | undefined,
): RenderedObject["policy"] {
  const cm = children.find((c) => c.kind === "ConfigMap" && c.metadata.name === `tailnet-${p.metadata.name}-policy`);
  const text = (cm?.data as Record<string, string> | undefined)?.["policy.json"];
  if (!text) return undefined;
  const pretty = (t: string | undefined) => {
    if (t === undefined) return "";
    const parsed = parseHuJson(t);
    return parsed.ok ? `${canonicalJson(parsed.value, 2)}\n` : t;
  };
  const rendered = pretty(text);
  return {
    hash: String((status.policy as { renderedHash?: string } | undefined)?.renderedHash ?? ""),
    rendered,
    diff: unifiedDiff(pretty(liveText), rendered, ["live", "rendered"]),
  };
}

/** The labels and annotations among `keys` on an object, sorted by key. */
function writtenOf(meta: Obj["metadata"], keys: string[]): Record<string, string> {
  return Object.fromEntries(
    [...Object.entries(meta.labels ?? {}), ...Object.entries(meta.annotations ?? {})]
      .filter(([k]) => keys.includes(k))
      .sort(([a], [b]) => a.localeCompare(b)),
  );
}

const byName = (a: Obj, b: Obj) => qualifiedName(a).localeCompare(qualifiedName(b));

/** Annotated Services after the parents: what the operator wrote back on each, its attachments, its Events. */
function renderedServices({ loop, events }: Rendered): RenderedObject[] {
  const writtenKeys = Object.values(Written).flatMap((w) => Object.values(w) as string[]);
  const out: RenderedObject[] = [];
  for (const svc of loop.list("Service").sort(byName)) {
    const meta = svc.metadata;
    const written = writtenOf(meta, writtenKeys);
    if (!Object.keys(written).length) continue;
    const id = qualifiedName(svc);
    // each DecoratorController's last answer: the Service is synced by all three
    const last = new Map<string, K8sObject[]>();
    for (const c of loop.calls) {
      if (c.kind !== "Service" || c.parent !== id || c.hook !== "sync" || c.code !== 200) continue;
      const dc = (c.body as { controller?: { metadata?: { name?: string } } }).controller?.metadata?.name ?? "";
      last.set(dc, (c.response as { attachments?: K8sObject[] }).attachments ?? []);
    }
    const states = [Written.expose.state, Written.target.state].flatMap((k) => meta.labels?.[k] ?? []);
    const evs = events.filter((e) => e.regarding.kind === "Service" && qualifiedName(e.regarding) === id);
    out.push({
      kind: "Service",
      ...(meta.namespace ? { namespace: meta.namespace } : {}),
      name: meta.name,
      ready: states.length > 0 && states.every((x) => x === "Ready"),
      // a LoadBalancer of our class: its status.loadBalancer is ours (what `kubectl get svc` shows as EXTERNAL-IP)
      status: svc.status?.loadBalancer ? { loadBalancer: svc.status.loadBalancer } : {},
      children: [...last.values()].flat(),
      written,
      ...(evs.length ? { events: evs.map(eventLine) } : {}),
    });
  }
  return out;
}

/** Ingresses of our class after them: the same, plus the status.loadBalancer the operator wrote. */
function renderedIngresses({ loop, events }: Rendered): RenderedObject[] {
  const out: RenderedObject[] = [];
  for (const ing of loop.list("Ingress").sort(byName)) {
    const meta = ing.metadata;
    const written = writtenOf(meta, Object.values(IngressWritten));
    if (!Object.keys(written).length) continue;
    const id = qualifiedName(ing);
    const last = lastSync(loop.calls, "Ingress", id);
    const evs = events.filter((e) => e.regarding.kind === "Ingress" && qualifiedName(e.regarding) === id);
    out.push({
      kind: "Ingress",
      ...(meta.namespace ? { namespace: meta.namespace } : {}),
      name: meta.name,
      ready: meta.labels?.[IngressWritten.state] === "Ready",
      status: (ing.status ?? {}) as Record<string, unknown>,
      children: (last?.response as { attachments?: K8sObject[] } | undefined)?.attachments ?? [],
      written,
      ...(evs.length ? { events: evs.map(eventLine) } : {}),
    });
  }
  return out;
}
