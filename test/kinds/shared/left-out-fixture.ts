/** A Tailnet "home" whose status lists one object as left out of the policy (issue 31 item 4). */
import type { K8sObject } from "../../../src/k8s/objects.js";
import { parentObject } from "../../fixtures/hooks.js";

export const LEFT_OUT_MESSAGE = 'grant source "group:nope": group not defined in policy';

export function tailnetLeavingOut(kind: string, namespace: string, name: string): K8sObject {
  return parentObject(
    "Tailnet",
    "home",
    {},
    {
      status: {
        policy: {
          leftOut: [{ kind, namespace, name, reason: "InvalidContribution", message: LEFT_OUT_MESSAGE }],
        },
      },
    },
  );
}

export const leftOutText = (tailnet = "home") =>
  `Tailnet ${tailnet} left this object's contribution out of the policy (InvalidContribution), so that everyone else's is written: ${LEFT_OUT_MESSAGE}`;
