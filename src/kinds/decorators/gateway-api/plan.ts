/**
 * The plan of a Gateway (pure): is it ours (its GatewayClass's controllerName is ours), its TailnetIngress
 * attachment through the decorators' one planner (../attachment.ts: Tailnet resolution, NameTaken,
 * HostnameTaken, the attachment's own Ready repeated), and its status as the Gateway API defines it
 * (apis/v1 gateway_types.go): `Accepted`, `Programmed`, each listener's `Accepted`, `Programmed`,
 * `ResolvedRefs`, `Conflicted`, `supportedKinds` and `attachedRoutes`, and `addresses` (the published DNS
 * names, type Hostname). A Gateway of another class gets nothing; one we managed before loses its
 * attachment, and its status is cleared while it still names our addresses (else it is its new controller's).
 */
import { type Condition, mergeConditions } from "../../../conditions/condition.js";
import { GatewayApiCondition as C, GatewayApiReason as R } from "../../../conditions/tables/gateway-api.js";
import { jsonEqual } from "../../../k8s/json-equal.js";
import type { K8sObject } from "../../../k8s/objects.js";
import { recordOf } from "../../../k8s/objects.js";
import { WorkloadAnnotation as Annotation } from "../../shared/annotations.js";
import { GW_GROUP } from "../../shared/gateway-api-objects.js";
import { exposureAnnotations, isDns1035Label, isTag, isTailnetName } from "../annotations.js";
import { planAttachment } from "../attachment.js";
import { type ExposedCondition, exposed } from "../exposed.js";
import { gatewayAttachment, type Unpublished } from "./attachment.js";
import { type BoundGateway, bindGateway, classOf, type GatewayWorld, isOurGateway } from "./bind.js";
import { type GatewayCondition, gatewayCond } from "./conditions.js";
import { type ListenerCondition, listenerCond } from "./listeners.js";

export interface GatewayObservation {
  gateway: K8sObject;
  world: GatewayWorld;
  /** This controller's TailnetIngress attachments (normally one, named after the Gateway). */
  attachments: K8sObject[];
  /** Every TailnetIngress of the cluster: a name held, names claimed. */
  tailnetIngresses: K8sObject[];
  now: Date;
}

export interface GatewayPlan {
  role: "ours" | "released" | "foreign";
  attachments: K8sObject[];
  /** The whole status (ours to write), or null: leave it. */
  status: Record<string, unknown> | null;
}

const cut = (s: string) => s.slice(0, 100);

/**
 * A released Gateway's status: the one the CRD defaults a status without conditions to (kubernetes-sigs/gateway-api
 * config/crd/standard/gateway.networking.k8s.io_gateways.yaml, status.conditions default) — an empty status
 * would be defaulted to it by the API server and then differ from our answer on every resync.
 */
const WAITING_CONDITION = {
  status: "Unknown",
  reason: "Pending",
  message: "Waiting for controller",
  lastTransitionTime: "1970-01-01T00:00:00Z",
};
const WAITING = {
  conditions: [
    { type: "Accepted", ...WAITING_CONDITION },
    { type: "Programmed", ...WAITING_CONDITION },
  ],
};

/** A refusal of the Gateway itself (Accepted False), before its listeners. */
function gatewayRefusal(gateway: K8sObject, classes: readonly K8sObject[]): GatewayCondition | undefined {
  const cls = classes.find((c) => c.metadata.name === classOf(gateway));
  if (recordOf(cls?.spec).parametersRef !== undefined) {
    return gatewayCond(
      C.Accepted,
      "False",
      R.InvalidParameters,
      `GatewayClass ${cls?.metadata.name} has parametersRef; the class tailnet takes none`,
    );
  }
  if (Array.isArray(recordOf(gateway.spec).addresses) && (recordOf(gateway.spec).addresses as unknown[]).length) {
    return gatewayCond(
      C.Accepted,
      "False",
      R.UnsupportedAddress,
      "spec.addresses: the tailnet assigns the addresses; leave it empty",
    );
  }
  const { tailnet, tags, hostname } = exposureAnnotations(gateway);
  const invalid = (message: string) => gatewayCond(C.Accepted, "False", R.InvalidAnnotation, message);
  if (tailnet !== undefined && !isTailnetName(tailnet))
    return invalid(`${Annotation.tailnet}: "${cut(tailnet)}" is not a Tailnet name`);
  if (tags.length > 1) return invalid(`${Annotation.tags}: one tag only, got ${tags.length}`);
  if (tags.length === 1 && !isTag(tags[0]))
    return invalid(`${Annotation.tags}: "${cut(tags[0])}" is not a tag (tag:[a-z][a-z0-9-]*)`);
  if (!isDns1035Label(hostname)) {
    return invalid(`${Annotation.hostname} (default: the Gateway name): "${cut(hostname)}" is not a DNS-1035 label`);
  }
  return undefined;
}

/** The published DNS names of the attachment, as Gateway status.addresses (type Hostname). */
function addressesOf(mine: K8sObject | undefined): { type: string; value: string }[] {
  const s = recordOf(mine?.status) as { exposes?: { dnsName?: string }[] };
  const names = [...new Set((s.exposes ?? []).map((e) => e.dnsName).filter((n): n is string => !!n))];
  return names.map((value) => ({ type: "Hostname", value }));
}

/** Programmed from the attachment's state (Exposed, the decorators' ladder). */
function programmedOf(e: ExposedCondition): GatewayCondition {
  if (e.status === "True") return gatewayCond(C.Programmed, "True", R.Programmed, e.message);
  if (e.status === "Unknown") return gatewayCond(C.Programmed, "Unknown", R.Pending, `${e.reason}: ${e.message}`);
  return gatewayCond(C.Programmed, "False", R.Invalid, `${e.reason}: ${e.message}`);
}

function listenerProgrammed(
  valid: boolean,
  name: string,
  unpublished: Unpublished,
  gateway: GatewayCondition,
): ListenerCondition {
  if (!valid)
    return listenerCond("Programmed", "False", "Invalid", "the listener is not valid (see its other conditions)");
  const why = unpublished.get(name);
  if (why?.reason === "Pending") return listenerCond("Programmed", "Unknown", "Pending", why.message);
  if (why) return listenerCond("Programmed", "False", "Invalid", why.message);
  if (gateway.status === "True") return listenerCond("Programmed", "True", "Programmed", "served on the tailnet");
  if (gateway.status === "Unknown") return listenerCond("Programmed", "Unknown", "Pending", gateway.message);
  return listenerCond("Programmed", "False", "Invalid", gateway.message);
}

function statusOf(
  o: GatewayObservation,
  b: BoundGateway | undefined,
  accepted: GatewayCondition,
  programmed: GatewayCondition,
  unpublished: Unpublished,
  mine: K8sObject | undefined,
): Record<string, unknown> {
  const gen = o.gateway.metadata.generation ?? 0;
  const previous = recordOf(o.gateway.status) as {
    listeners?: { name?: string; conditions?: unknown }[];
    conditions?: unknown;
  };
  const listeners = (b?.listeners ?? []).map((j) => {
    const name = j.listener.name;
    const attached = b?.routes.filter((r) => r.listeners.includes(name)).length ?? 0;
    const conditions = [
      j.accepted,
      listenerProgrammed(j.valid, name, unpublished, programmed),
      j.resolvedRefs,
      j.conflicted,
    ];
    const before = previous.listeners?.find((l) => l.name === name)?.conditions;
    return {
      name,
      supportedKinds: j.supportedKinds.map((kind) => ({ group: GW_GROUP, kind })),
      attachedRoutes: attached,
      conditions: mergeConditions(before, conditions, gen, o.now),
    };
  });
  const addresses = programmed.status === "True" ? addressesOf(mine) : [];
  const conditions: Condition[] = mergeConditions(previous.conditions, [accepted, programmed], gen, o.now);
  return { ...(addresses.length ? { addresses } : {}), listeners, conditions };
}

export function planGateway(o: GatewayObservation): GatewayPlan {
  const gw = o.gateway;
  if (!isOurGateway(gw, o.world.classes)) {
    if (o.attachments.length === 0) return { role: "foreign", attachments: [], status: null };
    // Released (its class changed away, or the class went): our attachment goes; the status is cleared only
    // while it still names our published addresses — one the new class's controller wrote is left alone.
    const current = recordOf(gw.status).addresses;
    const ours = o.attachments.map(addressesOf).find((a) => a.length > 0);
    const stillOurs = ours !== undefined && jsonEqual(current, ours);
    return { role: "released", attachments: [], status: stillOurs ? WAITING : null };
  }
  const refused = gatewayRefusal(gw, o.world.classes);
  if (refused) {
    const programmed = gatewayCond(C.Programmed, "False", R.Invalid, "the Gateway is not accepted");
    return { role: "ours", attachments: [], status: statusOf(o, undefined, refused, programmed, new Map(), undefined) };
  }
  const b = bindGateway(gw, o.world);
  const valid = b.listeners.filter((j) => j.valid).length;
  const invalidNames = b.listeners.filter((j) => !j.valid).map((j) => j.listener.name);
  const accepted =
    valid === 0
      ? gatewayCond(
          C.Accepted,
          "False",
          R.ListenersNotValid,
          "no listener can be served on the tailnet (see each listener's conditions)",
        )
      : invalidNames.length
        ? gatewayCond(
            C.Accepted,
            "True",
            R.ListenersNotValid,
            `listener ${cut(invalidNames.join(", "))} not valid; the others are served`,
          )
        : gatewayCond(C.Accepted, "True", R.Accepted, "every listener is valid");
  if (valid === 0) {
    const programmed = gatewayCond(C.Programmed, "False", R.Invalid, "no valid listener");
    return { role: "ours", attachments: [], status: statusOf(o, b, accepted, programmed, new Map(), undefined) };
  }
  const { tailnet, tags, allowFrom, hostname } = exposureAnnotations(gw);
  let unpublished: Unpublished = new Map();
  const plan = planAttachment<ExposedCondition>({
    owner: gw,
    ownerKind: "Gateway",
    kind: "TailnetIngress",
    namespace: gw.metadata.namespace ?? "default",
    name: gw.metadata.name,
    tailnet,
    tailnets: o.world.tailnets,
    attachments: o.attachments,
    existing: o.tailnetIngresses,
    build: ({ tailnet: t }) => {
      const built = gatewayAttachment(
        b,
        { hostname, ...(tags[0] ? { tag: tags[0] } : {}), allowFrom },
        t.metadata.name,
      );
      unpublished = built.unpublished;
      if (built.attachment) return { attachment: built.attachment };
      return { refusal: exposed("Unknown", "Pending", "no listener has a route to serve yet"), keep: false };
    },
    names: {
      taken: (c, t) =>
        `${c.name} is already claimed by TailnetIngress ${c.claimedBy} in Tailnet ${t}; use another listener hostname or set ${Annotation.hostname}`,
    },
    words: {
      ready: (mine) =>
        `served on the tailnet over https as ${
          addressesOf(mine)
            .map((a) => a.value)
            .join(", ") || gw.metadata.name
        }`,
      reserved: ({ why }) =>
        `a name of this Gateway is the name of another machine (${why}); change the listener hostname or set ${Annotation.hostname}`,
    },
  });
  const programmed = programmedOf(plan.exposed);
  return {
    role: "ours",
    attachments: plan.attachments,
    status: statusOf(o, b, accepted, programmed, unpublished, plan.mine),
  };
}
