/**
 * Which backends of a TailnetIngress in another namespace it may serve (pure): a namespace editor names only what
 * is theirs, so a Service in namespace B, for an ingress in G ≠ B, is served only with B's consent, one of:
 * - a ReferenceGrant in B (gateway.networking.k8s.io/v1beta1, the Gateway API's own kind) whose `from` lists
 *   {group: tailnet.internal, kind: TailnetIngress, namespace: G} and whose `to` lists {group: "", kind: Service}
 *   with no name or that Service's name (kubernetes-sigs/gateway-api apis/v1beta1 referencegrant_types.go);
 * - for an ingress a Gateway of the class tailnet wrote: the backend names the route it comes from (`route`), and
 *   that route — read from the cluster, not from the ingress — names this Gateway (the ingress's controller
 *   ownerReference, in G) as a parent, has exactly that Service and port as a backendRef, and the route's own
 *   reference is allowed (B is the route's namespace, or a ReferenceGrant in B allows that route kind from the
 *   route's namespace): the Gateway API decorator's own check (`granted`, as refs.ts uses it), reused. An editor
 *   of G who forges the ownerReference thus gets only what a route owner already gave G's Gateway.
 * Without the Gateway API CRDs (the gateway-api component is what tells, ReferenceGrant being one of its child
 * types) no grant can exist, so every backend in another namespace is refused. A refused backend's expose is
 * left out of the agent config (docs/security.md): nothing in B is dialled, not even probed.
 */
import { GROUP } from "../../../api/schemas.js";
import type { K8sObject } from "../../../k8s/objects.js";
import type { PathBackend } from "../../shared/expose-paths.js";
import { GRANT_VERSION, type Grant, GW_GROUP, granted, type Route } from "../../shared/gateway-api-objects.js";
import type { IngressSpec } from "./spec.js";

/**
 * ReferenceGrants as a child type of the TailnetIngress CompositeController, added by the gateway-api component
 * (manifests/components/gateway-api/ingress-referencegrants.yaml): the ingress never owns one, but Metacontroller
 * starts the controller only when the type is served (pkg/controller/composite/controller.go newParentController) and
 * restarts it when its spec changes (metacontroller.go reconcileCompositeController), so its presence is how the hooks know the CRD exists. Asking for a related
 * type that is not served would fail every sync of the ingress ("discovery: can't find resource", metacontroller
 * pkg/dynamic/clientset/clientset.go Resource, via customize/manager.go GetRelatedObjects).
 */
export const REFERENCE_GRANT_CHILD_KEY = `ReferenceGrant.${GRANT_VERSION}`;

/** customize: whether the controller lists ReferenceGrants as a child type (the request carries the whole controller). */
export function grantsServedBy(controller: unknown): boolean {
  const spec = (controller as { spec?: { childResources?: unknown } } | undefined)?.spec;
  const children = Array.isArray(spec?.childResources) ? spec.childResources : [];
  return children.some(
    (c) =>
      (c as { apiVersion?: unknown })?.apiVersion === GRANT_VERSION &&
      (c as { resource?: unknown })?.resource === "referencegrants",
  );
}

/** What observe saw for the rule: whether ReferenceGrants are served at all, and those of the backends' namespaces. */
export interface GrantsSeen {
  served: boolean;
  grants: readonly Grant[];
  /** The HTTPRoutes and GRPCRoutes the backends name (`route`). */
  routes: readonly Route[];
}

export interface BackendUse {
  expose: string;
  /** Its field, for messages: spec.exposes[i].backend, ….paths[j].backend, ….paths[j].backends[k].backend. */
  field: string;
  backend: PathBackend;
}

export interface BackendRefusal {
  reason: "BackendNotPermitted" | "GatewayAPIMissing";
  message: string;
}

/** Every backend of the spec with its field, in spec order. */
export function backendUses(spec: IngressSpec): BackendUse[] {
  return spec.exposes.flatMap((e) => {
    const f = `spec.exposes[${e.index}]`;
    const top: BackendUse[] = e.backend.service ? [{ expose: e.name, field: `${f}.backend`, backend: e.backend }] : [];
    const paths = e.paths.flatMap((p, j): BackendUse[] => [
      ...(p.backend ? [{ expose: e.name, field: `${f}.paths[${j}].backend`, backend: p.backend }] : []),
      ...(p.backends ?? []).flatMap((w, k) =>
        w.backend ? [{ expose: e.name, field: `${f}.paths[${j}].backends[${k}].backend`, backend: w.backend }] : [],
      ),
    ]);
    return [...top, ...paths];
  });
}

/** The backends in a namespace other than the ingress's: the only ones that need consent. */
export const foreignBackends = (spec: IngressSpec, namespace: string): BackendUse[] =>
  backendUses(spec).filter((u) => u.backend.namespace !== undefined && u.backend.namespace !== namespace);

/** The Gateway that controls the ingress (its controller ownerReference), by name; undefined for any other. */
function owningGateway(parent: K8sObject): string | undefined {
  const owner = (parent.metadata.ownerReferences ?? []).find(
    (r) => r.controller === true && r.kind === "Gateway" && String(r.apiVersion).startsWith(`${GW_GROUP}/`),
  );
  return typeof owner?.name === "string" && owner.name ? owner.name : undefined;
}

/** Why the route a backend names does not give it to this ingress, or undefined when it does. */
function routeProblem(parent: K8sObject, b: PathBackend, seen: GrantsSeen): string | undefined {
  const r = b.route;
  if (!r) return "";
  const ns = parent.metadata.namespace ?? "default";
  const gateway = owningGateway(parent);
  const which = `${r.kind} ${r.namespace}/${r.name}`;
  if (!gateway) return `it names ${which}, but no Gateway controls this TailnetIngress`;
  // one message whatever failed: the status of an ingress in G never tells whether a route of another namespace
  // exists, whom it names as parents or what it references
  const route = seen.routes.find((x) => x.kind === r.kind && x.namespace === r.namespace && x.name === r.name);
  const service = b.namespace ?? ns;
  const given =
    route?.parentRefs.some(
      (p) => p.group === GW_GROUP && p.kind === "Gateway" && p.namespace === ns && p.name === gateway,
    ) &&
    route.rules.some((rule) =>
      rule.backends.some(
        (x) =>
          x.group === "" &&
          x.kind === "Service" &&
          x.namespace === service &&
          x.name === b.service &&
          x.port === b.port,
      ),
    ) &&
    granted(
      seen.grants,
      { group: GW_GROUP, kind: route.kind, namespace: route.namespace },
      { group: "", kind: "Service", namespace: service, name: b.service },
    );
  if (!given) return `${which} does not give Gateway ${ns}/${gateway} Service ${service}/${b.service} port ${b.port}`;
  return undefined;
}

/** Why one backend in another namespace is not served, or undefined when it may be. */
function refusalOf(parent: K8sObject, u: BackendUse, seen: GrantsSeen): BackendRefusal | undefined {
  const ns = parent.metadata.namespace ?? "default";
  const target = u.backend.namespace ?? ns;
  if (target === ns) return undefined;
  const service = `Service ${target}/${u.backend.service}`;
  if (!seen.served) {
    return {
      reason: "GatewayAPIMissing",
      message: `expose ${u.expose}: ${u.field} names ${service} in another namespace, which needs a ReferenceGrant there; install the Gateway API ReferenceGrant CRD (gateway.networking.k8s.io/v1beta1) and the operator's gateway-api component`,
    };
  }
  const from = { group: GROUP, kind: "TailnetIngress", namespace: ns };
  if (granted(seen.grants, from, { group: "", kind: "Service", namespace: target, name: u.backend.service })) {
    return undefined;
  }
  const viaRoute = routeProblem(parent, u.backend, seen);
  if (viaRoute === undefined) return undefined;
  return {
    reason: "BackendNotPermitted",
    message: `expose ${u.expose}: ${u.field} names ${service}, which is not this namespace's: it needs a ReferenceGrant in ${target} from ${GROUP} TailnetIngress in ${ns} to that Service${viaRoute ? ` (${viaRoute})` : ""}`,
  };
}

/** Per expose name, the first refusal of its backends; an expose absent from the map is served. */
export function refusedExposes(parent: K8sObject, spec: IngressSpec, seen: GrantsSeen): Map<string, BackendRefusal> {
  const out = new Map<string, BackendRefusal>();
  for (const u of foreignBackends(spec, parent.metadata.namespace ?? "default")) {
    if (out.has(u.expose)) continue;
    const refused = refusalOf(parent, u, seen);
    if (refused) out.set(u.expose, refused);
  }
  return out;
}
