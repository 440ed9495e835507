import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { ConditionInput } from "../../../../src/conditions/condition.js";
import { TailnetReason as R, TAILNET_REASONS } from "../../../../src/conditions/tables/tailnet.js";
import type { HsPolicy } from "../../../../src/headscale/types.js";
import type { K8sObject } from "../../../../src/k8s/objects.js";
import { decideTailnet, type TailnetDecideInput } from "../../../../src/kinds/composite/tailnet/decide.js";
import { tailnetModule } from "../../../../src/kinds/composite/tailnet/index.js";
import { writeFailureCondition } from "../../../../src/kinds/composite/tailnet/write.js";
import { secretValue } from "../../../../src/kinds/shared/secrets.js";
import { hashOfLivePolicy } from "../../../../src/policy/canonical.js";
import { markedPolicyText } from "../../../../src/policy/marker.js";
import { mergePolicy, prettyPolicyText } from "../../../../src/policy/merge.js";
import {
  type BaseData,
  baseLine,
  type SectionData,
  sectionLine,
  sharedPolicyText,
  unionOf,
} from "../../../../src/policy/sections.js";
import { syncRequest } from "../../../fixtures/hooks.js";
import { quietDeps } from "../../../helpers/deps.js";
import { assertCoversTable } from "../../../helpers/reason-coverage.js";
import {
  API_KEY,
  apiKeySecret,
  BASE,
  baseConfigMap,
  checkFail,
  databaseDown401,
  egress,
  fail,
  failingHs,
  gateway,
  healthyHs,
  healthyRelated,
  hsError,
  hsNode,
  hsUser,
  ingress,
  LIVE_POLICY,
  NOW,
  OWN_KEY,
  ok,
  refused,
  serverError,
  site,
  tailnet,
  tailnetSpec,
  timedOut,
  unauthorized,
} from "./fixtures.js";
import { conditionOf, decided, type Given, input, reasons } from "./world.js";

/** The plan and the decision of one world. */
function run(g: Given = {}) {
  const i = input(g);
  return { plan: i.plan, decision: decideTailnet(i) };
}

const dryRun = tailnetSpec({
  policy: { mode: "DryRun", baseConfigMapRef: { namespace: "tailnet-system", name: "tailnet-policy-base" } },
});
const withSplitDNS = tailnetSpec({
  dns: { baseDomain: "ts.example.com", splitDNS: { domains: ["svc.cluster.local"] } },
});
const rejectedByCheck = checkFail(
  hsError({
    operation: "POST /api/v1/policy/check",
    status: 400,
    grpcCode: 3,
    detail: 'parsing policy: src=tag not found: "tag:nope"',
    classification: "policyInvalid",
  }),
);
const putRejected = hsError({
  operation: "PUT /api/v1/policy",
  status: 500,
  grpcCode: 2,
  detail: 'setting policy: parsing policy: src=tag not found: "tag:nope"',
  classification: "policyInvalid",
});
/** Refused after 0.29 swapped the policy manager (hscontrol/grpcv1.go SetPolicy: the SSH check comes later). */
const putSshRejected = hsError({
  operation: "PUT /api/v1/policy",
  status: 500,
  grpcCode: 2,
  detail: "verifying SSH rules: compiling SSH policy: parsing SSH policy, unknown action",
  classification: "policyInvalid",
});
/** The insert fails after the swap. */
const putLocked = hsError({
  operation: "PUT /api/v1/policy",
  status: 500,
  grpcCode: 2,
  detail: "database is locked (5) (SQLITE_BUSY)",
});
/** No base policy configured (spec.policy has no baseConfigMapRef). */
const noBase = tailnetSpec({ policy: { mode: "Apply", tagOwners: ["group:platform"] } });
const noBaseRelated = () => healthyRelated().filter((o) => o.kind !== "ConfigMap");
/** A live policy written by hand: rules the render without a base would drop. */
const HAND_WRITTEN = {
  policy: JSON.stringify({
    groups: { "group:eng": ["alice@"], "group:ops": ["bob@"] },
    hosts: { nas: "192.168.1.10" },
    acls: [
      { action: "accept", src: ["group:eng"], dst: ["nas:445"] },
      { action: "accept", src: ["group:ops"], dst: ["*:22"] },
    ],
    ssh: [{ action: "accept", src: ["group:ops"], dst: ["autogroup:self"], users: ["root"] }],
  }),
  updatedAt: "2026-11-01T00:00:00Z",
};
const LIVE_HASH = (() => {
  const h = hashOfLivePolicy(LIVE_POLICY.policy);
  if (!h.ok) throw new Error("LIVE_POLICY must parse");
  return h.hash;
})();

// Another cluster's section, as that cluster's operator writes it (policy/sections.ts).
const EARLY = "2026-01-01T00:00:00Z";
const LATE = "2026-12-01T00:00:00Z";
const OTHER_BASE: BaseData = {
  by: "b/home",
  text: '{"acls":[{"action":"accept","src":["group:b"],"dst":["*:*"]}],"groups":{"group:b":["carol@"]}}',
};
function sectionB(tags: Record<string, string>): SectionData {
  const tagOwners = Object.fromEntries(Object.keys(tags).map((t) => [t, ["group:platform"]]));
  const grants = Object.keys(tags).map((t) => ({ src: ["group:eng"], dst: [t], ip: ["tcp:443"] }));
  return { id: "b/home", uid: "uid-b", tags, names: {}, gen: { tagOwners, grants, routes: {}, exitNode: [] } };
}
function liveWith(sections: SectionData[], base?: BaseData): HsPolicy {
  const meta = [...(base ? [baseLine(base)] : []), ...sections.map(sectionLine)].join("\n");
  const merged = mergePolicy(base?.text, unionOf(sections));
  if (!merged.ok) throw new Error(merged.message);
  return { policy: sharedPolicyText(merged.hash, meta, prettyPolicyText(merged.policy)), updatedAt: NOW.toISOString() };
}
/** The first tag this Tailnet's objects generate. */
const OWN_TAG = (() => {
  const r = input({ shared: {} }).observed.render;
  const tag = r.ok ? Object.keys(r.candidate.shared?.own.tags ?? {})[0] : undefined;
  if (!tag) throw new Error("the world generates no tag");
  return tag;
})();
/** A policy marked by an operator before sections: the marker, no base or section line. */
const LEGACY: HsPolicy = (() => {
  const body = '{"acls":[{"action":"accept","src":["*"],"dst":["*:*"]}]}';
  const h = hashOfLivePolicy(body);
  if (!h.ok) throw new Error("LEGACY must parse");
  return { policy: markedPolicyText(h.hash, body), updatedAt: NOW.toISOString() };
})();

interface Row {
  name: string;
  input: TailnetDecideInput;
  expect: Record<string, string>;
}

// One row per reason of the Tailnet row of the reasons page, in its order, plus "all healthy".
const rows: Row[] = [
  {
    name: "all healthy: the render differs from the live policy and is written",
    input: input(),
    expect: {
      ApiReachable: R.Reachable,
      ApiKeyValid: R.Valid,
      HeadscaleCompatible: R.Compatible,
      PolicyMode: R.Database,
      SplitDNS: R.NotConfigured,
      UsersUnique: R.Unique,
      PolicyRendered: R.Rendered,
      PolicyApplied: R.Applied,
    },
  },
  {
    name: "Headscale refuses connections",
    input: input({ hs: failingHs(refused) }),
    expect: {
      ApiReachable: R.Unreachable,
      ApiKeyValid: R.Error,
      HeadscaleCompatible: R.CannotVerify,
      PolicyMode: R.CannotVerify,
      UsersUnique: R.CannotVerify,
      PolicyRendered: R.CannotVerify,
      PolicyApplied: R.ApplyFailed,
    },
  },
  {
    name: "Headscale answers but its database is down",
    input: input({ hs: healthyHs({ health: ok({ databaseConnectivity: false }) }) }),
    expect: { ApiReachable: R.Unhealthy, ApiKeyValid: R.Valid, PolicyApplied: R.ApplyFailed },
  },
  {
    name: "GET /api/v1/health fails with Headscale's database error",
    input: input({
      hs: healthyHs({
        health: fail(
          hsError({
            operation: "GET /api/v1/health",
            status: 500,
            detail: "pinging database: sql: database is closed",
            classification: "databaseDown",
          }),
        ),
      }),
    }),
    expect: { ApiReachable: R.Unhealthy, ApiKeyValid: R.Valid, PolicyApplied: R.ApplyFailed },
  },
  {
    name: "the database is down: every call is a 401 while GET /health fails",
    input: input({ hs: failingHs(databaseDown401) }),
    expect: {
      ApiReachable: R.Unhealthy,
      ApiKeyValid: R.Error,
      HeadscaleCompatible: R.CannotVerify,
      PolicyMode: R.CannotVerify,
      UsersUnique: R.CannotVerify,
      PolicyApplied: R.ApplyFailed,
    },
  },
  {
    name: "every request times out",
    input: input({ hs: failingHs(timedOut) }),
    expect: { ApiReachable: R.Unreachable, ApiKeyValid: R.Error, PolicyApplied: R.ApplyFailed },
  },
  {
    name: "Headscale answers 401 to the API key",
    input: input({ hs: failingHs(unauthorized) }),
    expect: {
      ApiReachable: R.Reachable,
      ApiKeyValid: R.Rejected,
      HeadscaleCompatible: R.CannotVerify,
      PolicyApplied: R.ApplyFailed,
    },
  },
  {
    name: "the API key Secret does not exist: no Headscale call",
    input: input({ related: healthyRelated().filter((o) => o.kind !== "Secret") }),
    expect: {
      ApiReachable: R.CannotVerify,
      ApiKeyValid: R.NoAPIKey,
      HeadscaleCompatible: R.CannotVerify,
      PolicyMode: R.CannotVerify,
      UsersUnique: R.CannotVerify,
      PolicyRendered: R.CannotVerify,
      PolicyApplied: R.NoAPIKey,
    },
  },
  {
    name: "nodes carry no tags and approvedRoutes (Headscale 0.25)",
    input: input({
      hs: healthyHs({
        nodes: ok([hsNode({ id: "7", givenName: "db-1", shape: { hasTags: false, hasApprovedRoutes: false } })]),
      }),
    }),
    expect: { HeadscaleCompatible: R.Incompatible, PolicyRendered: R.Rendered, PolicyApplied: R.ApplyFailed },
  },
  {
    name: "policy/check answers 404 (Headscale 0.28)",
    input: input({
      check: checkFail(
        hsError({
          operation: "POST /api/v1/policy/check",
          status: 404,
          grpcCode: 5,
          detail: "Not Found",
          classification: "notFound",
        }),
      ),
    }),
    expect: { HeadscaleCompatible: R.Incompatible, PolicyRendered: R.Rendered, PolicyApplied: R.ApplyFailed },
  },
  {
    name: "the node list fails",
    input: input({ hs: healthyHs({ nodes: fail(serverError("GET /api/v1/node")) }) }),
    expect: { HeadscaleCompatible: R.CannotVerify, PolicyRendered: R.CannotVerify, PolicyApplied: R.ApplyFailed },
  },
  {
    name: "the policy/check probe fails with a server error",
    input: input({ check: checkFail(serverError("POST /api/v1/policy/check")) }),
    expect: { HeadscaleCompatible: R.ProbeFailed, PolicyRendered: R.Rendered, PolicyApplied: R.ApplyFailed },
  },
  {
    name: "database policy mode",
    input: input({ liveIsRendered: true }),
    expect: { PolicyMode: R.Database, HeadscaleCompatible: R.Compatible },
  },
  {
    name: "file policy mode: the write is skipped",
    input: input({ hs: healthyHs({ policy: ok({ policy: '{"acls": []}', updatedAt: null }) }) }),
    expect: { PolicyMode: R.File, HeadscaleCompatible: R.Incompatible, PolicyApplied: R.PolicyModeFile },
  },
  {
    name: "the live policy cannot be read",
    input: input({ hs: healthyHs({ policy: fail(serverError("GET /api/v1/policy")) }) }),
    expect: { PolicyMode: R.CannotVerify, HeadscaleCompatible: R.CannotVerify, PolicyApplied: R.ApplyFailed },
  },
  {
    name: "split DNS requested: manual configuration required",
    input: input({
      spec: withSplitDNS,
      related: [...healthyRelated().filter((o) => o.kind !== "TailnetGateway"), gateway("10.96.0.53")],
    }),
    expect: { SplitDNS: R.CannotVerify },
  },
  {
    name: "two users share a name: every write is refused",
    input: input({ hs: healthyHs({ users: ok([hsUser("1", "alice"), hsUser("3", "alice", "oidc")]) }) }),
    expect: { UsersUnique: R.Duplicate, PolicyApplied: R.PolicyRejected },
  },
  {
    name: "the user list fails",
    input: input({ hs: healthyHs({ users: fail(timedOut("GET /api/v1/user")) }) }),
    expect: { UsersUnique: R.CannotVerify, PolicyApplied: R.ApplyFailed },
  },
  {
    name: "the base ConfigMap is missing",
    input: input({ related: healthyRelated().filter((o) => o.kind !== "ConfigMap") }),
    expect: { PolicyRendered: R.BaseMissing, PolicyApplied: R.PolicyRejected },
  },
  {
    name: "the base is not HuJSON",
    input: input({
      related: [...healthyRelated().filter((o) => o.kind !== "ConfigMap"), baseConfigMap('{"acls": [}')],
    }),
    expect: { PolicyRendered: R.BaseInvalid, PolicyApplied: R.PolicyRejected },
  },
  {
    name: "Headscale's policy/check rejects the render",
    input: input({ check: rejectedByCheck }),
    expect: { PolicyRendered: R.BaseInvalid, HeadscaleCompatible: R.Compatible, PolicyApplied: R.PolicyRejected },
  },
  {
    name: "the render has no acls and no grants",
    input: input({ related: [apiKeySecret(), baseConfigMap("{}")] }),
    expect: { PolicyRendered: R.PolicyEmpty, PolicyApplied: R.PolicyRejected },
  },
  {
    name: "DryRun: nothing is written",
    input: input({ spec: dryRun }),
    expect: { PolicyRendered: R.Rendered, PolicyApplied: R.DryRun },
  },
  {
    name: "the live policy already equals the render",
    input: input({ liveIsRendered: true }),
    expect: { PolicyApplied: R.InSync },
  },
  {
    name: "the write succeeds",
    input: input({ write: { ok: true } }),
    expect: { PolicyApplied: R.Applied },
  },
  {
    name: "file mode answered to the write (mode changed since the read)",
    input: input({
      write: {
        ok: false,
        error: hsError({
          operation: "PUT /api/v1/policy",
          status: 500,
          detail: "update is disabled for modes other than 'database'",
          classification: "policyFileMode",
        }),
      },
    }),
    expect: { PolicyApplied: R.PolicyModeFile },
  },
  {
    name: "Headscale refuses the PUT",
    input: input({ write: { ok: false, error: putRejected } }),
    expect: { PolicyApplied: R.PolicyRejected },
  },
  {
    name: "Headscale refuses the PUT after swapping it in (SSH check)",
    input: input({ write: { ok: false, error: putSshRejected, readback: ok(LIVE_POLICY) } }),
    expect: { PolicyApplied: R.PolicyRejected },
  },
  {
    name: "no base, and Headscale holds a hand-written policy the render would drop: nothing is written",
    input: input({ spec: noBase, related: noBaseRelated(), hs: healthyHs({ policy: ok(HAND_WRITTEN) }) }),
    expect: { PolicyRendered: R.Rendered, PolicyApplied: R.AdoptionRefused },
  },
  {
    name: "a fresh Apply Tailnet: no base and no workload objects yet",
    input: input({ spec: noBase, related: [apiKeySecret()] }),
    expect: { PolicyRendered: R.PolicyEmpty, PolicyApplied: R.NothingToApply },
  },
  {
    name: "the render is more than Headscale's API takes in one message: PolicyTooLarge, nothing written",
    input: input({
      related: [
        ...healthyRelated().filter((o) => o.kind !== "ConfigMap"),
        baseConfigMap(
          `{"hosts": {${Array.from({ length: 150_000 }, (_, i) => `"h${i}": "100.64.${(i >> 8) & 255}.${i & 255}/32"`).join(",")}}, "acls": [{"action": "accept", "src": ["*"], "dst": ["*:*"]}]}`,
        ),
      ],
    }),
    expect: { PolicyRendered: R.Rendered, PolicyApplied: R.PolicyTooLarge },
  },
  {
    name: "the PUT fails with a server error",
    input: input({ write: { ok: false, error: serverError("PUT /api/v1/policy") } }),
    expect: { PolicyApplied: R.ApplyFailed },
  },
  {
    name: "the PUT is refused at the transport",
    input: input({ write: { ok: false, error: refused("PUT /api/v1/policy") } }),
    expect: { PolicyApplied: R.ApplyFailed },
  },
  {
    name: "no API key: nothing is applied",
    input: input({ related: [baseConfigMap(), ingress()] }),
    expect: { ApiKeyValid: R.NoAPIKey, PolicyApplied: R.NoAPIKey, PolicyRendered: R.Rendered },
  },
  // Several clusters on one Headscale (policy/sections.ts): this Tailnet is cluster "a".
  {
    name: "another cluster's section is live and claims nothing of ours: merged, written, Exclusive",
    input: input({ shared: {}, hs: healthyHs({ policy: ok(liveWith([sectionB({ "tag:k8s-b-web": EARLY })])) }) }),
    expect: { PolicyApplied: R.Applied, SharedPolicy: R.Exclusive },
  },
  {
    name: "an older cluster section holds a tag this cluster generates: left out here",
    input: input({ shared: {}, hs: healthyHs({ policy: ok(liveWith([sectionB({ [OWN_TAG]: EARLY })])) }) }),
    expect: { PolicyApplied: R.Applied, SharedPolicy: R.ClaimsRefused },
  },
  {
    name: "a newer cluster section claims a tag this cluster holds: kept here, refused there",
    input: input({ shared: {}, hs: healthyHs({ policy: ok(liveWith([sectionB({ [OWN_TAG]: LATE })])) }) }),
    expect: { PolicyApplied: R.Applied, SharedPolicy: R.ClaimsContested },
  },
  {
    name: "another cluster wrote a different base: it is kept",
    input: input({
      shared: {},
      hs: healthyHs({ policy: ok(liveWith([sectionB({ "tag:k8s-b-web": EARLY })], OTHER_BASE)) }),
    }),
    expect: { PolicyApplied: R.Applied, SharedPolicy: R.BaseHeldElsewhere },
  },
  {
    name: "another installation writes this cluster's section (both kept the default name): nothing is written",
    input: input({
      shared: {},
      hs: healthyHs({ policy: ok(liveWith([{ ...sectionB({ "tag:k8s-b-web": EARLY }), id: "a/home" }])) }),
    }),
    expect: { PolicyApplied: R.ClusterNameTaken, SharedPolicy: R.ClusterNameTaken },
  },
  {
    name: "an operator without sections rewrote the policy after this Tailnet's write: nothing is written",
    input: input({
      shared: {},
      status: { policy: { appliedHash: `sha256:${"0".repeat(64)}` } },
      hs: healthyHs({ policy: ok(LEGACY) }),
    }),
    expect: { PolicyApplied: R.LegacyWriter, SharedPolicy: R.Exclusive },
  },
  {
    name: "another writer undid every attempt before its read-back",
    input: input({ shared: {}, contended: 4 }),
    expect: { PolicyApplied: R.WriteContended, SharedPolicy: R.Exclusive },
  },
];

/** Rows for the statuses a reason takes besides the one its row above shows. */
const statusRows: { name: string; input: TailnetDecideInput; expect: { PolicyApplied: string; status: string } }[] = [
  {
    name: "DryRun, the live policy equals the render",
    input: input({ spec: dryRun, liveIsRendered: true }),
    expect: { PolicyApplied: R.DryRun, status: "True" },
  },
  {
    name: "DryRun, nothing rendered",
    input: input({ spec: dryRun, related: [apiKeySecret()] }),
    expect: { PolicyApplied: R.DryRun, status: "Unknown" },
  },
  {
    name: "DryRun, the live policy cannot be read",
    input: input({ spec: dryRun, hs: healthyHs({ policy: fail(serverError("GET /api/v1/policy")) }) }),
    expect: { PolicyApplied: R.DryRun, status: "Unknown" },
  },
  {
    name: "the live policy moved between the observation and the PUT (another replica wrote): not written",
    input: input({
      reread: ok({
        policy: '{"acls": [{"action": "accept", "src": ["*"], "dst": ["*:22"]}]}',
        updatedAt: "2026-11-29T09:59:00Z",
      }),
    }),
    expect: { PolicyApplied: R.ApplyFailed, status: "Unknown" },
  },
  {
    name: "the re-read before the PUT finds the render live (another replica wrote it): InSync, no PUT",
    input: (() => {
      const plain = input();
      const text = plain.observed.render.ok ? plain.observed.render.candidate.canonical : "";
      return input({ reread: ok({ policy: text, updatedAt: "2026-11-29T09:59:00Z" }) });
    })(),
    expect: { PolicyApplied: R.InSync, status: "True" },
  },
];

const DAY = 24 * 3600;
const rotating = (renewBeforeSeconds = 14 * DAY) =>
  tailnetSpec({
    headscale: {
      url: "https://headscale.example.com",
      apiKeySecretRef: { namespace: "tailnet-system", name: "headscale-api-key" },
      apiKeyRotation: { enabled: true, expirationSeconds: 90 * DAY, renewBeforeSeconds },
    },
  });
const at = (seconds: number) => new Date(NOW.getTime() + seconds * 1000).toISOString().replace(/\.\d{3}Z$/, "Z");
/** The key a renewal created (`hskey-api-<12>-<64>`): it must never show outside the Secrets. */
const NEW_KEY = `hskey-api-NEWnewNEWnew-${"s3cr3t_-".repeat(8)}`;
const NEW_LISTED = "hskey-api-NEWnewNEWnew-***";
const newKey = { ...OWN_KEY, id: "2", prefix: NEW_LISTED, expiration: at(90 * DAY) };
const dueSoon = healthyHs({ apiKeys: ok([{ ...OWN_KEY, expiration: at(10 * DAY) }]) });
/** The renewed key in use, published, and still replacing the spec's key. */
const renewedInUse = (published = true) => ({
  source: "renewed" as const,
  renewed: {
    apiKey: NEW_KEY,
    prefix: NEW_LISTED,
    expiresAt: at(90 * DAY),
    rotatedAt: at(0),
    replaces: OWN_KEY.prefix,
  },
  published,
});
const bothListed = healthyHs({ apiKeys: ok([OWN_KEY, newKey]) });

/** ApiKeyRotation: one row per step and failure (rotation.ts), with the plan each world makes. */
const rotationRows: {
  name: string;
  input: TailnetDecideInput;
  expect: { ApiKeyRotation: string; plan: string | undefined };
}[] = [
  {
    name: "rotation on, the key expires after the renewal window: nothing to do",
    input: input({ spec: rotating() }),
    expect: { ApiKeyRotation: R.NotDue, plan: undefined },
  },
  {
    name: "the key enters the renewal window: a new key is created, verified and published",
    input: input({
      spec: rotating(),
      hs: dueSoon,
      rotation: {
        step: "created",
        apiKey: NEW_KEY,
        prefix: NEW_LISTED,
        expiresAt: at(90 * DAY),
        rotatedAt: at(0),
        replaces: OWN_KEY.prefix,
      },
    }),
    expect: { ApiKeyRotation: R.Renewed, plan: "create" },
  },
  {
    name: "creating the new key fails: the current key stays in use",
    input: input({
      spec: rotating(),
      hs: dueSoon,
      rotation: { step: "createFailed", error: serverError("POST /api/v1/apikey") },
    }),
    expect: { ApiKeyRotation: R.CreateFailed, plan: "create" },
  },
  {
    name: "the new key does not work: not published, expired again",
    input: input({
      spec: rotating(),
      hs: dueSoon,
      rotation: { step: "verifyFailed", prefix: NEW_LISTED, error: refused("GET /api/v1/apikey"), cleanedUp: true },
    }),
    expect: { ApiKeyRotation: R.VerifyFailed, plan: "create" },
  },
  {
    name: "the renewed key is in use but not yet in the credentials Secret: the old key waits",
    input: input({ spec: rotating(), hs: bothListed, apiKey: renewedInUse(false) }),
    expect: { ApiKeyRotation: R.AwaitingConfirmation, plan: undefined },
  },
  {
    name: "a later sync worked with the published renewed key: the old key is expired",
    input: input({
      spec: rotating(),
      hs: bothListed,
      apiKey: renewedInUse(),
      rotation: { step: "expired", prefix: OWN_KEY.prefix, alreadyGone: false },
    }),
    expect: { ApiKeyRotation: R.OldKeyExpired, plan: "expire" },
  },
  {
    name: "expiring the old key fails: both keys work, retried",
    input: input({
      spec: rotating(),
      hs: bothListed,
      apiKey: renewedInUse(),
      rotation: { step: "expireFailed", prefix: OWN_KEY.prefix, error: timedOut("POST /api/v1/apikey/expire") },
    }),
    expect: { ApiKeyRotation: R.ExpireFailed, plan: "expire" },
  },
  {
    name: "Headscale refuses the renewed key while the spec's key works: back to the spec's key",
    input: input({
      spec: rotating(),
      apiKey: {
        ...renewedInUse(),
        source: "spec",
        refused: { source: "renewed", message: "Headscale GET /api/v1/health: 401 Unauthorized: Unauthorized" },
        published: false,
      },
    }),
    expect: { ApiKeyRotation: R.NewKeyRejected, plan: undefined },
  },
  {
    name: "Headscale is down mid-rotation: nothing is expired, both keys kept",
    input: input({ spec: rotating(), hs: failingHs(refused), apiKey: renewedInUse() }),
    expect: { ApiKeyRotation: R.CannotVerify, plan: undefined },
  },
];

/** What the hook answers for a spec specProblem refuses, before any sync evaluated the Tailnet. */
function invalidSpecConditions(): ConditionInput[] {
  const spec = rotating();
  const parent = tailnet({ ...spec, allowedEgressTargets: ["db"] });
  const problem = tailnetModule.specProblem?.(parent) ?? "";
  const answer = tailnetModule.invalid(syncRequest({ parent }), problem, quietDeps(NOW));
  const conditions = answer.status.conditions;
  return Array.isArray(conditions) ? conditions : [];
}

describe("Tailnet decide: one row per reason", () => {
  for (const row of rows) {
    it(row.name, () => {
      const got = reasons(decideTailnet(row.input));
      for (const [type, reason] of Object.entries(row.expect))
        assert.equal(got[type], reason, `${type} in "${row.name}"`);
    });
  }

  for (const row of statusRows) {
    it(row.name, () => {
      const applied = conditionOf(decideTailnet(row.input), "PolicyApplied");
      assert.deepEqual({ PolicyApplied: applied.reason, status: applied.status }, row.expect);
    });
  }

  for (const row of rotationRows) {
    it(row.name, () => {
      const d = decideTailnet(row.input);
      const c = conditionOf(d, "ApiKeyRotation");
      assert.deepEqual({ ApiKeyRotation: c.reason, plan: row.input.plan.rotation?.kind }, row.expect);
      // Never a key outside the Secrets: not in a condition, not in status.
      const shown = JSON.stringify({ conditions: d.conditions, fields: d.fields });
      for (const secret of [NEW_KEY, NEW_KEY.slice(-64), API_KEY, API_KEY.slice(-40)]) {
        assert.ok(!shown.includes(secret), `${row.name}: a key in the status`);
      }
    });
  }

  it("covers every (condition, reason, status) of TAILNET_REASONS, and produces nothing else", () => {
    const produced = [...rows, ...statusRows, ...rotationRows].map((r) => decideTailnet(r.input).conditions);
    assertCoversTable(TAILNET_REASONS, [...produced, invalidSpecConditions()]);
  });
});

describe("PolicyApplied staircase: each step removes one write blocker", () => {
  const rejectedUsers = ok([hsUser("1", "alice"), hsUser("3", "alice", "oidc")]);
  const steps: { name: string; input: TailnetDecideInput; reason: string; status: string }[] = [
    {
      name: "no API key",
      input: input({ related: [baseConfigMap(), ingress()] }),
      reason: R.NoAPIKey,
      status: "False",
    },
    {
      name: "Headscale unreachable",
      input: input({ hs: failingHs(refused) }),
      reason: R.ApplyFailed,
      status: "Unknown",
    },
    {
      name: "base missing",
      input: input({ related: healthyRelated().filter((o) => o.kind !== "ConfigMap") }),
      reason: R.PolicyRejected,
      status: "False",
    },
    {
      name: "file policy mode",
      input: input({ hs: healthyHs({ policy: ok({ policy: "{}", updatedAt: null }) }) }),
      reason: R.PolicyModeFile,
      status: "False",
    },
    {
      name: "policy/check rejects the render",
      input: input({ check: rejectedByCheck }),
      reason: R.PolicyRejected,
      status: "False",
    },
    {
      name: "policy/check missing",
      input: input({
        check: checkFail(
          hsError({
            operation: "POST /api/v1/policy/check",
            status: 404,
            detail: "Not Found",
            classification: "notFound",
          }),
        ),
      }),
      reason: R.ApplyFailed,
      status: "False",
    },
    {
      name: "duplicate users",
      input: input({ hs: healthyHs({ users: rejectedUsers }) }),
      reason: R.PolicyRejected,
      status: "False",
    },
    { name: "everything in place: written", input: input(), reason: R.Applied, status: "True" },
  ];
  for (const step of steps) {
    it(step.name, () => {
      const planned = step.input.plan;
      const decision = decideTailnet(step.input);
      const applied = conditionOf(decision, "PolicyApplied");
      assert.equal(applied.reason, step.reason);
      assert.equal(applied.status, step.status);
      assert.equal(!!planned.write, step.reason === R.Applied, "a write is planned only on the last step");
    });
  }
});

describe("Tailnet decide: messages", () => {
  it("NoAPIKey names the Secret and the field", () => {
    const d = decided({ related: [baseConfigMap()] });
    const msg =
      "Secret tailnet-system/headscale-api-key (spec.headscale.apiKeySecretRef) not found; no Headscale call is made";
    assert.equal(conditionOf(d, "ApiKeyValid").message, msg);
    assert.equal(conditionOf(d, "PolicyApplied").message, msg);
    const noKey = run({
      related: [{ ...apiKeySecret(), data: { other: "eA==" } }, baseConfigMap()],
    }).decision;
    assert.equal(
      conditionOf(noKey, "ApiKeyValid").message,
      'Secret tailnet-system/headscale-api-key has no key "apiKey" (spec.headscale.apiKeySecretRef); no Headscale call is made',
    );
  });

  it("BaseMissing names the ConfigMap and the key", () => {
    const gone = decided({ related: [apiKeySecret()] });
    assert.equal(
      conditionOf(gone, "PolicyRendered").message,
      "ConfigMap tailnet-system/tailnet-policy-base (spec.policy.baseConfigMapRef) not found",
    );
    const wrongKey = run({ related: [apiKeySecret(), { ...baseConfigMap(), data: { "base.json": "{}" } }] }).decision;
    assert.equal(
      conditionOf(wrongKey, "PolicyRendered").message,
      'ConfigMap tailnet-system/tailnet-policy-base has no key "policy.hujson" (spec.policy.baseConfigMapRef)',
    );
    assert.equal(
      conditionOf(wrongKey, "PolicyApplied").message,
      `not written: the render was refused (PolicyRendered=BaseMissing); nothing was sent to Headscale (Headscale's stored policy is ${LIVE_HASH})`,
    );
  });

  it("BaseInvalid carries the parse error with its position, or Headscale's message", () => {
    const d = run({ related: [apiKeySecret(), baseConfigMap('{\n  "acls": [}\n')] }).decision;
    assert.match(
      conditionOf(d, "PolicyRendered").message,
      /^ConfigMap tailnet-system\/tailnet-policy-base: base policy is not valid HuJSON: line 2:/,
    );
    const byCheck = decided({ check: rejectedByCheck });
    const hash = byCheck.fields.policy?.renderedHash;
    assert.equal(
      conditionOf(byCheck, "PolicyRendered").message,
      `Headscale rejects the rendered policy ${hash} (POST /api/v1/policy/check): parsing policy: src=tag not found: "tag:nope"`,
    );
    assert.equal(
      conditionOf(byCheck, "PolicyApplied").message,
      `Headscale rejects the rendered policy (POST /api/v1/policy/check): parsing policy: src=tag not found: "tag:nope"; nothing was written (Headscale's stored policy is ${LIVE_HASH})`,
    );
  });

  it("SplitDNS gives the dns.nameservers.split lines with the gateway DNS Service IP", () => {
    const withGw = run({
      spec: withSplitDNS,
      related: [...healthyRelated().filter((o) => o.kind !== "TailnetGateway"), gateway("10.96.0.53")],
    }).decision;
    const c = conditionOf(withGw, "SplitDNS");
    assert.equal(c.status, "Unknown");
    assert.equal(
      c.message,
      `manual configuration required: Headscale has no DNS API; add under dns.nameservers.split in Headscale's config and restart it: "svc.cluster.local": ["10.96.0.53"]`,
    );
    const noGw = conditionOf(decided({ spec: withSplitDNS }), "SplitDNS");
    assert.equal(
      noGw.message,
      `manual configuration required: Headscale has no DNS API; add under dns.nameservers.split in Headscale's config and restart it: "svc.cluster.local": ["<DNS Service IP of a TailnetGateway>"]; no TailnetGateway of Tailnet home has a DNS Service IP yet`,
    );
    const off = conditionOf(decided(), "SplitDNS");
    assert.deepEqual(
      { status: off.status, message: off.message },
      { status: "True", message: "spec.dns.splitDNS is not set: nothing to configure in Headscale" },
    );
  });

  it("Duplicate names the shared user names with their ids; userConflicts counts names", () => {
    const users = [
      hsUser("1", "alice"),
      hsUser("3", "alice", "oidc"),
      hsUser("4", "bob"),
      hsUser("12", "bob"),
      hsUser("5", "carol"),
    ];
    const d = decided({ hs: healthyHs({ users: ok(users) }) });
    assert.equal(
      conditionOf(d, "UsersUnique").message,
      "Headscale user names held by more than one user: alice (ids 1, 3), bob (ids 4, 12); every policy write is refused until one of each is removed",
    );
    assert.equal(
      conditionOf(d, "PolicyApplied").message,
      `write refused: Headscale user names held by more than one user (alice, bob) make Headscale reject every policy; nothing was written (Headscale's stored policy is ${LIVE_HASH})`,
    );
    assert.equal(d.fields.userConflicts, 2);
  });

  it("PolicyModeFile tells where the rendered policy is", () => {
    const d = decided({ hs: healthyHs({ policy: ok({ policy: "{}", updatedAt: null }) }) });
    assert.equal(
      conditionOf(d, "PolicyApplied").message,
      "write skipped: Headscale reads the policy from a file (policy.mode file); put policy.json of ConfigMap tailnet-system/tailnet-home-policy into that file and reload Headscale, or set policy.mode: database",
    );
  });

  it("Incompatible names the missing capability and the supported version", () => {
    const old = run({
      hs: healthyHs({
        nodes: ok([hsNode({ id: "7", givenName: "db-1", shape: { hasTags: false, hasApprovedRoutes: true } })]),
      }),
    }).decision;
    assert.equal(
      conditionOf(old, "HeadscaleCompatible").message,
      "Headscale nodes carry no tags field (older than 0.28); supported: Headscale 0.29.x",
    );
    const v028 = decided({
      check: checkFail(
        hsError({
          operation: "POST /api/v1/policy/check",
          status: 404,
          detail: "Not Found",
          classification: "notFound",
        }),
      ),
    });
    assert.equal(
      conditionOf(v028, "HeadscaleCompatible").message,
      "POST /api/v1/policy/check answered 404 (Headscale older than 0.29); supported: Headscale 0.29.x",
    );
  });

  it("Rejected and Unreachable carry the operation, never the key", () => {
    const d = decided({ hs: failingHs(unauthorized) });
    const msg = conditionOf(d, "ApiKeyValid").message;
    assert.match(msg, /^Headscale GET \/api\/v1\/health: 401 Unauthorized: /);
    const down = decided({ hs: failingHs(refused) });
    assert.equal(conditionOf(down, "ApiReachable").message, "Headscale GET /api/v1/health: connection refused");
    for (const c of [...d.conditions, ...down.conditions]) assert.ok(!c.message.includes(API_KEY));
  });

  it("a database outage is no verdict on the key: Unknown, and no advice to create a new one", () => {
    const d = decided({ hs: failingHs(databaseDown401) });
    const key = conditionOf(d, "ApiKeyValid");
    assert.deepEqual([key.status, key.reason], ["Unknown", R.Error]);
    assert.equal(
      key.message,
      "cannot verify the API key: Headscale's database is down (GET /health fails), and Headscale answers 401 to every API call while it cannot look a key up; the key is not at fault, keep it (see ApiReachable)",
    );
    const reachable = conditionOf(d, "ApiReachable");
    assert.deepEqual([reachable.status, reachable.reason], ["False", R.Unhealthy]);
    assert.equal(
      reachable.message,
      'Headscale\'s database is down: GET /health answers 500 {"status":"fail"}, and Headscale answers 401 to every API call until the database is back',
    );
    for (const c of d.conditions) assert.doesNotMatch(c.message, /apikeys create|Rejected/, c.type);
    // a flapping database: one call saw the outage, another a plain 401 a moment later
    const mixed = run({ hs: { ...failingHs(unauthorized), nodes: fail(databaseDown401("GET /api/v1/node")) } });
    assert.equal(conditionOf(mixed.decision, "ApiKeyValid").reason, R.Error);
  });

  it("a failed PUT reports what the read-back shows, never 'the previous policy stays' unconditionally", () => {
    const applied = (w: Given) => {
      const { decision, plan: planned } = run(w);
      const c = conditionOf(decision, "PolicyApplied");
      return { reason: c.reason, message: c.message, hash: planned.write?.hash ?? "" };
    };
    const refusedEarly = applied({ write: { ok: false, error: putRejected, readback: ok(LIVE_POLICY) } });
    assert.equal(refusedEarly.reason, R.PolicyRejected);
    assert.equal(
      refusedEarly.message,
      `Headscale rejected the policy (PUT /api/v1/policy): setting policy: parsing policy: src=tag not found: "tag:nope"; nothing was stored and Headscale serves the policy it served before (Headscale's stored policy is ${LIVE_HASH})`,
    );
    const ssh = applied({ write: { ok: false, error: putSshRejected, readback: ok(LIVE_POLICY) } });
    assert.equal(ssh.reason, R.PolicyRejected);
    assert.equal(
      ssh.message,
      `Headscale rejected the policy (PUT /api/v1/policy): verifying SSH rules: compiling SSH policy: parsing SSH policy, unknown action; the rendered policy ${ssh.hash} was not stored, but Headscale already serves it from memory (0.29 swaps the policy in before the SSH check and the database write), while Headscale's stored policy is ${LIVE_HASH}; a Headscale restart or policy reload returns to the stored one`,
    );
    const locked = applied({ write: { ok: false, error: putLocked, readback: ok(null) } });
    assert.equal(locked.reason, R.ApplyFailed);
    assert.equal(
      locked.message,
      `not written: Headscale PUT /api/v1/policy: 500 database is locked (5) (SQLITE_BUSY); the rendered policy ${locked.hash} was not stored, but Headscale already serves it from memory (0.29 swaps the policy in before the SSH check and the database write), while Headscale stores no policy yet; a Headscale restart or policy reload returns to the stored one`,
    );
    const lost = applied({ write: { ok: false, error: timedOut("PUT /api/v1/policy"), readback: ok(LIVE_POLICY) } });
    assert.equal(
      lost.message,
      `not written: Headscale PUT /api/v1/policy: timed out after 300ms; not stored (Headscale's stored policy is ${LIVE_HASH}); whether Headscale already serves the rendered policy from memory cannot be told (0.29 swaps the policy in before storing it)`,
    );
    // The answer was lost but the policy got stored: the read-back says so.
    const { plan: planned } = run();
    const storedText = planned.write ? JSON.stringify(planned.write.policy) : "";
    const stored = applied({
      write: {
        ok: false,
        error: timedOut("PUT /api/v1/policy"),
        readback: ok({ policy: storedText, updatedAt: "2026-11-29T10:00:00Z" }),
      },
    });
    assert.equal(
      stored.message,
      `not written: Headscale PUT /api/v1/policy: timed out after 300ms; reading it back shows Headscale stored the rendered policy ${stored.hash} all the same`,
    );
    const unread = applied({
      write: { ok: false, error: putLocked, readback: fail(refused("GET /api/v1/policy")) },
    });
    assert.equal(
      unread.message,
      "not written: Headscale PUT /api/v1/policy: 500 database is locked (5) (SQLITE_BUSY); what Headscale holds now could not be read back: Headscale GET /api/v1/policy: connection refused",
    );
  });

  it("AdoptionRefused names what would be lost and the exact commands to keep it; nothing is written", () => {
    const { plan: planned, decision } = run({
      spec: noBase,
      related: noBaseRelated(),
      hs: healthyHs({ policy: ok(HAND_WRITTEN) }),
    });
    assert.equal(planned.write, undefined);
    const live = hashOfLivePolicy(HAND_WRITTEN.policy);
    assert.ok(live.ok);
    const applied = conditionOf(decision, "PolicyApplied");
    assert.equal(applied.status, "False");
    assert.equal(
      applied.message,
      `write refused: Headscale holds a policy the operator did not write (${live.hash}), and with no base policy (spec.policy.baseConfigMapRef) the render would replace it, dropping 2 acl rules, 1 ssh rule, groups group:eng, group:ops, hosts nas; to keep it, export it into a base and keep that file in Git: kubectl -n tailnet-system get configmap tailnet-home-live-policy -o jsonpath='{.data.policy\\.hujson}' > policy.hujson && kubectl -n tailnet-system create configmap tailnet-home-base --from-file=policy.hujson && kubectl patch tailnets.tailnet.internal home --type merge -p '{"spec":{"policy":{"baseConfigMapRef":{"namespace":"tailnet-system","name":"tailnet-home-base"}}}}'; to replace it, set spec.policy.replaceLivePolicy: true`,
    );
    const published = decision.children.find((c) => c.metadata.name === "tailnet-home-live-policy");
    assert.deepEqual(published?.data, { "policy.hujson": HAND_WRITTEN.policy });
    // DryRun says the same before anyone switches to Apply.
    const dry = run({
      spec: tailnetSpec({ policy: { mode: "DryRun" } }),
      related: noBaseRelated(),
      hs: healthyHs({ policy: ok(HAND_WRITTEN) }),
    }).decision;
    assert.match(
      conditionOf(dry, "PolicyApplied").message,
      /; in Apply mode the write would be refused \(AdoptionRefused\): it would drop 2 acl rules, 1 ssh rule, groups group:eng, group:ops, hosts nas$/,
    );
    assert.ok(dry.children.some((c) => c.metadata.name === "tailnet-home-live-policy"));
  });

  it("the live policy may be replaced once the user said so, once a base exists, or once the operator applied", () => {
    const hs = healthyHs({ policy: ok(HAND_WRITTEN) });
    const writes = (w: Given) => !!run(w).plan.write;
    const allowed = tailnetSpec({ policy: { mode: "Apply", tagOwners: ["group:platform"], replaceLivePolicy: true } });
    assert.equal(writes({ spec: allowed, related: noBaseRelated(), hs }), true, "replaceLivePolicy");
    assert.equal(writes({ hs }), true, "a base in Git is the user's word");
    const managed = { policy: { appliedHash: "sha256:old", renderedHash: "sha256:old" } };
    assert.equal(writes({ spec: noBase, related: noBaseRelated(), hs, status: managed }), true, "drift rule");
    assert.equal(writes({ spec: noBase, related: noBaseRelated() }), true, "nothing would be lost");
    assert.equal(writes({ spec: noBase, related: noBaseRelated(), hs: healthyHs({ policy: ok(null) }) }), true);
    const d = decided({ spec: allowed, related: noBaseRelated(), hs });
    assert.ok(!d.children.some((c) => c.metadata.name === "tailnet-home-live-policy"), "published only while refused");
  });

  it("a fresh Tailnet reads as nothing to do yet, not as a refusal", () => {
    const d = decided({ spec: noBase, related: [apiKeySecret()] });
    assert.equal(
      conditionOf(d, "PolicyRendered").message,
      "nothing to render yet: no base policy (spec.policy.baseConfigMapRef) and no TailnetEgress, TailnetIngress, TailnetSite or TailnetGateway of this Tailnet generates a rule (an empty policy would lock everyone out, so none is written)",
    );
    assert.equal(
      conditionOf(d, "PolicyApplied").message,
      `nothing to apply yet: there is no base policy (spec.policy.baseConfigMapRef) and no workload object of this Tailnet generates a rule; Headscale's policy is left as it is (Headscale's stored policy is ${LIVE_HASH})`,
    );
    // An empty base in Git is a different story: the user asked for nothing, which would lock everyone out.
    assert.equal(
      reasons(run({ related: [apiKeySecret(), baseConfigMap("{}")] }).decision).PolicyApplied,
      R.PolicyRejected,
    );
  });

  it("a drift overwrite says what it replaced", () => {
    const { decision, plan: planned } = run({
      status: { policy: { renderedHash: "sha256:old", appliedHash: "sha256:old", appliedAt: "2026-11-01T00:00:00Z" } },
    });
    const live = hashOfLivePolicy(LIVE_POLICY.policy);
    assert.ok(live.ok);
    assert.deepEqual(planned.write?.drift, { live: live.hash, lastApplied: "sha256:old" });
    const applied = conditionOf(decision, "PolicyApplied");
    assert.equal(
      applied.message,
      `wrote the rendered policy ${planned.write?.hash}; it replaced ${planned.write?.drift?.live}, changed outside the operator (last applied sha256:old)`,
    );
  });
});

describe("Tailnet decide: status", () => {
  it("appliedAt changes only when a write happens; InSync keeps it", () => {
    const written = decided();
    assert.equal(written.fields.policy?.appliedAt, "2026-11-29T10:00:00Z");
    assert.equal(written.fields.policy?.appliedHash, written.fields.policy?.renderedHash);
    const later = new Date(NOW.getTime() + 3600_000);
    const again = decided({ liveIsRendered: true, status: { policy: written.fields.policy }, now: later });
    assert.deepEqual(again.fields.policy, written.fields.policy);
    assert.equal(conditionOf(again, "PolicyApplied").reason, R.InSync);
  });

  it("DryRun confirms an equal live policy but never sets appliedAt", () => {
    const d = decided({ spec: dryRun, liveIsRendered: true });
    assert.equal(conditionOf(d, "PolicyApplied").status, "True");
    assert.equal(d.fields.policy?.appliedHash, d.fields.policy?.renderedHash);
    assert.equal(d.fields.policy?.appliedAt, undefined);
    const differs = decided({ spec: dryRun });
    assert.equal(conditionOf(differs, "PolicyApplied").status, "False");
    assert.equal(differs.fields.policy?.appliedHash, undefined);
  });

  it("a failed render keeps the last good hashes and counts", () => {
    const prev = {
      renderedHash: "sha256:a",
      appliedHash: "sha256:a",
      appliedAt: "2026-11-01T00:00:00Z",
      generated: { tags: 4, grants: 3, routes: 2 },
    };
    const d = run({ related: [apiKeySecret(), ingress()], status: { policy: prev, userConflicts: 0 } }).decision;
    assert.equal(conditionOf(d, "PolicyRendered").reason, R.BaseMissing);
    assert.deepEqual(d.fields.policy, prev);
  });

  it("generated counts tags, grants and routes of every object of this Tailnet", () => {
    const d = decided();
    // the gateway's 10.96.0.0/12 lies in the fixture's reservedNetworks: not auto-approved (issue 31 item 5)
    assert.deepEqual(d.fields.policy?.generated, { tags: 4, grants: 3, routes: 1 });
  });

  it("objects of another Tailnet and blocked sites contribute nothing", () => {
    const other = { ...egress("other", "x"), spec: { tailnetRef: { name: "work" }, targets: [] } };
    const blocked = site("late", "net", ["192.168.10.128/25"], "2026-11-02T00:00:00Z");
    const reserved = site("kube", "net", ["10.96.1.0/24"]);
    const d = decided({ related: [...healthyRelated(), other, blocked, reserved] });
    assert.deepEqual(d.fields.policy?.generated, { tags: 4, grants: 3, routes: 1 });
  });

  it("userConflicts keeps its last value while the user list fails", () => {
    const d = run({
      hs: healthyHs({ users: fail(refused("GET /api/v1/user")) }),
      status: { userConflicts: 1 },
    }).decision;
    assert.equal(d.fields.userConflicts, 1);
  });

  it("a backing-off failed write repeats its condition and waits", () => {
    const error = serverError("PUT /api/v1/policy", "boom");
    const readback = ok(LIVE_POLICY);
    const first = run({ write: { ok: false, error, readback } });
    const failed = conditionOf(first.decision, "PolicyApplied");
    assert.equal(first.decision.resyncAfterSeconds, 30);
    const { plan: planned, decision } = run({
      pendingFailure: { error, readback, retryAt: new Date(NOW.getTime() + 45_000) },
    });
    assert.equal(planned.write, undefined);
    assert.deepEqual(conditionOf(decision, "PolicyApplied"), failed);
    assert.deepEqual(failed, writeFailureCondition(error, readback, first.plan.write?.hash));
    assert.equal(decision.resyncAfterSeconds, 45);
    const due = run({ pendingFailure: { error, readback, retryAt: NOW } });
    assert.ok(due.plan.write, "the write is retried once the backoff elapsed");
  });
});

describe("Tailnet decide: children", () => {
  it("a failed node list reuses the observed policy and DNS-records ConfigMaps", () => {
    const healthy = decided();
    const observed = healthy.children.map((c) => ({
      ...c,
      metadata: { ...c.metadata, uid: "x", resourceVersion: "9" },
    }));
    const d = run({ hs: healthyHs({ nodes: fail(refused("GET /api/v1/node")) }), children: observed }).decision;
    assert.deepEqual(d.children, healthy.children);
  });

  it("Headscale down changes no child", () => {
    const healthy = decided();
    const d = decided({ hs: failingHs(refused), children: healthy.children });
    assert.deepEqual(d.children, healthy.children);
  });

  it("the credentials Secret exists only with an API key", () => {
    const kinds = (w: Given) => decided(w).children.map((c) => `${c.kind}/${c.metadata.name}`);
    assert.deepEqual(kinds({}), [
      "ConfigMap/tailnet-home-policy",
      "ConfigMap/tailnet-home-dns-records",
      "Secret/tailnet-home-credentials",
    ]);
    assert.deepEqual(kinds({ related: [baseConfigMap(BASE)] }), [
      "ConfigMap/tailnet-home-policy",
      "ConfigMap/tailnet-home-dns-records",
    ]);
  });
});

describe("Tailnet decide: API key rotation children and status", () => {
  const row = (name: string) => {
    const r = rotationRows.find((x) => x.name.startsWith(name));
    if (!r) throw new Error(name);
    return decideTailnet(r.input);
  };
  const secret = (d: ReturnType<typeof decideTailnet>, name: string) =>
    d.children.find((c) => c.kind === "Secret" && c.metadata.name === name);
  const keyOf = (o: K8sObject | undefined) => secretValue(o, "apiKey") ?? "";

  it("Renewed publishes the new key in the operator's Secret and the credentials Secret; status shows prefixes only", () => {
    const d = row("the key enters the renewal window");
    const renewed = secret(d, "tailnet-home-api-key");
    assert.equal(keyOf(renewed), NEW_KEY);
    assert.deepEqual(renewed?.metadata.annotations, {
      "tailnet.internal/api-key-prefix": NEW_LISTED,
      "tailnet.internal/api-key-expires-at": at(90 * DAY),
      "tailnet.internal/api-key-rotated-at": at(0),
      "tailnet.internal/api-key-replaces": OWN_KEY.prefix,
    });
    assert.equal(keyOf(secret(d, "tailnet-home-credentials")), NEW_KEY, "the workload kinds switch at once");
    assert.deepEqual(d.fields.apiKeyRotation, {
      keyPrefix: NEW_LISTED,
      expiresAt: at(90 * DAY),
      renewAt: at(76 * DAY),
      rotatedAt: at(0),
      replacesPrefix: OWN_KEY.prefix,
    });
  });

  it("a failed create or verification publishes nothing: the spec's key stays everywhere", () => {
    for (const name of ["creating the new key fails", "the new key does not work"]) {
      const d = row(name);
      assert.equal(secret(d, "tailnet-home-api-key"), undefined, name);
      assert.equal(keyOf(secret(d, "tailnet-home-credentials")), API_KEY, name);
    }
  });

  it("the old key expired: the operator's Secret loses its replaces annotation; a failed expiry keeps it", () => {
    const done = secret(row("a later sync worked"), "tailnet-home-api-key");
    assert.equal(keyOf(done), NEW_KEY);
    assert.equal(done?.metadata.annotations?.["tailnet.internal/api-key-replaces"], undefined);
    const failed = secret(row("expiring the old key fails"), "tailnet-home-api-key");
    assert.equal(failed?.metadata.annotations?.["tailnet.internal/api-key-replaces"], OWN_KEY.prefix);
  });

  it("Headscale down mid-rotation keeps the operator's Secret; a refused renewed key is dropped", () => {
    const down = row("Headscale is down mid-rotation");
    assert.equal(keyOf(secret(down, "tailnet-home-api-key")), NEW_KEY);
    assert.equal(keyOf(secret(down, "tailnet-home-credentials")), NEW_KEY);
    const rejected = row("Headscale refuses the renewed key");
    assert.equal(secret(rejected, "tailnet-home-api-key"), undefined);
    assert.equal(keyOf(secret(rejected, "tailnet-home-credentials")), API_KEY);
  });

  it("rotation switched off: the renewed key's Secret goes once the spec's key works, never on a failed observation", () => {
    const spare = { ...renewedInUse(), source: "spec" as const, published: false };
    const works = decided({ apiKey: spare });
    assert.equal(secret(works, "tailnet-home-api-key"), undefined, "the spec's key works: dropped");
    const down = decided({ apiKey: spare, hs: failingHs(refused) });
    assert.equal(keyOf(secret(down, "tailnet-home-api-key")), NEW_KEY, "Headscale down: kept");
    const fallback = decided({
      apiKey: { ...renewedInUse(), refused: { source: "spec", message: "401" } },
      hs: bothListed,
    });
    assert.equal(keyOf(secret(fallback, "tailnet-home-api-key")), NEW_KEY, "the spec's key refused: kept and used");
    assert.equal(keyOf(secret(fallback, "tailnet-home-credentials")), NEW_KEY);
  });

  it("without rotation the Tailnet has no ApiKeyRotation condition and no status.apiKeyRotation", () => {
    const d = decided();
    assert.ok(!d.conditions.some((c) => c.type === "ApiKeyRotation"));
    assert.equal(d.fields.apiKeyRotation, undefined);
  });

  it("renewBeforeSeconds at or above expirationSeconds is an InvalidSpec (every new key would be due)", () => {
    const spec = rotating(90 * DAY);
    assert.equal(
      tailnetModule.specProblem?.(tailnet(spec)),
      `spec.headscale.apiKeyRotation.renewBeforeSeconds (${90 * DAY}) must be less than expirationSeconds (${90 * DAY})`,
    );
  });
});
