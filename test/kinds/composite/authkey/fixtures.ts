/**
 * TailnetAuthKey plan/decide fixtures: a parent, synthetic observations (the Secret, Headscale's listed keys with
 * masked prefixes) and one plan + decide run, shared by decide.test.ts and plan-bounds.test.ts.
 */

import { DEFAULT_CONFIG } from "../../../../src/config.js";
import type { Obs } from "../../../../src/headscale/errors.js";
import { HeadscaleError } from "../../../../src/headscale/errors.js";
import type { HsPreAuthKey } from "../../../../src/headscale/types.js";
import type { HeadscaleView } from "../../../../src/headscale/view.js";
import type { K8sObject } from "../../../../src/k8s/objects.js";
import type { AuthKeyOutcome } from "../../../../src/kinds/composite/authkey/act.js";
import { authKeySecretChild, type DeliveredKey } from "../../../../src/kinds/composite/authkey/children.js";
import { decideAuthKey } from "../../../../src/kinds/composite/authkey/decide.js";
import type { AuthKeyObservation } from "../../../../src/kinds/composite/authkey/observe.js";
import { planAuthKey } from "../../../../src/kinds/composite/authkey/plan.js";
import { readAuthKeySpec } from "../../../../src/kinds/composite/authkey/spec.js";
import type { HookRequest } from "../../../../src/pipeline/types.js";
import { parentObject } from "../../../fixtures/hooks.js";

export const T0 = new Date("2026-11-29T10:00:00Z");
export const at = (min: number) => new Date(T0.getTime() + min * 60_000);
export const SPEC = {
  tailnetRef: { name: "home" },
  tags: ["tag:ci-runner"],
  expiry: "1h",
  renewBefore: "20m",
  secretName: "join",
};

export const parent = (status?: Record<string, unknown>) =>
  parentObject("TailnetAuthKey", "runners", SPEC, {
    namespace: "ci",
    creationTimestamp: T0.toISOString(),
    ...(status ? { status } : {}),
  });
export const req = (p: K8sObject, children: K8sObject[] = []): HookRequest => ({
  controller: {},
  parent: p,
  children: { "Secret.v1": Object.fromEntries(children.map((c) => [`ci/${c.metadata.name}`, c])) },
  related: {},
  finalizing: false,
});

export const SECRET_PART = "s3cr3tS3cr3tS3cr3tS3cr3tS3cr3tS3cr3tS3cr3tS3cr3tS3cr3tS3cr3tS3cr3t";
export const fullKey = (id: string) => `hskey-auth-prefix${id.padStart(7, "0")}-${SECRET_PART}`;
export const listed = (
  id: string,
  createdMin: number,
  expiresMin: number,
  extra: Partial<HsPreAuthKey> = {},
): HsPreAuthKey => ({
  user: null,
  id,
  key: `hskey-auth-prefix${id.padStart(7, "0")}-***`,
  reusable: false,
  ephemeral: false,
  used: false,
  expiration: at(expiresMin).toISOString(),
  createdAt: at(createdMin).toISOString(),
  aclTags: ["tag:ci-runner"],
  ...extra,
});
export const delivered = (id: string, createdMin: number): DeliveredKey => ({
  id,
  key: fullKey(id),
  createdAt: at(createdMin),
  expiresAt: at(createdMin + 60),
  renewAt: at(createdMin + 40),
});
export const secretOf = (p: K8sObject, key: DeliveredKey) =>
  authKeySecretChild(p, "join", key, { url: "https://hs.example.com" });

export const ok = <T>(value: T, when = 0): Obs<T> => ({ ok: true, value, at: at(when) });
export const failed = <T>(): Obs<T> => ({
  ok: false,
  error: new HeadscaleError({
    kind: "transport",
    operation: "GET /api/v1/preauthkey",
    detail: "connect ECONNREFUSED",
    classification: "refused",
  }),
  at: T0,
});

export function reads(r: HookRequest, now: Date, keys: Obs<HsPreAuthKey[]>): AuthKeyObservation {
  const s = r.children["Secret.v1"]?.["ci/join"];
  const secretKey = s ? Buffer.from(String((s.data as Record<string, string>).authkey), "base64").toString() : "";
  const a = s?.metadata.annotations ?? {};
  return {
    ok: true,
    now,
    ...(s
      ? {
          secret: {
            secret: s,
            id: a["tailnet.internal/key-id"],
            key: secretKey,
            createdAt: new Date(a["tailnet.internal/created-at"]),
            expiresAt: new Date(a["tailnet.internal/expires-at"]),
            renewAt: new Date(a["tailnet.internal/renew-at"]),
          },
        }
      : {}),
    settings: {} as never,
    server: { url: "https://hs.example.com" },
    view: {} as HeadscaleView,
    keys,
  };
}

/** plan + decide for one synthetic sync. */
export function run(
  r: HookRequest,
  observed: AuthKeyObservation,
  outcome?: (plan: ReturnType<typeof planAuthKey>) => AuthKeyOutcome,
) {
  const spec = readAuthKeySpec(r.parent);
  const plan = planAuthKey(r.parent, spec, observed);
  const out = outcome ? outcome(plan) : { retired: [] };
  return {
    plan,
    decision: decideAuthKey({ req: r, spec, observed, plan, outcome: out, config: DEFAULT_CONFIG, now: observed.now }),
  };
}
