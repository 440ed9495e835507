/**
 * The pod API's authorization and writes without a network (pod-api.ts `handle`): two replicas' ServiceAccounts
 * in one namespace, each bound by name to its own state Secret as the operator's per-replica Role does
 * (get/update/patch, resourceNames [<r>-state]). Replica A may not read, patch, update, create or list what
 * is not its own, a token that is not one the runner minted is a 401, and the writes land in the loop's
 * store with resourceVersions that catch a stale PUT.
 */
import assert from "node:assert/strict";
import { beforeEach, describe, test } from "node:test";
import type { Obj } from "../../src/emulator/metacontroller/types.js";
import { FakeMetacontroller } from "../fakes/metacontroller.js";
import { type ApiAnswer, PodApi } from "./pod-api.js";

const NS = "shop";
const SSAR = "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews";
const secretPath = (name: string) => `/api/v1/namespaces/${NS}/secrets/${name}`;
const b64 = (s: string) => Buffer.from(s).toString("base64");

function replicaObjects(r: string): Obj[] {
  return [
    { apiVersion: "v1", kind: "ServiceAccount", metadata: { name: r, namespace: NS } },
    { apiVersion: "v1", kind: "Secret", metadata: { name: `${r}-state`, namespace: NS } },
    {
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "Role",
      metadata: { name: r, namespace: NS },
      rules: [
        { apiGroups: [""], resources: ["secrets"], resourceNames: [`${r}-state`], verbs: ["get", "update", "patch"] },
      ],
    } as Obj,
    {
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "RoleBinding",
      metadata: { name: r, namespace: NS },
      roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "Role", name: r },
      subjects: [{ kind: "ServiceAccount", name: r, namespace: NS }],
    } as Obj,
  ];
}

const forbidden = (verb: string, what: string, who = "db-agent-0") =>
  `${what} is forbidden: User "system:serviceaccount:${NS}:${who}" cannot ${verb} resource "secrets" in API group "" in the namespace "${NS}"`;

describe("pod API: RBAC over the store", () => {
  let mc: FakeMetacontroller;
  let api: PodApi;
  let tokenA: string;
  let writes: number;
  const call = (method: string, path: string, body?: unknown, contentType?: string, token = tokenA): ApiAnswer =>
    api.handle({ method, path, token, contentType, body: body === undefined ? undefined : JSON.stringify(body) });
  const review = (verb: string, name?: string, resource = "secrets", token = tokenA) =>
    call(
      "POST",
      SSAR,
      {
        apiVersion: "authorization.k8s.io/v1",
        kind: "SelfSubjectAccessReview",
        spec: { resourceAttributes: { namespace: NS, verb, resource, ...(name ? { name } : {}) } },
      },
      "application/json",
      token,
    );

  beforeEach(() => {
    mc = new FakeMetacontroller({ app: undefined as never, deploymentsAvailable: false });
    for (const o of [...replicaObjects("db-agent-0"), ...replicaObjects("db-agent-1")]) mc.apply(o);
    mc.apply({
      apiVersion: "v1",
      kind: "Secret",
      metadata: { name: "db-authkey", namespace: NS },
      data: { authkey: b64("k") },
    });
    api = new PodApi(mc);
    writes = 0;
    api.onWrite = () => writes++;
    tokenA = api.mintToken(NS, "db-agent-0", "db-agent-0");
  });

  test("a SelfSubjectAccessReview answers what containerboot's CheckSecretPermissions asks, name by name", () => {
    const allowed = (verb: string, name?: string, resource?: string) =>
      (review(verb, name, resource).body.status as { allowed: boolean }).allowed;
    assert.deepEqual(
      ["get", "update", "patch", "create"].map((v) => allowed(v, "db-agent-0-state")),
      [true, true, true, false],
    );
    assert.deepEqual(
      ["get", "update", "patch"].map((v) => allowed(v, "db-agent-1-state")),
      [false, false, false],
    );
    assert.equal(allowed("get", "db-authkey"), false);
    assert.equal(allowed("list"), false);
    assert.equal(allowed("create", undefined, "events"), false);
    const ok = review("get", "db-agent-0-state");
    assert.equal(ok.code, 201);
    assert.deepEqual(ok.body.status, {
      allowed: true,
      reason: 'RBAC: allowed by RoleBinding "db-agent-0/shop" of Role "db-agent-0" to ServiceAccount "db-agent-0/shop"',
    });
  });

  test("replica A cannot get, update or patch replica B's state Secret, nor the auth key (403 before any lookup)", () => {
    for (const [method, verb, body, type] of [
      ["GET", "get", undefined, undefined],
      ["PUT", "update", { metadata: { name: "db-agent-1-state" } }, "application/json"],
      ["PATCH", "patch", [{ op: "add", path: "/data", value: { x: b64("y") } }], "application/json-patch+json"],
    ] as const) {
      const r = call(method, secretPath("db-agent-1-state"), body, type);
      assert.equal(r.code, 403, `${method}: ${JSON.stringify(r.body)}`);
      assert.equal(r.body.message, forbidden(verb, 'secrets "db-agent-1-state"'));
      assert.equal(r.body.reason, "Forbidden");
      assert.deepEqual(r.body.details, { name: "db-agent-1-state", kind: "secrets" });
    }
    assert.equal(call("GET", secretPath("db-authkey")).body.message, forbidden("get", 'secrets "db-authkey"'));
    // a name that does not exist is forbidden too, not "not found": nothing is learnt about other Secrets
    assert.equal(call("GET", secretPath("nope")).code, 403);
    assert.equal(mc.get("v1", "Secret", "db-agent-1-state", NS)?.data, undefined);
    assert.equal(writes, 0);
  });

  test("replica A cannot create or list Secrets: resourceNames never match a request without a name", () => {
    const created = call("POST", `/api/v1/namespaces/${NS}/secrets`, { metadata: { name: "db-agent-0-state2" } });
    assert.equal(created.code, 403);
    assert.equal(created.body.message, forbidden("create", "secrets"));
    const listed = call("GET", `/api/v1/namespaces/${NS}/secrets`);
    assert.equal(listed.code, 403);
    assert.equal(listed.body.message, forbidden("list", "secrets"));
    // even a Role that names the Secret with verb create does not let a POST through
    const role = mc.get("rbac.authorization.k8s.io/v1", "Role", "db-agent-0", NS) as Obj & {
      rules: { verbs: string[] }[];
    };
    role.rules[0].verbs.push("create");
    assert.equal((review("create", "db-agent-0-state").body.status as { allowed: boolean }).allowed, true);
    assert.equal(
      call("POST", `/api/v1/namespaces/${NS}/secrets`, { metadata: { name: "db-agent-0-state" } }).code,
      403,
    );
    assert.equal(mc.get("v1", "Secret", "db-agent-0-state2", NS), undefined);
  });

  test("other namespaces, other tokens: forbidden in a namespace without a binding, 401 for unknown or revoked tokens", () => {
    const other = call("GET", "/api/v1/namespaces/other/secrets/db-agent-0-state");
    assert.equal(other.code, 403);
    assert.equal(
      other.body.message,
      'secrets "db-agent-0-state" is forbidden: User "system:serviceaccount:shop:db-agent-0" cannot get resource "secrets" in API group "" in the namespace "other"',
    );
    for (const token of ["real-world-test-token.not-a-jwt", "", `${tokenA}x`]) {
      const r = call("GET", secretPath("db-agent-0-state"), undefined, undefined, token);
      assert.equal(r.code, 401);
      assert.deepEqual(r.body, {
        kind: "Status",
        apiVersion: "v1",
        metadata: {},
        status: "Failure",
        message: "Unauthorized",
        reason: "Unauthorized",
        code: 401,
      });
    }
    // a bound token dies with its pod, and with its ServiceAccount
    const tokenB = api.mintToken(NS, "db-agent-1", "db-agent-1");
    assert.equal(call("GET", secretPath("db-agent-1-state"), undefined, undefined, tokenB).code, 200);
    api.revokePod(NS, "db-agent-1");
    assert.equal(call("GET", secretPath("db-agent-1-state"), undefined, undefined, tokenB).code, 401);
    assert.equal(call("GET", secretPath("db-agent-0-state")).code, 200);
    mc.delete("v1", "ServiceAccount", "db-agent-0", NS);
    assert.equal(call("GET", secretPath("db-agent-0-state")).code, 401);
  });

  test("a RoleBinding's ServiceAccount subject without a namespace is the binding's namespace; a missing Role grants nothing", () => {
    const rb = mc.get("rbac.authorization.k8s.io/v1", "RoleBinding", "db-agent-0", NS) as Obj & {
      subjects: { namespace?: string }[];
      roleRef: { name: string };
    };
    delete rb.subjects[0].namespace;
    assert.equal(call("GET", secretPath("db-agent-0-state")).code, 200);
    rb.roleRef.name = "missing";
    assert.equal(call("GET", secretPath("db-agent-0-state")).code, 403);
  });

  test("its own Secret: the kubestore's JSON patches, containerboot's merge patches, PUT with resourceVersion", () => {
    const add = call(
      "PATCH",
      secretPath("db-agent-0-state"),
      [{ op: "add", path: "/data", value: { _machinekey: b64("mkey") } }],
      "application/json-patch+json",
    );
    assert.equal(add.code, 200, JSON.stringify(add.body));
    call(
      "PATCH",
      `${secretPath("db-agent-0-state")}?fieldManager=tailscale-container`,
      { metadata: { name: "db-agent-0-state", namespace: NS }, data: { device_id: b64("7"), https_endpoint: null } },
      "application/strategic-merge-patch+json",
    );
    const stored = mc.get("v1", "Secret", "db-agent-0-state", NS);
    assert.deepEqual(stored?.data, { _machinekey: b64("mkey"), device_id: b64("7") });
    assert.equal(writes, 2);
    // removing a key that is not there: 422, which containerboot's deleteAuthKey takes as "already gone"
    const gone = call(
      "PATCH",
      secretPath("db-agent-0-state"),
      [{ op: "remove", path: "/data/authkey" }],
      "application/json-patch+json",
    );
    assert.equal(gone.code, 422);
    assert.equal(gone.body.reason, "Invalid");
    // PUT: the version read is accepted once; the loop changing the object in between makes it stale
    const read = call("GET", secretPath("db-agent-0-state")).body as unknown as Obj;
    const rv = (read.metadata as { resourceVersion: string }).resourceVersion;
    assert.match(rv, /^\d+$/);
    mc.apply({ ...(stored as Obj), metadata: { ...(stored as Obj).metadata, labels: { by: "metacontroller" } } });
    const stale = call("PUT", secretPath("db-agent-0-state"), { ...read, data: { ...read.data, x: b64("1") } });
    assert.equal(stale.code, 409);
    assert.equal(
      stale.body.message,
      'Operation cannot be fulfilled on secrets "db-agent-0-state": the object has been modified; please apply your changes to the latest version and try again',
    );
    const fresh = call("GET", secretPath("db-agent-0-state")).body as unknown as Obj;
    assert.notEqual((fresh.metadata as { resourceVersion: string }).resourceVersion, rv);
    const put = call("PUT", secretPath("db-agent-0-state"), { ...fresh, data: { ...fresh.data, x: b64("1") } });
    assert.equal(put.code, 200);
    const after = mc.get("v1", "Secret", "db-agent-0-state", NS) as Obj;
    assert.deepEqual(after.metadata.labels, { by: "metacontroller" });
    assert.equal(after.data?.x, b64("1"));
    assert.equal((after.metadata as { resourceVersion?: string }).resourceVersion, undefined);
    assert.equal(after.metadata.uid, (stored as Obj).metadata.uid);
    // a PUT of a Secret that is not there is a 404 (no create on update for Secrets)
    mc.delete("v1", "Secret", "db-agent-0-state", NS);
    const missing = call("PUT", secretPath("db-agent-0-state"), fresh);
    assert.equal(missing.code, 404);
    assert.equal(missing.body.message, 'secrets "db-agent-0-state" not found');
  });
  test("a patch changes neither the object's kind nor its identity, and honours a resourceVersion it carries", () => {
    const uid = mc.get("v1", "Secret", "db-agent-0-state", NS)?.metadata.uid;
    const r = call(
      "PATCH",
      secretPath("db-agent-0-state"),
      [
        { op: "add", path: "/kind", value: "ConfigMap" },
        { op: "add", path: "/metadata/uid", value: "forged" },
        { op: "add", path: "/data", value: { a: b64("1") } },
      ],
      "application/json-patch+json",
    );
    assert.equal(r.code, 200);
    assert.equal(mc.get("v1", "ConfigMap", "db-agent-0-state", NS), undefined);
    const stored = mc.get("v1", "Secret", "db-agent-0-state", NS) as Obj;
    assert.equal(stored.kind, "Secret");
    assert.equal(stored.metadata.uid, uid);
    assert.deepEqual(stored.data, { a: b64("1") });
    const rv = (r.body.metadata as { resourceVersion: string }).resourceVersion;
    const stale = call(
      "PATCH",
      secretPath("db-agent-0-state"),
      { metadata: { resourceVersion: String(Number(rv) - 1) }, data: { a: b64("2") } },
      "application/merge-patch+json",
    );
    assert.equal(stale.code, 409);
    assert.equal(stored.data?.a, b64("1"));
    const ok = call(
      "PATCH",
      secretPath("db-agent-0-state"),
      { metadata: { resourceVersion: rv }, data: { a: b64("2") } },
      "application/merge-patch+json",
    );
    assert.equal(ok.code, 200);
    assert.equal(mc.get("v1", "Secret", "db-agent-0-state", NS)?.data?.a, b64("2"));
  });

  test("a percent-encoded name is authorized and looked up as the API server decodes it; a dry run writes nothing", () => {
    assert.equal(call("GET", `/api/v1/namespaces/${NS}/secrets/db-agent-0%2Dstate`).code, 200);
    const other = call("GET", `/api/v1/namespaces/${NS}/secrets/db-agent-1%2Dstate`);
    assert.equal(other.code, 403);
    assert.equal(other.body.message, forbidden("get", 'secrets "db-agent-1-state"'));
    const dry = call(
      "PATCH",
      `${secretPath("db-agent-0-state")}?dryRun=All`,
      { data: { a: b64("1") } },
      "application/merge-patch+json",
    );
    assert.equal(dry.code, 400);
    assert.equal(dry.body.message, "the pod API does not support dryRun");
    assert.equal(mc.get("v1", "Secret", "db-agent-0-state", NS)?.data, undefined);
    assert.equal(writes, 0);
  });

  test("bindings: a Role of that name in another namespace, a ClusterRoleBinding to a Role grant nothing; groups and ClusterRoles do", () => {
    const rules = [{ apiGroups: ["*"], resources: ["*"], verbs: ["*"] }];
    const get1 = () => call("GET", secretPath("db-agent-1-state")).code;
    mc.apply({
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "Role",
      metadata: { name: "all", namespace: "other" },
      rules,
    } as Obj);
    const bind = (kind: string, name: string, roleKind: string, subject: Record<string, string>, ns?: string) =>
      mc.apply({
        apiVersion: "rbac.authorization.k8s.io/v1",
        kind,
        metadata: { name, ...(ns ? { namespace: ns } : {}) },
        roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: roleKind, name: "all" },
        subjects: [subject],
      } as Obj);
    const sa = { kind: "ServiceAccount", name: "db-agent-0", namespace: NS };
    bind("RoleBinding", "b1", "Role", sa, NS);
    assert.equal(get1(), 403, "the binding's Role is looked up in the binding's namespace");
    bind("ClusterRoleBinding", "b2", "Role", sa);
    assert.equal(get1(), 403, "a ClusterRoleBinding grants only ClusterRoles");
    mc.apply({
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "ClusterRole",
      metadata: { name: "all" },
      rules,
    } as Obj);
    bind("RoleBinding", "b3", "ClusterRole", { kind: "Group", name: `system:serviceaccounts:${NS}` }, NS);
    assert.equal(get1(), 200, "a ClusterRole bound in the namespace to the namespace's ServiceAccounts group");
    assert.equal(call("GET", "/api/v1/namespaces/other/secrets/x").code, 403, "only in the binding's namespace");
  });
  test("a PUT replaces metadata: one sent through tailscale's kubeapi.ObjectMeta (no ownerReferences field) drops the owner", () => {
    const owned = mc.get("v1", "Secret", "db-agent-0-state", NS) as Obj;
    owned.metadata.ownerReferences = [{ apiVersion: "apps/v1", kind: "X", name: "p", uid: "u", controller: true }];
    // a patch keeps the owner: the loop's next sync observes the Secret, with the pod's data, as the parent's child
    call(
      "PATCH",
      secretPath("db-agent-0-state"),
      [{ op: "add", path: "/data", value: { device_id: b64("7") } }],
      "application/json-patch+json",
    );
    const parent = { apiVersion: "apps/v1", kind: "X", metadata: { name: "p", namespace: NS, uid: "u" } } as Obj;
    assert.deepEqual(
      mc.childrenOf(parent).map((c) => `${c.kind}/${c.metadata.name} ${JSON.stringify(c.data)}`),
      [`Secret/db-agent-0-state {"device_id":"${b64("7")}"}`],
    );
    const read = call("GET", secretPath("db-agent-0-state")).body as unknown as Obj;
    assert.deepEqual(
      read.metadata.ownerReferences?.map((r) => r.uid),
      ["u"],
    );
    // what kubestore's GET+PUT path (no patch permission) sends back: tailscale.com kube/kubeapi/api.go ObjectMeta
    // has name, namespace, uid, resourceVersion, generation, creationTimestamp, labels and annotations only
    const { ownerReferences: _, ...meta } = read.metadata;
    const put = call("PUT", secretPath("db-agent-0-state"), { ...read, metadata: meta, data: { a: b64("1") } });
    assert.equal(put.code, 200);
    assert.equal(mc.get("v1", "Secret", "db-agent-0-state", NS)?.metadata.ownerReferences, undefined);
    assert.deepEqual(mc.childrenOf(parent), []);
  });
});
