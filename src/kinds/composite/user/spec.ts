/** The TailnetUser spec as the kind reads it (CRD defaults applied): the only place the kind reads `parent.spec`. */
import type { K8sObject } from "../../../k8s/objects.js";

export interface UserSpec {
  name: string;
  displayName?: string;
  email?: string;
  deletionPolicy: "Retain" | "Delete";
}

export function readUserSpec(parent: K8sObject): UserSpec {
  const spec = (parent.spec ?? {}) as Record<string, unknown>;
  const text = (v: unknown) => (typeof v === "string" && v ? v : undefined);
  const displayName = text(spec.displayName);
  const email = text(spec.email);
  return {
    name: typeof spec.name === "string" ? spec.name : "",
    ...(displayName ? { displayName } : {}),
    ...(email ? { email } : {}),
    deletionPolicy: spec.deletionPolicy === "Delete" ? "Delete" : "Retain",
  };
}
