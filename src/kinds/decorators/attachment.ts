/**
 * The one planner of a decorated object's attachment (pure). Each decorator fills a description —
 * its object, the attachment's kind and name, how to build it for a Tailnet, how to word the
 * refusals — and this decides which attachments the answer lists and the `Exposed` condition, as
 * the Tailscale operator's Service, LoadBalancer and Ingress reconcilers fill one config for one
 * provisioning engine (tailscale/tailscale cmd/k8s-operator/sts.go Provision).
 *
 * A refusal that comes from the rest of the cluster (the Tailnet missing or ambiguous, or one the
 * builder marks `keep`) keeps an existing attachment as it is — a failed or changed observation never
 * drops a child — and only stops a new one from being made. A refusal the user can fix on the object
 * drops the attachment: the object says "do not expose this".
 */
import { ExposureReason as R } from "../../conditions/tables/exposure.js";
import { type K8sObject, qualifiedName, reuseObserved } from "../../k8s/objects.js";
import { resolveTailnet } from "../shared/annotations.js";
import { flatNamespacesOf } from "../shared/dns-tenancy.js";
import { nameConflicts } from "../shared/ingress-names.js";
import { type ExposedCondition, exposed, type LadderWords, mirrorReady } from "./exposed.js";

/** The age of an attachment not yet made: every existing TailnetIngress is older. */
const FAR_FUTURE = "9999-12-31T23:59:59Z";

/** Made for this object: Metacontroller sets the decorated object as the attachment's controller owner. */
const ownedBy = (o: K8sObject, owner: K8sObject) =>
  !!owner.metadata.uid && !!o.metadata.ownerReferences?.some((r) => r.uid === owner.metadata.uid);

/** The Tailnet the attachment joins, as the builder sees it. */
export interface TailnetContext {
  tailnet: K8sObject;
  baseDomain: string | undefined;
  /** Tailnet.spec.dns flat namespaces (shared/dns-tenancy.ts). */
  flat: string[] | undefined;
}

export type Built<C> = { attachment: K8sObject } | { refusal: C; keep: boolean };

export interface AttachmentDescription<C> {
  /** The decorated object (a Service, an Ingress) and how messages name its kind. */
  owner: K8sObject;
  ownerKind: "Service" | "Ingress" | "Gateway";
  /** The attachment: its kind, and its name, the object's, in the object's namespace. */
  kind: "TailnetIngress" | "TailnetEgress";
  namespace: string;
  name: string;
  /** The Tailnet the annotations name; undefined for "the only one". */
  tailnet: string | undefined;
  tailnets: readonly K8sObject[];
  /** This controller's attachments of the kind. */
  attachments: readonly K8sObject[];
  /** Every object of the attachment's kind in the cluster: a name already held, the names claimed. */
  existing: readonly K8sObject[];
  /** The attachment for the Tailnet, or a refusal (`keep`: it comes from the cluster, not the object). */
  build(context: TailnetContext): Built<C>;
  /** For a TailnetIngress: the names it would publish must be free (docs/dns-names.md). */
  names?: {
    /** The HostnameTaken message: an older TailnetIngress claims one of the names. */
    taken(conflict: { name: string; claimedBy: string }, tailnet: string): string;
    /** Before the attachment exists: the HostnameTaken message of an older claim no TailnetIngress shows yet. */
    rival?(tailnet: string): string | undefined;
  };
  /** A refusal of the object's own that leaves the attachment in place (an ExternalName pointing elsewhere). */
  check?(): C | undefined;
  words: LadderWords;
}

export interface AttachmentPlan<C> {
  attachments: K8sObject[];
  exposed: C | ExposedCondition;
  /** This controller's attachment named after the object, as observed (possibly being deleted). */
  mine?: K8sObject;
  /** desired: the attachment as built; kept: the observed ones left as they are; dropped: none. */
  outcome: "desired" | "kept" | "dropped";
}

export function planAttachment<C>(d: AttachmentDescription<C>): AttachmentPlan<C> {
  const mine = d.attachments.find((o) => o.metadata.name === d.name);
  const kept = (exposedBy: C | ExposedCondition): AttachmentPlan<C> => ({
    attachments: d.attachments.filter((o) => !o.metadata.deletionTimestamp).map(reuseObserved),
    exposed: exposedBy,
    mine,
    outcome: "kept",
  });
  const dropped = (exposedBy: C | ExposedCondition): AttachmentPlan<C> => ({
    attachments: [],
    exposed: exposedBy,
    mine,
    outcome: "dropped",
  });
  const resolved = resolveTailnet(d.tailnet, d.tailnets);
  if (!("tailnet" in resolved)) return kept(exposed("False", resolved.reason, resolved.message));
  const tailnet = resolved.tailnet;
  const id = `${d.namespace}/${d.name}`;
  const same = d.existing.find((o) => qualifiedName(o) === id);
  if (same && !ownedBy(same, d.owner)) {
    const message = `${d.kind} ${id} already exists and was not made for this ${d.ownerKind}; rename or delete it`;
    return dropped(exposed("False", R.NameTaken, message));
  }
  const context: TailnetContext = {
    tailnet,
    baseDomain: (tailnet.spec as { dns?: { baseDomain?: string } } | undefined)?.dns?.baseDomain,
    flat: flatNamespacesOf(tailnet.spec),
  };
  const built = d.build(context);
  if ("refusal" in built) return built.keep ? kept(built.refusal) : dropped(built.refusal);
  const desired = built.attachment;
  const taken = d.names && hostnameTaken(d.names, desired, mine, d.existing, context);
  if (taken) return dropped(exposed("False", R.HostnameTaken, taken));
  const refused = d.check?.();
  const what = `${d.kind} ${id}`;
  return {
    attachments: [desired],
    exposed: refused ?? mirrorReady(what, desired, mine, d.words),
    mine,
    outcome: "desired",
  };
}

/**
 * The HostnameTaken message when another claim holds a name of the attachment: the older claimant
 * keeps it. The candidate keeps its age once it exists; before that every existing ingress is older.
 */
function hostnameTaken(
  names: NonNullable<AttachmentDescription<unknown>["names"]>,
  desired: K8sObject,
  mine: K8sObject | undefined,
  existing: readonly K8sObject[],
  { tailnet, baseDomain, flat }: TailnetContext,
): string | undefined {
  const candidate = {
    ...desired,
    metadata: { ...desired.metadata, creationTimestamp: mine?.metadata.creationTimestamp ?? FAR_FUTURE },
  };
  const taken = nameConflicts(candidate, existing, baseDomain, flat);
  if (taken.length) return names.taken(taken[0], tailnet.metadata.name);
  return mine ? undefined : names.rival?.(tailnet.metadata.name);
}
