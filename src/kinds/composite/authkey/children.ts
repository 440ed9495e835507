/**
 * The one child: the Secret the user named, holding the current key with what a machine's bootstrap needs
 * besides it (the control server URL, the CA). Updated in place on renewal (the name is the user's), so the
 * key id and lifetime ride along as annotations; the next sync reads them back (observedAuthKeySecret) and
 * proves the key against Headscale's listing (the listed, masked prefix) before expiring an older one.
 */
import { commonLabels } from "../../../k8s/labels.js";
import { findObject, type K8sObject, type ObjectMaps } from "../../../k8s/objects.js";
import { CREATED_ANNOTATION, EXPIRES_ANNOTATION, KEY_ID_ANNOTATION } from "../../shared/authkey.js";
import { b64, secretValue } from "../../shared/secrets.js";

export const RENEW_AT_ANNOTATION = "tailnet.internal/renew-at";
export const SECRET_KEYS = { authKey: "authkey", loginServer: "login-server", ca: "ca.crt" } as const;

/** A key as the Secret carries it; `key` is the secret itself, never logged or put in status. */
export interface DeliveredKey {
  id: string;
  key: string;
  createdAt: Date;
  expiresAt: Date;
  renewAt: Date;
}

/** The Secret observed among the children, parsed; undefined when absent or not readable as ours. */
export interface ObservedAuthKeySecret extends DeliveredKey {
  secret: K8sObject;
}

export function observedAuthKeySecret(
  children: ObjectMaps | undefined,
  parent: K8sObject,
  name: string,
): ObservedAuthKeySecret | undefined {
  const secret = findObject(children, "v1", "Secret", name, parent.metadata.namespace);
  if (!secret || secret.metadata.deletionTimestamp) return undefined;
  const a = secret.metadata.annotations ?? {};
  const id = a[KEY_ID_ANNOTATION];
  const key = secretValue(secret, SECRET_KEYS.authKey);
  const createdAt = new Date(a[CREATED_ANNOTATION] ?? "");
  const expiresAt = new Date(a[EXPIRES_ANNOTATION] ?? "");
  const renewAt = new Date(a[RENEW_AT_ANNOTATION] ?? "");
  if (!id || !/^[0-9]+$/.test(id) || !key) return undefined;
  if ([createdAt, expiresAt, renewAt].some((d) => Number.isNaN(d.getTime()))) return undefined;
  return { secret, id, key, createdAt, expiresAt, renewAt };
}

export function authKeySecretChild(
  parent: K8sObject,
  name: string,
  key: DeliveredKey,
  server: { url: string; ca?: string },
): K8sObject {
  return {
    apiVersion: "v1",
    kind: "Secret",
    metadata: {
      name,
      namespace: parent.metadata.namespace,
      labels: commonLabels(parent, "authkey", "tailnet-authkey"),
      annotations: {
        [KEY_ID_ANNOTATION]: key.id,
        [CREATED_ANNOTATION]: key.createdAt.toISOString(),
        [EXPIRES_ANNOTATION]: key.expiresAt.toISOString(),
        [RENEW_AT_ANNOTATION]: key.renewAt.toISOString(),
      },
    },
    type: "Opaque",
    data: {
      [SECRET_KEYS.authKey]: b64(key.key),
      [SECRET_KEYS.loginServer]: b64(server.url),
      ...(server.ca ? { [SECRET_KEYS.ca]: b64(server.ca) } : {}),
    },
  };
}
