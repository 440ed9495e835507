/**
 * The Metacontroller v2 loop, in process (see the hook contract in docs/architecture.md): used by
 * `render` to play customize → sync → finalize exactly as Metacontroller would, and by the tests'
 * FakeMetacontroller, which adds the contract checks. It keeps
 * an object store; per parent it calls customize (cached per uid+generation, decoded strictly),
 * selects related objects with v2 semantics (one group per rule, even empty), calls sync with
 * v2-keyed maps, applies the children (owned ones left out are deleted; OnDelete children are
 * never updated), replaces status wholesale with observedGeneration = metadata.generation, and
 * runs finalize on deletion (a finalized: true answer removes the parent; its children are not
 * applied, the garbage collector removes the owned ones). It reads
 * compositecontrollers/*.yaml, so the loop and the real manifests cannot disagree.
 */
import type { FastifyInstance } from "fastify";
import { kindInfoByKind } from "../../api/schemas.js";
import type { K8sObject, ObjectMaps } from "../../k8s/objects.js";
import { typeKey } from "../../k8s/objects.js";
import type { RelatedRule } from "../../pipeline/types.js";
import { selectsByAnnotations } from "./annotation-selector.js";
import { apiServerErrors } from "./apiserver.js";
import { applyCreate, applyUpdate, jsonEqual } from "./apply.js";
import {
  childTypes as ccChildTypes,
  compositeController,
  type DecoratorController,
  decoratorControllers,
  kindOfResource,
} from "./controllers.js";

export type Obj = K8sObject & { spec?: unknown; status?: Record<string, unknown>; data?: Record<string, string> };
/** v2 key: namespace/name for namespaced objects, name for cluster-scoped. */
export const v2Key = (o: K8sObject) =>
  o.metadata.namespace ? `${o.metadata.namespace}/${o.metadata.name}` : o.metadata.name;
const objKey = (o: { apiVersion: string; kind: string; metadata: { namespace?: string; name: string } }) =>
  `${o.apiVersion}|${o.kind}|${o.metadata.namespace ?? ""}|${o.metadata.name}`;
const clone = <T>(v: T): T => structuredClone(v);

const DECORATOR_ANNOTATION = "metacontroller.k8s.io/decorator-controller";
const RULE_KEYS = ["apiVersion", "resource", "labelSelector", "namespaceSelector", "namespace", "names"];
const SELECTOR_KEYS = ["matchLabels", "matchExpressions"];

/**
 * The customize answer as Metacontroller's strict v2 decoder reads it: only relatedResources at the
 * top, only RelatedResourceRule fields in a rule, only LabelSelector fields in its selectors.
 */
function strictCustomizeResponse(json: unknown): RelatedRule[] {
  const body = (json ?? {}) as Record<string, unknown>;
  for (const k of Object.keys(body)) {
    if (k !== "relatedResources") throw new Error(`strict v2 decode of the customize answer fails on key ${k}`);
  }
  const rules = (body.relatedResources ?? []) as RelatedRule[];
  for (const rule of rules) {
    for (const k of Object.keys(rule)) {
      if (!RULE_KEYS.includes(k)) throw new Error(`strict v2 decode of a related rule fails on key ${k}`);
    }
    for (const sel of [rule.labelSelector, rule.namespaceSelector]) {
      for (const k of Object.keys(sel ?? {})) {
        if (!SELECTOR_KEYS.includes(k)) throw new Error(`strict v2 decode of a label selector fails on key ${k}`);
      }
    }
  }
  return rules;
}

export interface HookCall {
  hook: string;
  kind: string;
  parent: string;
  code: number;
  body: unknown;
  response: unknown;
}

export interface LoopOptions {
  app: FastifyInstance;
  /** Contract checks (tests): a child before it is applied, a status before it is written. */
  checkChild?: (child: Obj) => void;
  checkStatus?: (kind: string, status: Record<string, unknown>) => void;
  token?: string;
  /** Deployments report Available with all replicas ready (default true). */
  deploymentsAvailable?: boolean;
  /** Create one running Pod per Deployment replica; the port named "metrics" is rewritten by this. */
  agentPods?: { metricsPort: (deployment: Obj) => number | undefined };
  /**
   * Serve parents from an informer cache that can lag behind the last status write: the sync
   * right after one that wrote a parent's status is given the parent as that sync saw it, without
   * the status it wrote (Metacontroller never GETs the parent for a sync, and a related object's
   * change can enqueue it before the informer has delivered the write). The sync after that sees
   * the live object again, as an informer does once it catches up.
   */
  parentCacheLag?: boolean;
}

export class MetacontrollerLoop {
  readonly objects = new Map<string, Obj>();
  readonly calls: HookCall[] = [];
  readonly errors: string[] = [];
  private readonly customizeCache = new Map<string, RelatedRule[]>();
  /** parentCacheLag: the view the next sync of a parent gets, and the views that were stale. */
  private readonly staleNext = new Map<string, Obj>();
  private readonly staleViews = new WeakSet<Obj>();
  /** `<decorator controller>|<object uid>`: the finalizer a DecoratorController with a finalize hook adds. */
  private readonly decoratorFinalizers = new Set<string>();
  private uid = 0;
  private ip = 10;
  deploymentsAvailable: boolean;

  constructor(protected readonly opts: LoopOptions) {
    this.deploymentsAvailable = opts.deploymentsAvailable ?? true;
  }

  /** Create or update an object as kubectl apply would (generation bumps on spec change). */
  apply(input: Obj): Obj {
    const o = clone(input);
    const existing = this.objects.get(objKey(o));
    o.metadata.uid = existing?.metadata.uid ?? o.metadata.uid ?? `uid-${++this.uid}`;
    o.metadata.creationTimestamp =
      existing?.metadata.creationTimestamp ?? o.metadata.creationTimestamp ?? "2026-11-01T00:00:00Z";
    const specChanged = !existing || JSON.stringify(existing.spec) !== JSON.stringify(o.spec);
    o.metadata.generation = (existing?.metadata.generation ?? 0) + (specChanged ? 1 : 0);
    if (existing?.status && !input.status) o.status = existing.status;
    if (existing?.metadata.deletionTimestamp) o.metadata.deletionTimestamp = existing.metadata.deletionTimestamp;
    this.objects.set(objKey(o), o);
    return o;
  }

  get(apiVersion: string, kind: string, name: string, namespace?: string): Obj | undefined {
    return this.objects.get(objKey({ apiVersion, kind, metadata: { name, namespace } }));
  }

  list(kind: string): Obj[] {
    return [...this.objects.values()].filter((o) => o.kind === kind);
  }

  /** kubectl delete: parents with a finalize hook get a deletionTimestamp and are finalized by the loop. */
  delete(apiVersion: string, kind: string, name: string, namespace?: string): void {
    const o = this.get(apiVersion, kind, name, namespace);
    if (!o) return;
    const decorated = [...this.decoratorFinalizers].some((f) => f.endsWith(`|${o.metadata.uid}`));
    if (kindInfoByKind(kind) || decorated) o.metadata.deletionTimestamp = "2026-11-29T12:00:00Z";
    else this.removeWithDependents(o);
  }

  private removeWithDependents(o: Obj): void {
    this.objects.delete(objKey(o));
    for (const child of [...this.objects.values()]) {
      if (child.metadata.ownerReferences?.some((r) => r.uid === o.metadata.uid)) this.removeWithDependents(child);
    }
  }

  parents(): Obj[] {
    return [...this.objects.values()]
      .filter((o) => kindInfoByKind(o.kind))
      .sort((a, b) => objKey(a).localeCompare(objKey(b)));
  }

  private async call(
    hookKind: string,
    hook: string,
    parent: Obj,
    body: unknown,
  ): Promise<{ code: number; json: unknown }> {
    const res = await this.opts.app.inject({
      method: "POST",
      url: `/hooks/${hookKind}/${hook}`,
      headers: {
        "content-type": "application/json",
        ...(this.opts.token ? { authorization: `Bearer ${this.opts.token}` } : {}),
      },
      payload: JSON.stringify(body),
    });
    const json = res.body ? (JSON.parse(res.body) as unknown) : undefined;
    const name = parent.metadata.namespace
      ? `${parent.metadata.namespace}/${parent.metadata.name}`
      : parent.metadata.name;
    this.calls.push({ hook, kind: parent.kind, parent: name, code: res.statusCode, body, response: json });
    if (res.statusCode !== 200) this.errors.push(`${hook} ${parent.kind} ${name}: ${res.statusCode} ${res.body}`);
    return { code: res.statusCode, json };
  }

  private matches(o: Obj, rule: RelatedRule): boolean {
    if (o.apiVersion !== rule.apiVersion || o.kind !== kindOfResource(rule.resource)) return false;
    if (rule.names?.length) {
      if (rule.labelSelector) throw new Error(`invalid related rule (names + selector): ${JSON.stringify(rule)}`);
      if (rule.namespace && o.metadata.namespace !== rule.namespace) return false;
      return rule.names.includes(o.metadata.name);
    }
    if (rule.namespace && o.metadata.namespace !== rule.namespace) return false;
    const want = rule.labelSelector?.matchLabels ?? {};
    return Object.entries(want).every(([k, v]) => o.metadata.labels?.[k] === v);
  }

  private maps(objects: Obj[], init: string[] = []): ObjectMaps {
    const out: ObjectMaps = {};
    for (const t of init) out[t] = {};
    for (const o of objects) {
      const k = typeKey(o.apiVersion, o.kind);
      out[k] ??= {};
      out[k][v2Key(o)] = clone(o);
    }
    return out;
  }

  /** One sync (or finalize) of one parent, as Metacontroller's syncParentObject does it. */
  async syncParent(parentIn: Obj): Promise<boolean> {
    const info = kindInfoByKind(parentIn.kind);
    if (!info) throw new Error(`not a parent: ${parentIn.kind}`);
    const parent = clone(parentIn);
    const cc = compositeController(info.hookKind);
    const childTypes = ccChildTypes(info.hookKind);
    const cacheKey = `${parent.metadata.uid}/${parent.metadata.generation}`;
    let rules = this.customizeCache.get(cacheKey);
    if (!rules) {
      const r = await this.call(info.hookKind, "customize", parent, { controller: cc, parent });
      if (r.code !== 200) return false;
      rules = strictCustomizeResponse(r.json);
      this.customizeCache.set(cacheKey, rules);
    }
    const related = [...this.objects.values()].filter((o) => rules.some((rule) => this.matches(o, rule)));
    const owned = [...this.objects.values()].filter((o) =>
      o.metadata.ownerReferences?.some((ref) => ref.uid === parent.metadata.uid && ref.controller),
    );
    const finalizing = !!parent.metadata.deletionTimestamp;
    const hook = finalizing ? "finalize" : "sync";
    const body = {
      controller: { metadata: { name: cc.metadata.name }, spec: cc.spec, status: {} },
      parent,
      children: this.maps(
        owned,
        childTypes.map((c) => c.type),
      ),
      // One group per related rule, even an empty one, keyed like children (Metacontroller's
      // customize manager initialises a group per rule before it fills them).
      related: this.maps(
        related,
        rules.map((rule) => typeKey(rule.apiVersion, kindOfResource(rule.resource))),
      ),
      finalizing,
    };
    const r = await this.call(info.hookKind, hook, parent, body);
    if (r.code !== 200) return false;
    const resp = r.json as {
      status?: Record<string, unknown>;
      children?: Obj[];
      finalized?: boolean;
      resyncAfterSeconds?: number;
    };
    for (const k of Object.keys(resp)) {
      if (!["status", "children", "resyncAfterSeconds", "finalized"].includes(k))
        throw new Error(`strict v2 decode fails on key ${k}`);
    }
    if (finalizing && resp.finalized) {
      // finalized: true → Metacontroller removes its finalizer and then skips child management for
      // this answer (pkg/controller/composite/controller.go syncParentObject: ManageChildren runs only
      // while ShouldFinalize, i.e. our finalizer is still on the parent). The parent, deleting and
      // without finalizers, is gone; the garbage collector removes its children; the status write
      // finds no object (NotFound is swallowed). Children in this answer are never applied.
      const live = this.get(parent.apiVersion, parent.kind, parent.metadata.name, parent.metadata.namespace);
      if (live) await this.releaseParent(live);
      return !!live;
    }
    const desired = resp.children ?? [];
    for (const c of desired) {
      if (!childTypes.some((t) => t.type === typeKey(c.apiVersion, c.kind))) {
        throw new Error(`${info.kind} returned an undeclared child type ${typeKey(c.apiVersion, c.kind)}`);
      }
      c.metadata.namespace ??= parent.metadata.namespace;
      this.opts.checkChild?.(c);
    }
    let changed = false;
    // deletes first, then creates/updates (manage_children.go)
    const desiredKeys = new Set(desired.map(objKey));
    for (const o of owned) {
      if (!desiredKeys.has(objKey(o))) {
        await this.deleteChild(o);
        changed = true;
      }
    }
    for (const c of desired) changed = (await this.applyChild(parent, c, childTypes)) || changed;
    // status replaces .status wholesale; observedGeneration comes from the generation seen at the start
    const live = this.get(parent.apiVersion, parent.kind, parent.metadata.name, parent.metadata.namespace);
    if (!live) return changed;
    const status = { ...(resp.status ?? {}), observedGeneration: parent.metadata.generation };
    this.opts.checkStatus?.(info.kind, status);
    if (!this.sameStatus(live.status, status)) {
      if (this.opts.parentCacheLag && !this.staleViews.has(parentIn)) this.staleNext.set(objKey(live), clone(parentIn));
      await this.writeStatus(live, status);
      changed = true;
    }
    return changed;
  }

  /*
   * The store's writes, overridden by a store that keeps its objects in a real API server
   * (test/real/kube/loop.ts); in memory they act on `objects` at once.
   */
  protected sameStatus(live: Record<string, unknown> | undefined, status: Record<string, unknown>): boolean {
    return JSON.stringify(live) === JSON.stringify(status);
  }

  /** Metacontroller's status write (the /status subresource). */
  protected async writeStatus(live: Obj, status: Record<string, unknown>): Promise<void> {
    live.status = status;
  }

  /** An owned child the answer left out (or a Recreate): deleted, its dependents with it. */
  protected async deleteChild(o: Obj): Promise<void> {
    this.removeWithDependents(o);
  }

  /** finalized: true → Metacontroller removes its finalizer and the parent, deleting, is gone. */
  protected async releaseParent(live: Obj): Promise<void> {
    this.removeWithDependents(live);
  }

  /**
   * Create (no `existing`) or update a child with the object the apply computed; false when the
   * server refused it or nothing changed.
   */
  protected async writeChild(o: Obj, existing: Obj | undefined, id: string): Promise<boolean> {
    this.simulateServer(o, existing);
    const refused = apiServerErrors(o);
    if (refused.length) {
      // The API server refuses the whole write; Metacontroller reports it and keeps syncing.
      this.errors.push(`${existing ? "update" : "create"} ${id}: ${refused.join("; ")}`);
      return false;
    }
    if (existing && jsonEqual(o, existing)) return false;
    this.objects.set(objKey(o), o);
    return true;
  }

  /**
   * One sync (or finalize) of one object a DecoratorController decorates, as
   * pkg/controller/decorator/controller.go syncParentObject does it: a matching object gets the
   * finalizer first; an object that stops matching (or is deleted) while it has the finalizer is
   * finalized; attachments are the owned objects annotated with this controller's name; labels and
   * annotations of the answer are set on the object (null deletes the key), a null status leaves it.
   */
  async syncDecorated(dc: DecoratorController, objIn: Obj): Promise<boolean> {
    const obj = clone(objIn);
    const rule = dc.spec.resources.find(
      (r) => r.apiVersion === obj.apiVersion && kindOfResource(r.resource) === obj.kind,
    );
    if (!rule) return false;
    const fin = `${dc.metadata.name}|${obj.metadata.uid}`;
    const matches = selectsByAnnotations(rule.annotationSelector, obj.metadata.annotations ?? {});
    if (!matches && !this.decoratorFinalizers.has(fin)) return false;
    let changed = false;
    if (dc.spec.hooks.finalize && !obj.metadata.deletionTimestamp && !this.decoratorFinalizers.has(fin)) {
      this.decoratorFinalizers.add(fin);
      changed = true;
    }
    const hookKind = (h: string) => dc.spec.hooks[h].webhook.path.split("/")[2];
    const cacheKey = `${dc.metadata.name}/${obj.metadata.uid}/${obj.metadata.generation}`;
    let rules = this.customizeCache.get(cacheKey);
    if (!rules) {
      const controller = { metadata: { name: dc.metadata.name }, spec: dc.spec, status: {} };
      const r = await this.call(hookKind("customize"), "customize", obj, { controller, parent: obj });
      if (r.code !== 200) return changed;
      rules = strictCustomizeResponse(r.json);
      this.customizeCache.set(cacheKey, rules);
    }
    const related = [...this.objects.values()].filter((o) => rules.some((rl) => this.matches(o, rl)));
    const attachmentTypes = dc.spec.attachments.map((a) => ({
      type: typeKey(a.apiVersion, kindOfResource(a.resource)),
      method: a.updateStrategy?.method ?? "OnDelete",
    }));
    const owned = [...this.objects.values()].filter(
      (o) =>
        o.metadata.ownerReferences?.some((ref) => ref.uid === obj.metadata.uid && ref.controller) &&
        o.metadata.annotations?.[DECORATOR_ANNOTATION] === dc.metadata.name &&
        attachmentTypes.some((t) => t.type === typeKey(o.apiVersion, o.kind)),
    );
    const finalizing = !!dc.spec.hooks.finalize && (!!obj.metadata.deletionTimestamp || !matches);
    const hook = finalizing ? "finalize" : "sync";
    const body = {
      controller: { metadata: { name: dc.metadata.name }, spec: dc.spec, status: {} },
      object: obj,
      attachments: this.maps(
        owned,
        attachmentTypes.map((t) => t.type),
      ),
      related: this.maps(
        related,
        rules.map((rl) => typeKey(rl.apiVersion, kindOfResource(rl.resource))),
      ),
      finalizing,
    };
    const r = await this.call(hookKind(hook), hook, obj, body);
    if (r.code !== 200) return changed;
    const resp = r.json as {
      labels?: Record<string, string | null>;
      annotations?: Record<string, string | null>;
      status?: Record<string, unknown> | null;
      attachments?: Obj[];
      finalized?: boolean;
    };
    for (const k of Object.keys(resp)) {
      if (!["labels", "annotations", "status", "attachments", "resyncAfterSeconds", "finalized"].includes(k))
        throw new Error(`strict v2 decode of the decorator answer fails on key ${k}`);
    }
    const live = this.get(obj.apiVersion, obj.kind, obj.metadata.name, obj.metadata.namespace);
    if (!live) return changed;
    for (const field of ["labels", "annotations"] as const) {
      const next = { ...(live.metadata[field] ?? {}) };
      for (const [k, v] of Object.entries(resp[field] ?? {})) {
        if (v === null) delete next[k];
        else next[k] = v;
      }
      if (JSON.stringify(next) !== JSON.stringify(live.metadata[field] ?? {})) {
        live.metadata[field] = next;
        changed = true;
      }
    }
    if (resp.status != null && JSON.stringify(resp.status) !== JSON.stringify(live.status)) {
      live.status = resp.status;
      changed = true;
    }
    if (finalizing && resp.finalized && this.decoratorFinalizers.has(fin)) {
      this.decoratorFinalizers.delete(fin);
      changed = true;
    }
    // Attachments are managed while the object lives, or while it is deleting and still has the finalizer.
    if (obj.metadata.deletionTimestamp && !this.decoratorFinalizers.has(fin)) {
      if (![...this.decoratorFinalizers].some((f) => f.endsWith(`|${obj.metadata.uid}`)))
        this.removeWithDependents(live);
      return true;
    }
    // a copy: the answer stays as the hook gave it (render shows it)
    const desired = clone(resp.attachments ?? []);
    for (const c of desired) {
      if (!attachmentTypes.some((t) => t.type === typeKey(c.apiVersion, c.kind))) {
        throw new Error(`${dc.metadata.name} returned an undeclared attachment type ${typeKey(c.apiVersion, c.kind)}`);
      }
      c.metadata.namespace ??= obj.metadata.namespace;
      c.metadata.annotations = { ...(c.metadata.annotations ?? {}), [DECORATOR_ANNOTATION]: dc.metadata.name };
      this.opts.checkChild?.(c);
    }
    const desiredKeys = new Set(desired.map(objKey));
    for (const o of owned) {
      if (desiredKeys.has(objKey(o)) || o.metadata.deletionTimestamp) continue;
      // A parent kind (TailnetIngress, TailnetEgress) is deleted through its own finalize.
      if (kindInfoByKind(o.kind)) this.delete(o.apiVersion, o.kind, o.metadata.name, o.metadata.namespace);
      else await this.deleteChild(o);
      changed = true;
    }
    for (const c of desired) changed = (await this.applyChild(obj, c, attachmentTypes, false)) || changed;
    return changed;
  }

  private async applyChild(
    parent: Obj,
    c: Obj,
    childTypes: { type: string; method: string }[],
    controllerUidLabel = true,
  ): Promise<boolean> {
    const method = childTypes.find((t) => t.type === typeKey(c.apiVersion, c.kind))?.method ?? "OnDelete";
    const existing = this.objects.get(objKey(c));
    const desired = clone(c);
    // generateSelector's label (CompositeControllers) is added before apply, so last-applied holds
    // it; a DecoratorController adds none.
    if (controllerUidLabel && !desired.metadata.labels?.["controller-uid"])
      desired.metadata.labels = { ...(desired.metadata.labels ?? {}), "controller-uid": parent.metadata.uid ?? "" };
    const id = `${c.kind} ${v2Key(c)}`;
    let o: Obj;
    if (!existing) {
      o = applyCreate(desired as never) as unknown as Obj;
      o.metadata.uid = `uid-${++this.uid}`;
      o.metadata.generation = 1;
      o.metadata.ownerReferences = [
        {
          apiVersion: parent.apiVersion,
          kind: parent.kind,
          name: parent.metadata.name,
          uid: parent.metadata.uid ?? "",
          controller: true,
        },
      ];
    } else {
      if (existing.metadata.deletionTimestamp) return false;
      let merged: ReturnType<typeof applyUpdate>;
      try {
        merged = applyUpdate(existing as never, desired as never);
      } catch (e) {
        this.errors.push(`update ${id}: ${(e as Error).message}`);
        return false;
      }
      if (!merged.changed || method === "OnDelete") return false;
      if (method === "Recreate" || method === "RollingRecreate") {
        await this.deleteChild(existing);
        return true;
      }
      o = merged.object as unknown as Obj;
      if (!jsonEqual(o.spec, existing.spec)) o.metadata.generation = (existing.metadata.generation ?? 0) + 1;
    }
    return this.writeChild(o, existing, id);
  }

  /** What the API server and built-in controllers add: ClusterIPs, Deployment status, Pods. */
  private simulateServer(o: Obj, existing: Obj | undefined): void {
    if (o.kind === "Service") {
      const spec = o.spec as { clusterIP?: string; type?: string; ports?: Record<string, unknown>[] };
      // the API server's defaults, which the next 3-way merge sees in the observed object
      for (const p of spec.ports ?? []) {
        p.protocol ??= "TCP";
        p.targetPort ??= p.port;
      }
      spec.clusterIP = (existing?.spec as { clusterIP?: string } | undefined)?.clusterIP ?? `10.96.0.${++this.ip}`;
    }
    if (o.kind === "Deployment") {
      const spec = o.spec as {
        replicas?: number;
        template: {
          metadata?: { labels?: Record<string, string> };
          spec: { containers: { ports?: { name?: string; containerPort: number }[] }[] };
        };
      };
      const replicas = spec.replicas ?? 1;
      o.status = this.deploymentsAvailable
        ? {
            observedGeneration: o.metadata.generation,
            replicas,
            updatedReplicas: replicas,
            readyReplicas: replicas,
            availableReplicas: replicas,
            conditions: [
              { type: "Available", status: "True" },
              { type: "Progressing", status: "True", reason: "NewReplicaSetAvailable" },
            ],
          }
        : { observedGeneration: o.metadata.generation, replicas, conditions: [{ type: "Available", status: "False" }] };
      if (this.opts.agentPods) {
        for (const p of this.list("Pod").filter(
          (p) => p.metadata.annotations?.["test/deployment"] === o.metadata.name,
        )) {
          this.objects.delete(objKey(p));
        }
        const port = this.opts.agentPods.metricsPort(o);
        for (let i = 0; i < replicas && this.deploymentsAvailable; i++) {
          const tpl = clone(spec.template);
          for (const c of tpl.spec.containers)
            for (const pt of c.ports ?? []) if (pt.name === "metrics" && port) pt.containerPort = port;
          const pod: Obj = {
            apiVersion: "v1",
            kind: "Pod",
            metadata: {
              name: `${o.metadata.name}-${i}`,
              namespace: o.metadata.namespace,
              uid: `uid-${++this.uid}`,
              labels: tpl.metadata?.labels ?? {},
              annotations: { "test/deployment": o.metadata.name },
            },
            spec: tpl.spec,
            status: { phase: "Running", podIP: "127.0.0.1", conditions: [{ type: "Ready", status: "True" }] },
          };
          this.objects.set(objKey(pod), pod);
        }
      }
    }
  }

  /** The parent a sync is given: the live object, or with parentCacheLag the stale view due once after a write. */
  cachedParent(live: Obj): Obj {
    const k = objKey(live);
    const stale = this.staleNext.get(k);
    this.staleNext.delete(k);
    if (!this.opts.parentCacheLag || !stale || stale.metadata.uid !== live.metadata.uid) return live;
    this.staleViews.add(stale);
    return stale;
  }

  /** Sync every parent until nothing changes; returns the number of rounds it took. */
  async settle(maxRounds = 10): Promise<number> {
    for (let round = 1; round <= maxRounds; round++) {
      let changed = false;
      for (const p of this.parents()) {
        const live = this.objects.get(objKey(p));
        if (live) changed = (await this.syncParent(this.cachedParent(live))) || changed;
      }
      for (const dc of decoratorControllers()) {
        for (const o of this.decoratedCandidates(dc)) changed = (await this.syncDecorated(dc, o)) || changed;
      }
      if (!changed) return round;
    }
    throw new Error(`did not settle within ${maxRounds} rounds; last errors: ${this.errors.slice(-3).join(" | ")}`);
  }

  /** The objects of the types a DecoratorController decorates, in a stable order. */
  decoratedCandidates(dc: DecoratorController): Obj[] {
    return [...this.objects.values()]
      .filter((o) =>
        dc.spec.resources.some((r) => r.apiVersion === o.apiVersion && kindOfResource(r.resource) === o.kind),
      )
      .sort((a, b) => objKey(a).localeCompare(objKey(b)));
  }

  status(apiVersion: string, kind: string, name: string, namespace?: string): Record<string, unknown> | undefined {
    return this.get(apiVersion, kind, name, namespace)?.status;
  }

  condition(kind: string, name: string, type: string, namespace?: string) {
    const s = this.get("tailnet.internal/v1alpha1", kind, name, namespace)?.status as
      | { conditions?: { type: string; status: string; reason: string; message: string }[] }
      | undefined;
    return s?.conditions?.find((c) => c.type === type);
  }

  childrenOf(parent: Obj): Obj[] {
    return [...this.objects.values()].filter((o) =>
      o.metadata.ownerReferences?.some((r) => r.uid === parent.metadata.uid),
    );
  }
}
