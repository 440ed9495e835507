/**
 * A GatewayClass's status (pure): one whose controllerName is ours is `Accepted` (apis/v1 gatewayclass_types.go),
 * unless it has parametersRef — the class takes no parameters (the Tailnet is named per Gateway, by annotation),
 * so it is refused with InvalidParameters rather than read differently. Any other class: null (not ours).
 */
import { mergeConditions } from "../../../conditions/condition.js";
import { GatewayClassCondition as C, GatewayClassReason as R } from "../../../conditions/tables/gateway-api.js";
import type { K8sObject } from "../../../k8s/objects.js";
import { recordOf } from "../../../k8s/objects.js";
import { CONTROLLER_NAME } from "../../shared/gateway-api-objects.js";
import { classCond } from "./conditions.js";

export function planGatewayClass(cls: K8sObject, now: Date): Record<string, unknown> | null {
  const spec = recordOf(cls.spec);
  if (spec.controllerName !== CONTROLLER_NAME) return null;
  const accepted =
    spec.parametersRef !== undefined
      ? classCond(
          C.Accepted,
          "False",
          R.InvalidParameters,
          "parametersRef: the class tailnet takes no parameters; name the Tailnet on each Gateway (tailnet.internal/tailnet)",
        )
      : classCond(
          C.Accepted,
          "True",
          R.Accepted,
          "Gateways of this class are served on the tailnet by tailnet-operator",
        );
  const status = recordOf(cls.status);
  return { ...status, conditions: mergeConditions(status.conditions, [accepted], cls.metadata.generation ?? 0, now) };
}
