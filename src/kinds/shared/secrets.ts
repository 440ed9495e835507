/** Reading Secret data from related objects (base64 `data`, or `stringData` in hand-made fixtures). */
import type { K8sObject } from "../../k8s/objects.js";

export function secretValue(secret: K8sObject | undefined, key: string): string | undefined {
  if (!secret) return undefined;
  const data = secret.data as Record<string, unknown> | undefined;
  const raw = data?.[key];
  if (typeof raw === "string") {
    const v = Buffer.from(raw, "base64").toString("utf8");
    return v.length ? v : undefined;
  }
  const plain = (secret.stringData as Record<string, unknown> | undefined)?.[key];
  return typeof plain === "string" && plain.length ? plain : undefined;
}

export const b64 = (s: string) => Buffer.from(s, "utf8").toString("base64");
