import { kindInfoByKind } from "../../api/schemas.js";
import { typeKey } from "../../k8s/objects.js";
import type { RelatedRule } from "../../pipeline/types.js";
import { apiServerErrors } from "./apiserver.js";
import { applyCreate, applyUpdate, jsonEqual } from "./apply.js";
import { syncComposite } from "./composite-sync.js";
import { type DecoratorController, decoratorControllers, kindOfResource } from "./controllers.js";
import { syncDecorator } from "./decorator-sync.js";
import { type ChildType, clone, type HookAnswer, objKey, type SyncPort, v2Key } from "./informer.js";
import type { HookCall, LoopOptions, Obj } from "./types.js";
import { deletePod, simulateDeployment, simulateStatefulSet, type WorkloadStore } from "./workloads.js";

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
  /** `namespace/name` of the StatefulSets whose rollout a test holds (holdRollout). */
  private readonly heldRollouts = new Set<string>();
  deploymentsAvailable: boolean;
  /** What the composite and decorator syncs use of this loop; the writes go through the methods a subclass overrides. */
  private readonly port: SyncPort;

  constructor(protected readonly opts: LoopOptions) {
    this.deploymentsAvailable = opts.deploymentsAvailable ?? true;
    this.port = {
      opts,
      customizeCache: this.customizeCache,
      decoratorFinalizers: this.decoratorFinalizers,
      objects: () => [...this.objects.values()],
      get: (apiVersion, kind, name, namespace) => this.get(apiVersion, kind, name, namespace),
      call: (hookKind, hook, parent, body) => this.call(hookKind, hook, parent, body),
      applyChild: (parent, c, types, label) => this.applyChild(parent, c, types, label),
      delete: (apiVersion, kind, name, namespace) => this.delete(apiVersion, kind, name, namespace),
      removeWithDependents: (o) => this.removeWithDependents(o),
      deleteChild: (o) => this.deleteChild(o),
      releaseParent: (live) => this.releaseParent(live),
      sameStatus: (live, status) => this.sameStatus(live, status),
      writeStatus: (live, status) => this.writeStatus(live, status),
      statusWritten: (parentIn, live) => {
        if (this.opts.parentCacheLag && !this.staleViews.has(parentIn))
          this.staleNext.set(objKey(live), clone(parentIn));
      },
    };
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

  private async call(hookKind: string, hook: string, parent: Obj, body: unknown): Promise<HookAnswer> {
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

  /** One sync (or finalize) of one parent, as Metacontroller's syncParentObject does it (composite-sync.ts). */
  async syncParent(parentIn: Obj): Promise<boolean> {
    return syncComposite(this.port, parentIn);
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
    const refused = apiServerErrors(o, existing);
    if (refused.length) {
      // The API server refuses the whole write (nothing reaches the controllers); Metacontroller reports it
      // and keeps syncing.
      this.errors.push(`${existing ? "update" : "create"} ${id}: ${refused.join("; ")}`);
      return false;
    }
    this.simulateServer(o, existing);
    if (existing && jsonEqual(o, existing)) return false;
    this.objects.set(objKey(o), o);
    return true;
  }

  /** One sync (or finalize) of one object a DecoratorController decorates (decorator-sync.ts). */
  async syncDecorated(dc: DecoratorController, objIn: Obj): Promise<boolean> {
    return syncDecorator(this.port, dc, objIn);
  }

  private async applyChild(parent: Obj, c: Obj, childTypes: ChildType[], controllerUidLabel = true): Promise<boolean> {
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

  /** What the API server and built-in controllers add: ClusterIPs, Deployment and StatefulSet status, Pods. */
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
    if (o.kind === "Deployment") simulateDeployment(this.workloads(), o);
    if (o.kind === "StatefulSet") simulateStatefulSet(this.workloads(), o, existing);
  }

  private workloads(): WorkloadStore {
    return {
      objects: this.objects,
      nextUid: () => `uid-${++this.uid}`,
      agentPods: this.opts.agentPods,
      available: this.deploymentsAvailable,
      held: (o) => this.heldRollouts.has(`${o.metadata.namespace ?? ""}/${o.metadata.name}`),
    };
  }

  /**
   * A test holds StatefulSet `name`'s rollouts: from its next write its Pods at the update revision stay unready
   * and its status keeps the previous currentRevision (not settled), until releaseRollout.
   */
  holdRollout(name: string, namespace?: string): void {
    this.heldRollouts.add(`${namespace ?? ""}/${name}`);
  }

  /** The held Pods get ready and the rollout completes (the controller's next status), as if the probe passed. */
  releaseRollout(name: string, namespace?: string): void {
    this.heldRollouts.delete(`${namespace ?? ""}/${name}`);
    const sts = this.get("apps/v1", "StatefulSet", name, namespace);
    if (sts) simulateStatefulSet(this.workloads(), sts);
  }

  /**
   * `kubectl delete pod`: a StatefulSet's Pod comes back at once with the same name and a new uid (the
   * StatefulSet controller); any other Pod is just gone. False when there was no such Pod.
   */
  deletePod(name: string, namespace?: string): boolean {
    return deletePod(this.workloads(), name, namespace);
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
