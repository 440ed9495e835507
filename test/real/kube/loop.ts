/**
 * The Metacontroller loop (src/emulator/metacontroller/loop.ts) with its objects in a real kube-apiserver instead of
 * memory: every sync first lists the parents, children and related types from the server (so a
 * parent is seen as the server stored it: defaults filled in, unknown fields pruned), children are
 * created (POST, with the controller ownerReference) or updated (PUT of the 3-way merge, carrying the
 * observed resourceVersion) with the bytes the loop's dynamic-apply computes, status goes through the
 * /status subresource, a parent with a finalize hook carries Metacontroller's finalizer and loses it
 * on `finalized: true`, and what a deleted parent owned is left to the real garbage collector.
 * Shapes as in Metacontroller v4.17.2 (pkg/controller/common/manage_children.go,
 * pkg/controller/composite/controller.go, pkg/dynamic/clientset/clientset.go).
 * Plain HTTPS with the admin client certificate of cluster.ts.
 */
import { readFileSync } from "node:fs";
import { request } from "node:https";
import { join } from "node:path";
import { kindInfoByKind } from "../../../src/api/schemas.js";
import { jsonEqual } from "../../../src/emulator/metacontroller/apply.js";
import { compositeController, kindOfResource } from "../../../src/emulator/metacontroller/controllers.js";
import { MetacontrollerLoop } from "../../../src/emulator/metacontroller/loop.js";
import type { Obj } from "../../../src/emulator/metacontroller/types.js";
import type { Cluster } from "./cluster.js";

type Type = { apiVersion: string; resource: string; kind: string };
export type Write = { verb: string; path: string; code: number };

const HOOK_KINDS = ["tailnet", "site", "egress", "ingress", "gateway", "user", "authkey"];
/** What hooks may ask for as related objects besides the controllers' own types. */
const EXTRA = [
  { apiVersion: "v1", resource: "secrets" },
  { apiVersion: "v1", resource: "configmaps" },
  { apiVersion: "v1", resource: "services" },
  { apiVersion: "v1", resource: "pods" },
  { apiVersion: "v1", resource: "namespaces" },
];

/** metadata.finalizers, which the shared ObjectMeta type leaves out. */
export const finalizersOf = (o: { metadata: object }) => (o.metadata as { finalizers?: string[] }).finalizers ?? [];

export class KubeClient {
  private readonly ca: Buffer;
  private readonly cert: Buffer;
  private readonly key: Buffer;
  constructor(readonly cluster: Cluster) {
    this.ca = readFileSync(join(cluster.dir, "ca.crt"));
    this.cert = readFileSync(join(cluster.dir, "admin.crt"));
    this.key = readFileSync(join(cluster.dir, "admin.key"));
  }

  send(method: string, path: string, body?: unknown): Promise<{ code: number; json: Record<string, unknown> }> {
    const url = new URL(path, this.cluster.server);
    const payload = body === undefined ? undefined : JSON.stringify(body);
    return new Promise((resolve, reject) => {
      const req = request(
        url,
        {
          method,
          ca: this.ca,
          cert: this.cert,
          key: this.key,
          // Content-Length always: Node sends a DELETE's body without one (no chunking for DELETE by
          // default), and the server then reads that body as the next request on the kept-alive connection
          headers: {
            accept: "application/json",
            ...(payload ? { "content-type": "application/json", "content-length": Buffer.byteLength(payload) } : {}),
          },
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on("data", (c: Buffer) => chunks.push(c));
          res.on("end", () => {
            const text = Buffer.concat(chunks).toString();
            let json: Record<string, unknown> = {};
            try {
              if (text) json = JSON.parse(text) as Record<string, unknown>;
            } catch {
              // not JSON (a plain "404 page not found" for an unknown path): keep the words
              json = { message: text.slice(0, 200) };
            }
            resolve({ code: res.statusCode ?? 0, json });
          });
        },
      );
      req.on("error", reject);
      req.end(payload);
    });
  }
}

/** The collection path of a type, optionally in one namespace. */
export function collectionPath(apiVersion: string, resource: string, namespace?: string): string {
  const base = apiVersion.includes("/") ? `/apis/${apiVersion}` : `/api/${apiVersion}`;
  return namespace ? `${base}/namespaces/${namespace}/${resource}` : `${base}/${resource}`;
}

export class KubeLoop extends MetacontrollerLoop {
  readonly kube: KubeClient;
  /** Every write the loop sent to the server (create, update, status, delete, finalizer). */
  readonly writes: Write[] = [];
  private readonly types: Type[];

  constructor(
    cluster: Cluster,
    opts: Omit<ConstructorParameters<typeof MetacontrollerLoop>[0], "agentPods" | "parentCacheLag">,
  ) {
    super(opts);
    this.kube = new KubeClient(cluster);
    const seen = new Map<string, Type>();
    for (const hk of HOOK_KINDS) {
      const spec = compositeController(hk).spec as unknown as {
        parentResource: { apiVersion: string; resource: string };
        childResources: { apiVersion: string; resource: string }[];
      };
      for (const t of [spec.parentResource, ...spec.childResources, ...EXTRA]) {
        seen.set(`${t.apiVersion}/${t.resource}`, { ...t, kind: kindOfResource(t.resource) });
      }
    }
    this.types = [...seen.values()];
  }

  private itemPath(o: Obj): string {
    const t = this.types.find((x) => x.apiVersion === o.apiVersion && x.kind === o.kind);
    if (!t) throw new Error(`no resource known for ${o.apiVersion} ${o.kind}`);
    return `${collectionPath(t.apiVersion, t.resource, o.metadata.namespace)}/${o.metadata.name}`;
  }

  private async write(verb: string, path: string, body?: unknown) {
    const r = await this.kube.send(verb, path, body);
    this.writes.push({ verb, path, code: r.code });
    return r;
  }

  /** A user's writes go to the server (kubectl); the in-memory ones would be lost at the next refresh. */
  override apply(_: Obj): Obj {
    throw new Error("KubeLoop: apply with kubectl (test/real/kube/apply.ts), not into the loop's memory");
  }

  override delete(): void {
    throw new Error("KubeLoop: delete with kubectl, not from the loop's memory");
  }

  /** The store is the server: replace the in-memory view with a fresh list of every type. */
  async refresh(): Promise<void> {
    const next: Obj[] = [];
    for (const t of this.types) {
      let r = await this.kube.send("GET", collectionPath(t.apiVersion, t.resource));
      // a CRD just Established may still answer "storage is (re)initializing"; an informer retries
      for (let i = 0; r.code === 429 && i < 60; i++) {
        await new Promise((done) => setTimeout(done, 500));
        r = await this.kube.send("GET", collectionPath(t.apiVersion, t.resource));
      }
      if (r.code !== 200) throw new Error(`list ${t.resource}: ${r.code} ${JSON.stringify(r.json)}`);
      // a List's items carry no apiVersion/kind of their own
      for (const item of r.json.items as Obj[]) next.push({ ...item, apiVersion: t.apiVersion, kind: t.kind });
    }
    this.objects.clear();
    for (const o of next) this.remember(o);
  }

  private remember(o: Obj): void {
    const key = `${o.apiVersion}|${o.kind}|${o.metadata.namespace ?? ""}|${o.metadata.name}`;
    this.objects.set(key, o);
  }

  /** As the loop's settle; a loop that never settles names the writes it kept sending. */
  override async settle(maxRounds = 10): Promise<number> {
    await this.refresh();
    const from = this.writes.length;
    try {
      return await super.settle(maxRounds);
    } catch (e) {
      const last = this.writes.slice(from).slice(-6);
      throw new Error(
        `${(e as Error).message}; last writes: ${last.map((w) => `${w.verb} ${w.path} ${w.code}`).join(", ")}`,
      );
    }
  }

  override async syncParent(parentIn: Obj): Promise<boolean> {
    await this.refresh();
    let live = this.get(parentIn.apiVersion, parentIn.kind, parentIn.metadata.name, parentIn.metadata.namespace);
    if (!live) return false;
    const info = kindInfoByKind(live.kind);
    const cc = info ? compositeController(info.hookKind) : undefined;
    const finalizer = `metacontroller.io/compositecontroller-${cc?.metadata.name}`;
    const hooks = (cc?.spec as { hooks?: Record<string, unknown> } | undefined)?.hooks ?? {};
    let changed = false;
    // With a finalize hook, Metacontroller adds its finalizer before anything else (finalizer.Manager.SyncObject).
    if (hooks.finalize && !live.metadata.deletionTimestamp && !finalizersOf(live).includes(finalizer)) {
      const body = {
        ...live,
        metadata: { ...live.metadata, finalizers: [...finalizersOf(live), finalizer] },
      };
      const r = await this.write("PUT", this.itemPath(live), body);
      if (r.code !== 200) throw new Error(`add finalizer to ${live.kind}/${live.metadata.name}: ${r.code}`);
      live = { ...(r.json as Obj), apiVersion: live.apiVersion, kind: live.kind };
      this.remember(live);
      changed = true;
    }
    return (await super.syncParent(live)) || changed;
  }

  /** Metacontroller compares statuses as decoded maps (reflect.DeepEqual): key order does not count. */
  protected override sameStatus(live: Record<string, unknown> | undefined, status: Record<string, unknown>): boolean {
    return live !== undefined && jsonEqual(live as never, status as never);
  }

  protected override async writeStatus(live: Obj, status: Record<string, unknown>): Promise<void> {
    const r = await this.write("PUT", `${this.itemPath(live)}/status`, { ...live, status });
    // NotFound is swallowed as Metacontroller does; anything else is a finding
    if (r.code === 404) return;
    if (r.code !== 200) {
      this.errors.push(`status ${live.kind}/${live.metadata.name}: ${r.code} ${JSON.stringify(r.json.message)}`);
      return;
    }
    this.remember({ ...(r.json as Obj), apiVersion: live.apiVersion, kind: live.kind });
  }

  /** UID precondition, background propagation: the garbage collector removes what the child owns. */
  protected override async deleteChild(o: Obj): Promise<void> {
    const r = await this.write("DELETE", this.itemPath(o), {
      kind: "DeleteOptions",
      apiVersion: "v1",
      preconditions: { uid: o.metadata.uid },
      propagationPolicy: "Background",
    });
    if (r.code !== 200 && r.code !== 202 && r.code !== 404) {
      this.errors.push(`delete ${o.kind}/${o.metadata.name}: ${r.code} ${JSON.stringify(r.json.message)}`);
    }
  }

  /** finalized: true → our finalizer comes off; the server removes the deleting parent, the GC its children. */
  protected override async releaseParent(live: Obj): Promise<void> {
    const finalizers = finalizersOf(live).filter((f) => !f.startsWith("metacontroller.io/compositecontroller-"));
    const r = await this.write("PUT", this.itemPath(live), { ...live, metadata: { ...live.metadata, finalizers } });
    if (r.code !== 200 && r.code !== 404) {
      this.errors.push(`remove finalizer ${live.kind}/${live.metadata.name}: ${r.code}`);
    }
  }

  protected override async writeChild(o: Obj, existing: Obj | undefined, id: string): Promise<boolean> {
    let r: Awaited<ReturnType<KubeLoop["write"]>>;
    if (!existing) {
      // MakeControllerRef: the loop's controller reference plus blockOwnerDeletion
      const body: Obj = {
        ...o,
        metadata: {
          ...o.metadata,
          ownerReferences: o.metadata.ownerReferences?.map((ref) => ({ ...ref, blockOwnerDeletion: true })),
        },
      };
      for (const k of ["uid", "generation"] as const) delete body.metadata[k];
      r = await this.write("POST", collectionPath(o.apiVersion, this.resourceOf(o), o.metadata.namespace), body);
    } else {
      // the merge carries the observed resourceVersion: a stale view is a 409, as for Metacontroller
      r = await this.write("PUT", this.itemPath(o), o);
    }
    if (r.code !== 200 && r.code !== 201) {
      this.errors.push(`${existing ? "update" : "create"} ${id}: ${r.code} ${JSON.stringify(r.json.message)}`);
      return false;
    }
    this.remember({ ...(r.json as Obj), apiVersion: o.apiVersion, kind: o.kind });
    return true;
  }

  private resourceOf(o: Obj): string {
    const t = this.types.find((x) => x.apiVersion === o.apiVersion && x.kind === o.kind);
    if (!t) throw new Error(`no resource known for ${o.apiVersion} ${o.kind}`);
    return t.resource;
  }
}
