/**
 * RBAC for the pod API (pod-api.ts): the authorizer kube-apiserver runs, over the Roles, ClusterRoles,
 * RoleBindings and ClusterRoleBindings of the loop's store. Modelled on Kubernetes v1.35
 * (k8s.io/kubernetes pkg/registry/rbac/validation/rule.go `appliesToUser`, pkg/apis/rbac/v1/
 * evaluation_helpers.go `VerbMatches`/`APIGroupMatches`/`ResourceMatches`/`ResourceNameMatches`):
 * a request is allowed when one rule of one role bound to the user matches verb, API group,
 * resource (`*`, the resource, or "&ast;/" plus the subresource) and name; an empty resourceNames matches every name, and a
 * request without a name (create, list) matches only an empty resourceNames.
 */
import type { Obj } from "../../src/emulator/metacontroller/types.js";

/** Who a bearer token authenticates as (a ServiceAccount: user.Info of serviceaccount/util.go). */
export interface KubeUser {
  name: string;
  groups: string[];
}

/** authorizer.Attributes of a resource request. */
export interface RequestAttributes {
  namespace: string;
  verb: string;
  apiGroup: string;
  resource: string;
  subresource?: string;
  name?: string;
}

interface PolicyRule {
  apiGroups?: string[];
  resources?: string[];
  verbs?: string[];
  resourceNames?: string[];
}
interface Subject {
  kind: string;
  name: string;
  namespace?: string;
}
interface RoleRef {
  kind: string;
  name: string;
}

export const SA_PREFIX = "system:serviceaccount:";

/** The user a ServiceAccount token authenticates as (serviceaccount.UserInfo). */
export function serviceAccountUser(namespace: string, name: string): KubeUser {
  return {
    name: `${SA_PREFIX}${namespace}:${name}`,
    groups: ["system:serviceaccounts", `system:serviceaccounts:${namespace}`, "system:authenticated"],
  };
}

/** appliesToUser: a ServiceAccount subject without a namespace means the binding's own. */
function appliesTo(user: KubeUser, s: Subject, bindingNamespace: string): boolean {
  if (s.kind === "User") return user.name === s.name;
  if (s.kind === "Group") return user.groups.includes(s.name);
  if (s.kind === "ServiceAccount") {
    const ns = s.namespace || bindingNamespace;
    return ns !== "" && user.name === `${SA_PREFIX}${ns}:${s.name}`;
  }
  return false;
}

function ruleAllows(r: PolicyRule, a: RequestAttributes): boolean {
  const any = (list: string[] | undefined, want: string) => (list ?? []).some((x) => x === "*" || x === want);
  const combined = a.subresource ? `${a.resource}/${a.subresource}` : a.resource;
  const resourceOk = (r.resources ?? []).some(
    (x) => x === "*" || x === combined || (!!a.subresource && x === `*/${a.subresource}`),
  );
  const names = r.resourceNames ?? [];
  const nameOk = names.length === 0 || names.includes(a.name ?? "");
  return any(r.verbs, a.verb) && any(r.apiGroups, a.apiGroup) && resourceOk && nameOk;
}

/** The rules a binding grants: its Role in the binding's namespace, or a ClusterRole; none when missing. */
function rulesOf(store: Obj[], ref: RoleRef, namespace: string | undefined): PolicyRule[] {
  const role = store.find(
    (o) =>
      o.apiVersion === "rbac.authorization.k8s.io/v1" &&
      o.kind === ref.kind &&
      o.metadata.name === ref.name &&
      (ref.kind === "ClusterRole" || (o.metadata.namespace ?? "") === (namespace ?? "")),
  ) as (Obj & { rules?: PolicyRule[] }) | undefined;
  return role?.rules ?? [];
}

/** Whether RBAC allows `user` the request, with the binding that allowed it (for the SSAR's reason). */
export function rbacAllows(store: Obj[], user: KubeUser, a: RequestAttributes): { allowed: boolean; reason: string } {
  const bindings = store.filter(
    (o) =>
      o.apiVersion === "rbac.authorization.k8s.io/v1" &&
      (o.kind === "ClusterRoleBinding" || (o.kind === "RoleBinding" && o.metadata.namespace === a.namespace)),
  ) as (Obj & { subjects?: Subject[]; roleRef?: RoleRef })[];
  for (const b of bindings) {
    const ns = b.kind === "RoleBinding" ? (b.metadata.namespace ?? "") : "";
    if (!b.roleRef || !(b.subjects ?? []).some((s) => appliesTo(user, s, ns))) continue;
    if (b.kind === "ClusterRoleBinding" && b.roleRef.kind !== "ClusterRole") continue;
    const subject = (b.subjects ?? []).find((s) => appliesTo(user, s, ns)) as Subject;
    if (rulesOf(store, b.roleRef, b.metadata.namespace).some((r) => ruleAllows(r, a))) {
      // the describers of pkg/registry/rbac/validation/rule.go (roleBindingDescriber, describeSubject)
      const who = subject.kind === "ServiceAccount" ? `${subject.name}/${subject.namespace || ns}` : subject.name;
      const binding = b.kind === "RoleBinding" ? `${b.metadata.name}/${ns}` : b.metadata.name;
      return {
        allowed: true,
        reason: `RBAC: allowed by ${b.kind} "${binding}" of ${b.roleRef.kind} "${b.roleRef.name}" to ${subject.kind} "${who}"`,
      };
    }
  }
  return { allowed: false, reason: "" };
}

/** The message of a Forbidden Status (k8s.io/apiserver endpoints/handlers/responsewriters `forbiddenMessage`). */
export function forbiddenMessage(user: KubeUser, a: RequestAttributes): string {
  const resource = a.subresource ? `${a.resource}/${a.subresource}` : a.resource;
  const what = a.name ? `${a.resource} "${a.name}"` : a.resource;
  return (
    `${what} is forbidden: User "${user.name}" cannot ${a.verb} resource "${resource}" in API group ` +
    `"${a.apiGroup}" in the namespace "${a.namespace}"`
  );
}
