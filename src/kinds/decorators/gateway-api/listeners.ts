/**
 * A Gateway's listeners judged (pure): which the tailnet agent can serve and under which tailnet name, with
 * their Accepted, ResolvedRefs and Conflicted conditions as kubernetes-sigs/gateway-api apis/v1 gateway_types.go
 * defines them. The agent serves https on port 443 with a certificate from a Secret of the Gateway's own
 * namespace (the agent pod mounts it): so a listener is HTTPS on 443, terminates TLS, names one Secret, and
 * its hostname is a name the tailnet can publish — a bare label or `<label>.<zone>` (the Ingress class's rule,
 * src/kinds/shared/ingress-names.ts hostLabel).
 */
import { conditionsOf } from "../../../conditions/table.js";
import {
  ListenerCondition as C,
  GATEWAY_LISTENER_REASONS,
  ListenerReason as R,
} from "../../../conditions/tables/gateway-api.js";
import { HTTPS_PORT } from "../../shared/expose-port.js";
import {
  type Grant,
  GW_GROUP,
  granted,
  type Listener,
  ROUTE_KINDS,
  type RouteKind,
} from "../../shared/gateway-api-objects.js";
import { hostLabel } from "../../shared/ingress-names.js";
import type { AnyCondition } from "./conditions.js";

export const { cond: listenerCond } = conditionsOf(GATEWAY_LISTENER_REASONS);
export type ListenerCondition = AnyCondition<typeof GATEWAY_LISTENER_REASONS>;

export interface JudgedListener {
  listener: Listener;
  /** The tailnet label it publishes (valid listeners). */
  label?: string;
  secretName?: string;
  supportedKinds: RouteKind[];
  accepted: ListenerCondition;
  resolvedRefs: ListenerCondition;
  conflicted: ListenerCondition;
  /** Accepted, refs resolved, no conflict: routes may attach and it is published. */
  valid: boolean;
}

const ok = {
  accepted: listenerCond(C.Accepted, "True", R.Accepted, "the listener is served on the tailnet"),
  refs: listenerCond(C.ResolvedRefs, "True", R.ResolvedRefs, "the certificate Secret is referenced"),
  noConflict: listenerCond(C.Conflicted, "False", R.NoConflicts, ""),
};

function acceptedOf(l: Listener, zone: string | undefined, gatewayLabel: string): ListenerCondition | string {
  if (l.protocol !== "HTTPS") {
    return listenerCond(
      C.Accepted,
      "False",
      R.UnsupportedProtocol,
      `protocol ${l.protocol}: the tailnet agent serves HTTPS only (HTTPRoute and GRPCRoute over TLS it terminates)`,
    );
  }
  if (l.tlsMode !== "Terminate") {
    return listenerCond(C.Accepted, "False", R.UnsupportedProtocol, `tls.mode ${l.tlsMode}: only Terminate`);
  }
  if (l.port !== HTTPS_PORT) {
    return listenerCond(
      C.Accepted,
      "False",
      R.PortUnavailable,
      `port ${l.port}: a tailnet name serves https on 443 only`,
    );
  }
  if (l.hostname === undefined) return gatewayLabel;
  const label = hostLabel(l.hostname, zone);
  if (label === undefined) {
    const where = zone ? `a label of ${zone} (<label>.${zone}) or a bare label` : "a bare DNS label";
    return listenerCond(
      C.Accepted,
      "False",
      R.UnsupportedHostname,
      `hostname ${l.hostname.slice(0, 100)}: not a name the tailnet can publish (one record per name, no wildcards); use ${where}`,
    );
  }
  return label;
}

function refsOf(
  l: Listener,
  gatewayNs: string,
  grants: readonly Grant[],
): { refs: ListenerCondition; secretName?: string; kinds: RouteKind[] } {
  const asked = l.kinds ?? ROUTE_KINDS.map((kind) => ({ group: GW_GROUP, kind }));
  const kinds = ROUTE_KINDS.filter((k) => asked.some((a) => a.group === GW_GROUP && a.kind === k));
  const invalidKinds = asked.filter(
    (a) => a.group !== GW_GROUP || !(ROUTE_KINDS as readonly string[]).includes(a.kind),
  );
  if (invalidKinds.length) {
    const shown = invalidKinds.map((k) => `${k.group}/${k.kind}`).join(", ");
    return {
      refs: listenerCond(
        C.ResolvedRefs,
        "False",
        R.InvalidRouteKinds,
        `allowedRoutes.kinds: ${shown.slice(0, 200)} not supported (HTTPRoute, GRPCRoute)`,
      ),
      kinds,
    };
  }
  const cert = l.certificateRefs[0];
  const bad = (reason: "InvalidCertificateRef" | "RefNotPermitted", message: string) => ({
    refs: listenerCond(C.ResolvedRefs, "False", reason, message),
    kinds,
  });
  if (!cert?.name) return bad(R.InvalidCertificateRef, "tls.certificateRefs: one kubernetes.io/tls Secret is required");
  if (l.certificateRefs.length > 1)
    return bad(R.InvalidCertificateRef, "tls.certificateRefs: the agent serves one certificate per name");
  if (cert.group !== "" || cert.kind !== "Secret") {
    return bad(R.InvalidCertificateRef, `tls.certificateRefs[0]: ${cert.group || "core"}/${cert.kind} is not a Secret`);
  }
  if (cert.namespace !== gatewayNs) {
    const to = { group: "", kind: "Secret", namespace: cert.namespace, name: cert.name };
    if (!granted(grants, { group: GW_GROUP, kind: "Gateway", namespace: gatewayNs }, to)) {
      return bad(
        R.RefNotPermitted,
        `tls.certificateRefs[0]: Secret ${cert.namespace}/${cert.name}: no ReferenceGrant in ${cert.namespace} allows it`,
      );
    }
    return bad(
      R.InvalidCertificateRef,
      `tls.certificateRefs[0]: Secret ${cert.namespace}/${cert.name}: the agent pod mounts Secrets of the Gateway's namespace only`,
    );
  }
  return { refs: ok.refs, secretName: cert.name, kinds };
}

/** Every listener judged; two valid listeners publishing one name conflict (both are then not served). */
export function judgeListeners(
  listeners: readonly Listener[],
  gatewayNs: string,
  gatewayLabel: string,
  zone: string | undefined,
  grants: readonly Grant[],
): JudgedListener[] {
  const judged = listeners.map((l): JudgedListener => {
    const accepted = acceptedOf(l, zone, gatewayLabel);
    const { refs, secretName, kinds } = refsOf(l, gatewayNs, grants);
    const label = typeof accepted === "string" ? accepted : undefined;
    return {
      listener: l,
      ...(label ? { label } : {}),
      ...(secretName ? { secretName } : {}),
      supportedKinds: kinds,
      accepted: typeof accepted === "string" ? ok.accepted : accepted,
      resolvedRefs: refs,
      conflicted: ok.noConflict,
      valid: label !== undefined && refs.status === "True",
    };
  });
  const byLabel = new Map<string, JudgedListener[]>();
  for (const j of judged) if (j.label) byLabel.set(j.label, [...(byLabel.get(j.label) ?? []), j]);
  for (const [label, same] of byLabel) {
    if (same.length < 2) continue;
    for (const j of same) {
      const others = same.filter((o) => o !== j).map((o) => o.listener.name);
      j.conflicted = listenerCond(
        C.Conflicted,
        "True",
        R.HostnameConflict,
        `${label} is also the name of listener ${others.join(", ")}`,
      );
      j.valid = false;
    }
  }
  return judged;
}
