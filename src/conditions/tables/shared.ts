/**
 * The vocabulary every kind's table composes: the reasons a workload kind reports before its own conditions
 * could be evaluated (src/kinds/shared/workload.ts, tenancy.ts, kept-tags.ts; src/pipeline/status.ts
 * invalidSpecResult), and how a table spells them: `Unknown` on every condition they kept from being evaluated
 * ("not evaluated"), `False` on Ready, which repeats them.
 */

export const CommonReason = {
  InvalidSpec: "InvalidSpec",
  NoTailnet: "NoTailnet",
  NoAPIKey: "NoAPIKey",
  /** spec.proxyClassName names a TailnetProxyClass that does not exist (egress, ingress, gateway). */
  ProxyClassMissing: "ProxyClassMissing",
  /** The Tailnet's spec.tenancy refuses the object (src/kinds/shared/tenancy.ts): nothing minted or written. */
  NamespaceNotAllowed: "NamespaceNotAllowed",
  TagNotGranted: "TagNotGranted",
  TagInUse: "TagInUse",
  Ready: "Ready",
} as const;

/** A reason that keeps a workload kind from evaluating its conditions. */
export type NotEvaluatedReason = Exclude<keyof typeof CommonReason, "Ready">;

type Rows<R extends readonly string[], S extends string> = { readonly [K in R[number]]: readonly [S] };

const rows = <const R extends readonly string[], const S extends string>(status: S, reasons: R): Rows<R, S> =>
  Object.fromEntries(reasons.map((r) => [r, [status] as const])) as Rows<R, S>;

/** "Not evaluated": each reason `Unknown` on a condition, in the order given (the reasons page's order). */
export const notEvaluated = <const R extends readonly NotEvaluatedReason[]>(...reasons: R) => rows("Unknown", reasons);

/** The same reasons on Ready, which repeats them: each `False`, in the order given. */
export const notEvaluatedReady = <const R extends readonly NotEvaluatedReason[]>(...reasons: R) =>
  rows("False", reasons);

/**
 * Not evaluated without a Tailnet, its credentials, the named proxy class, a valid spec or the Tailnet's
 * consent (spec.tenancy, src/kinds/shared/tenancy.ts: nothing is minted). TagInUse: a Headscale node this
 * object did not register carries its tag (the tag is someone else's), or its derived tag is one another
 * object kept from before injective derivation (src/kinds/shared/kept-tags.ts). The agent kinds' order.
 */
export const WORKLOAD_NOT_EVALUATED = notEvaluated(
  "NoTailnet",
  "NoAPIKey",
  "ProxyClassMissing",
  "InvalidSpec",
  "NamespaceNotAllowed",
  "TagNotGranted",
  "TagInUse",
);
