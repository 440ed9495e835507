/**
 * The Tailnet's render, memoised per Tailnet (issue 25): at 20,000 workloads, collecting every object's
 * grants and hashing the whole policy cost about half of a resync's CPU, although a resync usually changes
 * nothing. Each object's contribution (policy/contribution.ts `Contribution`) is kept under the exact fields the
 * collector reads from it — its CollectInput entry as JSON, so a change to anything it reads is a new key —
 * and an egress's also under the node list and allowlist it was resolved against. A resync where nothing
 * changed returns the previous render as it was (no merge, no canonical text, no hash); one where a single
 * object changed recomputes that object's contribution and merges again. The memo never changes output:
 * the merge and the render are the same functions a fresh render calls (test/kinds/composite/tailnet/compose-memo.test.ts
 * holds memoised = fresh byte for byte over random sequences of add/change/remove).
 *
 * Bounds: per Tailnet, one entry per object of its last render (objects not seen in it are dropped) and that
 * render; at most MEMO_TAILNETS Tailnets, least recently rendered dropped first, and a Tailnet's memo goes
 * with its finalize. Soft state of one server (HookDeps.composeMemo, so two servers in one process, as tests and
 * the render CLI run them, never share one): another replica, or a restart, renders fresh.
 */
import { createHash } from "node:crypto";
import type { HsNode } from "../../../headscale/types.js";
import { attachedMemo } from "../../../k8s/attached.js";
import {
  type Contribution,
  type EgressContext,
  egressContext,
  egressContribution,
  gatewayContribution,
  ingressContribution,
  siteContribution,
} from "../../../policy/contribution.js";
import type { CollectInput } from "../../../policy/generated-types.js";
import type { NodeRef } from "../../../policy/targets.js";

/** Tailnets whose render is kept (one process rarely serves more; each costs about its objects' contributions). */
export const MEMO_TAILNETS = 16;

/** One object's collector entry, built on demand; `key` (when known) stands for everything the entry holds. */
export interface Lazy<T> {
  /** "namespace/name". */
  id: string;
  key: string | undefined;
  item: () => T;
}

type Kinds = "egresses" | "ingresses" | "sites" | "gateways";

/** CollectInput with each object's entry lazy, and `context`: what every entry reads from the settings. */
export type LazyCollectInput = Omit<CollectInput, Kinds> & {
  context: string;
} & { [K in Kinds]: Lazy<CollectInput[K][number]>[] };

interface Entry {
  key: string;
  contribution: Contribution;
}

interface TailnetMemo {
  /** What every egress contribution was resolved against: node list, base domain, allowlist. */
  egressKey: string;
  /** LazyCollectInput.context of the last render. */
  context: string;
  /** "kind/namespace/name" → the object's contribution, for the objects of the last render only. */
  objects: Map<string, Entry>;
  /** The last render, under what it read: its base key's sha256 (`policy`), the tag owners, the contributions. */
  last?: { base: string; owners: string; contributions: Contribution[]; result: unknown };
  /** The last DNS records file, under what it was computed from (`dnsMemoised`). */
  dns?: { key: string; value: unknown };
}

/** Fingerprint of what resolving a target reads from a node list, once per list (the view's cached array). */
const nodePrints = attachedMemo<readonly NodeRef[], string>("nodesPrint");
function nodesPrint(nodes: readonly NodeRef[]): string {
  return nodePrints.of(nodes, () => {
    const h = createHash("sha256");
    for (const n of nodes) h.update(JSON.stringify([n.givenName, n.name, n.ipAddresses, n.tags]));
    return h.digest("hex");
  });
}

const NONE: never[] = [];
Object.freeze(NONE);

/**
 * A contribution as the memo keeps it: its empty lists shared, and without its egress target outcomes (the
 * Tailnet's render reads only the generated policy and the left-out values; the egress kind judges its own
 * targets). Most contributions hold one tag and one grant, so this is about half of what an entry costs.
 */
function kept(c: Contribution): Contribution {
  return {
    owner: c.owner,
    tags: c.tags.length ? c.tags : NONE,
    grants: c.grants.length ? c.grants : NONE,
    routes: c.routes.length ? c.routes : NONE,
    exitNode: c.exitNode.length ? c.exitNode : NONE,
    invalid: c.invalid.length ? c.invalid : NONE,
    egressTargets: NONE,
  };
}

const sameRefs = (a: readonly unknown[], b: readonly unknown[]) =>
  a.length === b.length && a.every((x, i) => x === b[i]);

/** Fingerprint of what the DNS records read from a node list, once per list. */
const dnsPrints = attachedMemo<readonly HsNode[], string>("dnsNodesPrint");
export function dnsNodesPrint(nodes: readonly HsNode[]): string {
  return dnsPrints.of(nodes, () => {
    const h = createHash("sha256");
    for (const n of nodes) h.update(JSON.stringify([n.id, n.givenName, n.name, n.online, n.tags, n.ipAddresses]));
    return h.digest("hex");
  });
}

/** The memo and the Tailnet (its uid) a compose may reuse; without one, everything is computed fresh. */
export interface MemoSlot {
  memo: ComposeMemo;
  tailnet: string;
}

/**
 * The compose memo of one server (HookDeps.composeMemo, made where the deps are made): per Tailnet uid, each
 * object's contribution, the last policy and the last DNS records file.
 */
export class ComposeMemo {
  private readonly memos = new Map<string, TailnetMemo>();

  /**
   * `render(collectContributions(input))` for the Tailnet `tailnet` (its uid), reusing what did not change since
   * its last render; the contributions carry no egress target outcomes (`egressTargets` is empty). `render`
   * must be a function of the contributions (read only: they are kept) and of what `base` names alone (the
   * base policy's text and where it comes from).
   */
  policy<R>(
    tailnet: string,
    input: LazyCollectInput,
    base: string,
    render: (contributions: readonly Contribution[]) => R,
  ): R {
    const memo = this.memoOf(tailnet);
    const contributions = takeContributions(memo, input);
    const owners = JSON.stringify(input.tagOwners);
    // `base` names every section line of a shared policy (megabytes at 20,000 objects): its digest is kept
    const baseKey = createHash("sha256").update(base).digest("base64");
    const last = memo.last;
    if (last && last.base === baseKey && last.owners === owners && sameRefs(last.contributions, contributions)) {
      return last.result as R;
    }
    const result = render(contributions);
    memo.last = { base: baseKey, owners, contributions, result };
    return result;
  }

  /**
   * `compute()` for the Tailnet `tailnet`, or its last value when `key` — everything `compute` reads — is the
   * same as then. The DNS records file reads every ingress and the node list (compose.ts dnsRecords).
   */
  dns<T>(tailnet: string, key: string, compute: () => T): T {
    const memo = this.memoOf(tailnet);
    if (memo.dns?.key === key) return memo.dns.value as T;
    const value = compute();
    memo.dns = { key, value };
    return value;
  }

  /** Drops a Tailnet's memo (its finalize). */
  forget(tailnet: string): void {
    this.memos.delete(tailnet);
  }

  /** What the memo holds (tests): Tailnets, and objects (of one Tailnet, or of all). */
  size(tailnet?: string): { tailnets: number; objects: number } {
    let objects = 0;
    for (const [uid, m] of this.memos) if (tailnet === undefined || uid === tailnet) objects += m.objects.size;
    return { tailnets: this.memos.size, objects };
  }

  private memoOf(tailnet: string): TailnetMemo {
    const memos = this.memos;
    let memo = memos.get(tailnet);
    if (memo) memos.delete(tailnet); // re-inserted last: the map's order is least recently rendered first
    memo ??= { egressKey: "", context: "", objects: new Map() };
    memos.set(tailnet, memo);
    if (memos.size > MEMO_TAILNETS) memos.delete(memos.keys().next().value as string);
    return memo;
  }
}

/**
 * Every object's contribution in collector order, the kept entry where its key is unchanged (a new context
 * invalidates every entry, a new egress key every egress's); the memo keeps exactly the objects of this input.
 */
function takeContributions(memo: TailnetMemo, input: LazyCollectInput): Contribution[] {
  const egressKey =
    input.egresses.length === 0
      ? ""
      : JSON.stringify([nodesPrint(input.nodes), input.baseDomain ?? "", input.allowedEgressTargets]);
  const previous = input.context === memo.context ? memo.objects : new Map<string, Entry>();
  let ctx: EgressContext | undefined;
  const context = (): EgressContext => {
    ctx ??= egressContext({
      nodes: input.nodes,
      baseDomain: input.baseDomain,
      allowedEgressTargets: input.allowedEgressTargets,
    });
    return ctx;
  };
  const egressValid = egressKey === memo.egressKey;
  const next = new Map<string, Entry>();
  const contributions: Contribution[] = [];
  const take = <T>(kind: string, lazy: Lazy<T>, make: (item: T) => Contribution, valid = true) => {
    const id = `${kind}/${lazy.id}`;
    // without a cheap key, the entry itself (every field the collector reads) is the key
    const item = lazy.key === undefined ? lazy.item() : undefined;
    const key = lazy.key ?? `=${JSON.stringify(item)}`;
    const old = valid ? previous.get(id) : undefined;
    const entry = old && old.key === key ? old : { key, contribution: kept(make(item ?? lazy.item())) };
    next.set(id, entry);
    contributions.push(entry.contribution);
  };
  for (const o of input.ingresses) take("ingress", o, ingressContribution);
  for (const o of input.egresses) take("egress", o, (eg) => egressContribution(eg, context()), egressValid);
  for (const o of input.sites) take("site", o, siteContribution);
  for (const o of input.gateways) take("gateway", o, gatewayContribution);
  memo.objects = next;
  memo.egressKey = egressKey;
  memo.context = input.context;
  return contributions;
}
