/**
 * The Kubernetes API the pods of the pod runner (pods.ts) talk to: an HTTPS server on the test process's
 * bridge leg (`KUBERNETES_SERVICE_HOST:KUBERNETES_SERVICE_PORT_HTTPS`, port 443), serving the loop's object
 * store. It serves what containerboot and tailscaled's kube state store send
 * (tailscale.com kube/kubeclient/client.go, ipn/store/kubestore/store_kube.go, cmd/containerboot/kube.go;
 * the same calls in v1.96.0):
 *
 *   POST  /apis/authorization.k8s.io/v1/selfsubjectaccessreviews   (CheckSecretPermissions, setEventPerms)
 *   GET   /api/v1/namespaces/<ns>/{secrets,events,configmaps}[/<name>]   (list without a name)
 *   POST  /api/v1/namespaces/<ns>/{secrets,events,configmaps}            (CreateSecret, Event)
 *   PUT   /api/v1/namespaces/<ns>/<resource>/<name>                       (UpdateSecret; 409 on a stale resourceVersion)
 *   PATCH /api/v1/namespaces/<ns>/<resource>/<name>   application/json-patch+json (kubestore updateSecret,
 *         deleteAuthKey: add/replace/remove, a missing path is 422) and application/strategic-merge-patch+json
 *         or merge-patch+json (storeDeviceID, resetContainerbootState: a null value removes the key)
 *
 * Authentication: a bearer token the runner minted for a pod's ServiceAccount (`mintToken`, written into a
 * projected `serviceAccountToken`); it stops working when the pod is gone or the ServiceAccount is deleted
 * (bound tokens). Anything else is a 401. Authorization is RBAC over the store (pod-api-rbac.ts): 403 before
 * any lookup, as kube-apiserver does. Errors are Kubernetes Status bodies with the server's messages. A write
 * lands in the store as the pod's write would (mc.apply; stringData folded into data), gets a new
 * resourceVersion and calls `onWrite` (the runner marks its sync as changed). resourceVersions are this
 * server's: an object changed by anyone else (the loop applying a child) gets a new one when next read.
 */
import { randomBytes } from "node:crypto";
import { createServer, type Server } from "node:https";
import { objKey } from "../../src/emulator/metacontroller/informer.js";
import type { MetacontrollerLoop } from "../../src/emulator/metacontroller/loop.js";
import type { Obj } from "../../src/emulator/metacontroller/types.js";
import { createTestPki, type TestPki } from "../fakes/agent/pki.js";
import { applyJsonPatch, mergePatch, PatchError } from "./pod-api-patch.js";
import {
  forbiddenMessage,
  type KubeUser,
  type RequestAttributes,
  rbacAllows,
  serviceAccountUser,
} from "./pod-api-rbac.js";

/** Core (v1) resources the pods may use, by plural. */
const KINDS: Record<string, string> = { secrets: "Secret", events: "Event", configmaps: "ConfigMap" };
const SSAR_PATH = "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews";

export interface ApiAnswer {
  code: number;
  body: Record<string, unknown>;
}

export interface ApiRequest {
  method: string;
  path: string;
  token?: string;
  contentType?: string;
  body?: string;
}

/** One request the API served, for assertions (never the body: it may hold a node key). */
export interface ApiLogEntry {
  method: string;
  path: string;
  user: string;
  code: number;
}

interface TokenBinding {
  namespace: string;
  serviceAccount: string;
  /** The pod the token is bound to: revoked when it goes. */
  pod: string;
}

const REASONS: Record<number, string> = {
  400: "BadRequest",
  401: "Unauthorized",
  403: "Forbidden",
  404: "NotFound",
  405: "MethodNotAllowed",
  409: "Conflict",
  415: "UnsupportedMediaType",
  422: "Invalid",
};

/** A metav1.Status failure body. */
export function status(
  code: number,
  message: string,
  reason = REASONS[code],
  details?: Record<string, unknown>,
): ApiAnswer {
  return {
    code,
    body: {
      kind: "Status",
      apiVersion: "v1",
      metadata: {},
      status: "Failure",
      message,
      reason,
      ...(details ? { details } : {}),
      code,
    },
  };
}

export class PodApi {
  /** Called after every write into the store. */
  onWrite: () => void = () => undefined;
  readonly log: ApiLogEntry[] = [];
  private readonly tokens = new Map<string, TokenBinding>();
  private readonly versions = new Map<string, { rv: number; fingerprint: string }>();
  private counter = 1000;
  private server: Server | undefined;

  constructor(
    readonly mc: MetacontrollerLoop,
    /** The CA the serving certificate chains to (publish it as kube-root-ca.crt). */
    readonly caPem = "",
  ) {}

  /** A token for `serviceAccount` bound to `pod` (what the kubelet's TokenRequest gives a projection). */
  mintToken(namespace: string, serviceAccount: string, pod: string): string {
    const token = `pod-api.${randomBytes(24).toString("base64url")}`;
    this.tokens.set(token, { namespace, serviceAccount, pod });
    return token;
  }

  /** The pod is gone: its tokens stop authenticating. */
  revokePod(namespace: string, pod: string): void {
    for (const [t, b] of this.tokens) if (b.namespace === namespace && b.pod === pod) this.tokens.delete(t);
  }

  private authenticate(token: string | undefined): KubeUser | undefined {
    const b = token ? this.tokens.get(token) : undefined;
    if (!b) return undefined;
    if (!this.mc.get("v1", "ServiceAccount", b.serviceAccount, b.namespace)) return undefined;
    return serviceAccountUser(b.namespace, b.serviceAccount);
  }

  /** The object as this server shows it: a resourceVersion that changes with every change of the object. */
  private versioned(o: Obj): Obj {
    const { resourceVersion: _, ...meta } = o.metadata as Obj["metadata"] & { resourceVersion?: string };
    const fingerprint = JSON.stringify({ ...o, metadata: meta });
    const k = objKey(o);
    let v = this.versions.get(k);
    if (!v || v.fingerprint !== fingerprint) {
      v = { rv: ++this.counter, fingerprint };
      this.versions.set(k, v);
    }
    return { ...structuredClone(o), metadata: { ...structuredClone(meta), resourceVersion: String(v.rv) } };
  }

  /** Stores a pod's write: stringData folded into data, no resourceVersion kept, a new version assigned. */
  private store(o: Obj): Obj {
    const obj = structuredClone(o) as Obj & { stringData?: Record<string, string> };
    delete (obj.metadata as { resourceVersion?: string }).resourceVersion;
    if (obj.stringData) {
      const data = { ...(obj.data ?? {}) } as Record<string, string>;
      for (const [k, v] of Object.entries(obj.stringData)) data[k] = Buffer.from(v).toString("base64");
      obj.data = data;
      delete obj.stringData;
    }
    const stored = this.mc.apply(obj);
    this.onWrite();
    return this.versioned(stored);
  }

  /** Serves one request (the HTTPS server's handler; tests call it directly). */
  handle(req: ApiRequest): ApiAnswer {
    const user = this.authenticate(req.token);
    const answer = user ? this.route(user, req) : status(401, "Unauthorized");
    this.log.push({ method: req.method, path: req.path, user: user?.name ?? "", code: answer.code });
    return answer;
  }

  private route(user: KubeUser, req: ApiRequest): ApiAnswer {
    const [path, query = ""] = req.path.split("?");
    // a dry run must not write; nothing the pods run sends one, so it is refused rather than half-modelled
    if (new URLSearchParams(query).has("dryRun")) return status(400, "the pod API does not support dryRun");
    if (path === SSAR_PATH) {
      if (req.method !== "POST") return status(405, `the server does not allow this method on the requested resource`);
      return this.accessReview(user, req.body);
    }
    const m = /^\/api\/v1\/namespaces\/([a-z0-9-]+)\/([a-z]+)(?:\/([^/]+))?$/.exec(path);
    if (!m || !KINDS[m[2]]) return status(404, "the server could not find the requested resource");
    // the API server decodes path segments before authorizing ("db%2Dx" is "db-x"), so RBAC and the lookup agree
    let name: string | undefined;
    try {
      name = m[3] === undefined ? undefined : decodeURIComponent(m[3]);
    } catch {
      return status(400, `invalid resource name ${JSON.stringify(m[3])}`);
    }
    const [namespace, resource] = [m[1], m[2]];
    const verbs: Record<string, string> = name
      ? { GET: "get", PUT: "update", PATCH: "patch", DELETE: "delete" }
      : { GET: "list", POST: "create" };
    const verb = verbs[req.method];
    if (!verb) return status(405, "the server does not allow this method on the requested resource");
    const attrs: RequestAttributes = { namespace, verb, apiGroup: "", resource, name };
    if (!rbacAllows(this.allObjects(), user, attrs).allowed) {
      return status(403, forbiddenMessage(user, attrs), "Forbidden", { ...(name ? { name } : {}), kind: resource });
    }
    const kind = KINDS[resource];
    if (verb === "list") return this.list(namespace, kind);
    let body: Obj | undefined;
    try {
      body = req.body ? (JSON.parse(req.body) as Obj) : undefined;
    } catch (err) {
      return status(400, `error decoding request body: ${(err as Error).message}`);
    }
    if (verb === "create" || name === undefined) return this.create(namespace, resource, kind, body);
    const live = this.mc.get("v1", kind, name, namespace);
    const notFound = status(404, `${resource} "${name}" not found`, "NotFound", { name, kind: resource });
    if (verb === "delete") return status(405, "the pod API does not delete");
    if (!live) return notFound;
    if (verb === "get") return { code: 200, body: this.versioned(live) as unknown as Record<string, unknown> };
    if (verb === "update") return this.update(live, resource, name, body);
    return this.patch(live, resource, name, req.contentType ?? "", body);
  }

  private allObjects(): Obj[] {
    return [...this.mc.objects.values()];
  }

  private accessReview(user: KubeUser, raw: string | undefined): ApiAnswer {
    const review = JSON.parse(raw ?? "{}") as { spec?: { resourceAttributes?: Record<string, string> } };
    const ra = review.spec?.resourceAttributes ?? {};
    const attrs: RequestAttributes = {
      namespace: ra.namespace ?? "",
      verb: ra.verb ?? "",
      apiGroup: ra.group ?? "",
      resource: ra.resource ?? "",
      subresource: ra.subresource || undefined,
      name: ra.name || undefined,
    };
    const verdict = rbacAllows(this.allObjects(), user, attrs);
    return {
      code: 201,
      body: {
        kind: "SelfSubjectAccessReview",
        apiVersion: "authorization.k8s.io/v1",
        metadata: { creationTimestamp: null },
        spec: review.spec ?? {},
        status: { allowed: verdict.allowed, ...(verdict.reason ? { reason: verdict.reason } : {}) },
      },
    };
  }

  private list(namespace: string, kind: string): ApiAnswer {
    const items = this.mc
      .list(kind)
      .filter((o) => o.metadata.namespace === namespace)
      .map((o) => this.versioned(o));
    return {
      code: 200,
      body: { kind: `${kind}List`, apiVersion: "v1", metadata: { resourceVersion: String(this.counter) }, items },
    };
  }

  private create(namespace: string, resource: string, kind: string, body: Obj | undefined): ApiAnswer {
    const name = body?.metadata?.name;
    if (!body || !name) return status(422, `${kind} "" is invalid: metadata.name: Required value: name is required`);
    if (body.metadata.namespace && body.metadata.namespace !== namespace)
      return status(400, "the namespace of the provided object does not match the namespace sent on the request");
    if (this.mc.get("v1", kind, name, namespace))
      return status(409, `${resource} "${name}" already exists`, "AlreadyExists", { name, kind: resource });
    const created = this.store({
      ...body,
      apiVersion: "v1",
      kind,
      metadata: { ...body.metadata, namespace, creationTimestamp: new Date().toISOString(), uid: undefined },
    } as Obj);
    return { code: 201, body: created as unknown as Record<string, unknown> };
  }

  private update(live: Obj, resource: string, name: string, body: Obj | undefined): ApiAnswer {
    if (!body || body.metadata?.name !== name)
      return status(
        400,
        `the name of the object (${body?.metadata?.name}) does not match the name on the URL (${name})`,
      );
    const stale = this.conflict(live, resource, name, (body.metadata as { resourceVersion?: string }).resourceVersion);
    if (stale) return stale;
    const next = {
      ...body,
      apiVersion: live.apiVersion,
      kind: live.kind,
      metadata: {
        ...body.metadata,
        namespace: live.metadata.namespace,
        uid: live.metadata.uid,
        creationTimestamp: live.metadata.creationTimestamp,
      },
    } as Obj;
    return { code: 200, body: this.store(next) as unknown as Record<string, unknown> };
  }

  /** 409 unless `sent` is absent or the object's current resourceVersion (a PUT's or a patch's precondition). */
  private conflict(live: Obj, resource: string, name: string, sent: string | undefined): ApiAnswer | undefined {
    const current = (this.versioned(live).metadata as { resourceVersion: string }).resourceVersion;
    if (!sent || sent === current) return undefined;
    return status(
      409,
      `Operation cannot be fulfilled on ${resource} "${name}": the object has been modified; please apply your changes to the latest version and try again`,
      "Conflict",
      { name, kind: resource },
    );
  }

  private patch(live: Obj, resource: string, name: string, contentType: string, body: unknown): ApiAnswer {
    const type = contentType.split(";")[0].trim();
    // the patch applies to the object as served (with its resourceVersion, which then acts as a precondition)
    const view = this.versioned(live);
    let next: unknown;
    try {
      if (type === "application/json-patch+json") next = applyJsonPatch(view, body);
      else if (type === "application/strategic-merge-patch+json" || type === "application/merge-patch+json")
        next = mergePatch(view, body);
      else
        return status(
          415,
          `the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml, application/strategic-merge-patch+json`,
        );
    } catch (err) {
      if (err instanceof PatchError) return status(422, err.message, "Invalid", { name, kind: resource });
      throw err;
    }
    const o = next as Obj;
    if (
      !o ||
      typeof o !== "object" ||
      !o.metadata ||
      o.metadata.name !== name ||
      o.metadata.namespace !== live.metadata.namespace
    )
      return status(400, "the name or namespace of the patched object does not match the URL");
    const stale = this.conflict(live, resource, name, (o.metadata as { resourceVersion?: string }).resourceVersion);
    if (stale) return stale;
    // what a patch cannot change: the type (a patch is no way to make an object of another kind) and identity
    const fixed = {
      ...o,
      apiVersion: live.apiVersion,
      kind: live.kind,
      metadata: { ...o.metadata, uid: live.metadata.uid, creationTimestamp: live.metadata.creationTimestamp },
    } as Obj;
    return { code: 200, body: this.store(fixed) as unknown as Record<string, unknown> };
  }

  /** Listens with HTTPS on host:port (certificate for `host` from `pki`, a new test CA when none). */
  static async start(mc: MetacontrollerLoop, opts: { host: string; port?: number; pki?: TestPki }): Promise<PodApi> {
    const own = opts.pki ? undefined : await createTestPki();
    const pki = opts.pki ?? (own as TestPki);
    const cert = await pki.issue({ names: ["kubernetes.default.svc"], ips: [opts.host] });
    const api = new PodApi(mc, pki.caPem);
    const server = createServer({ key: cert.keyPem, cert: cert.certPem }, (req, res) => {
      const chunks: Buffer[] = [];
      req.on("data", (c: Buffer) => chunks.push(c));
      req.on("end", () => {
        const auth = req.headers.authorization ?? "";
        let answer: ApiAnswer;
        try {
          answer = api.handle({
            method: req.method ?? "GET",
            path: req.url ?? "/",
            token: auth.startsWith("Bearer ") ? auth.slice(7) : undefined,
            contentType: req.headers["content-type"],
            body: chunks.length ? Buffer.concat(chunks).toString("utf8") : undefined,
          });
        } catch (err) {
          answer = status(500, `pod API: ${(err as Error).message}`, "InternalError");
        }
        res.writeHead(answer.code, { "content-type": "application/json" });
        res.end(JSON.stringify(answer.body));
      });
    });
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(opts.port ?? 443, opts.host, () => resolve());
    });
    api.server = server;
    api.cleanup = async () => {
      await own?.cleanup();
    };
    return api;
  }

  private cleanup: () => Promise<void> = async () => undefined;

  async close(): Promise<void> {
    const s = this.server;
    this.server = undefined;
    if (s) {
      s.closeAllConnections();
      await new Promise<void>((resolve) => s.close(() => resolve()));
    }
    await this.cleanup();
  }
}
