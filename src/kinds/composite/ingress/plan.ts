/**
 * Which Headscale writes a TailnetIngress sync wants (pure); act (act.ts) carries them out: the pre-auth key in
 * the stable Secret (shared/authkey.ts decideAuthKey; older keys expired once the Secret is proven to hold a
 * newer one) and the replicas' node writes (shared/replica-nodes.ts: predecessors, unbound and removed replicas'
 * nodes deleted, names restored).
 */
import { planAgentReplicas } from "../../shared/agent-replicas.js";
import { type AuthKeyPlan, decideAuthKey, expirableKeyIds, stableAuthKeySecretName } from "../../shared/authkey.js";
import { agentHostname } from "../../shared/dns-tenancy.js";
import type { ReplicaNodesPlan } from "../../shared/replica-nodes.js";
import { effectiveTag } from "../../shared/workload.js";
import { ingressHostname } from "./children.js";
import { type IngressFacts, ingressOwnKeys, settingsOf } from "./facts.js";
import type { IngressSpec } from "./spec.js";

/** The Headscale writes a sync wants (pure, see planIngress); act carries them out. */
export interface IngressPlan {
  /** The effective tag, once the Tailnet's settings are known. */
  tag?: string;
  /** Headscale may be written for the key: the Tailnet resolved and this sync's reads succeeded. */
  write: boolean;
  authKey: AuthKeyPlan;
  /** Which node each replica is and the node writes that follow (a resolved Tailnet only). */
  replicas?: ReplicaNodesPlan;
  /** Older keys of this ingress to expire (expirableKeyIds). */
  expireKeys: string[];
}

type PlanFacts = Pick<
  IngressFacts,
  "parent" | "children" | "tailnet" | "policy" | "nodes" | "keys" | "now" | "ownKeys" | "replicas"
>;

/**
 * The writes wanted (pure). The pre-auth key is written only when the Tailnet resolved and the reads of
 * this sync succeeded (a failed observation never writes); nodes are deleted or renamed only from a node
 * list read in this sync, for a resolved Tailnet (the tag is known).
 */
export function planIngress(spec: IngressSpec, facts: PlanFacts): IngressPlan {
  const { tailnet, nodes, now, parent } = facts;
  const settings = settingsOf(tailnet);
  const tag = settings ? effectiveTag(parent, settings.tagPrefix) : undefined;
  const write = tailnet.ok && facts.policy?.ok === true && nodes?.ok === true;
  const stable = stableAuthKeySecretName(parent.metadata.name);
  const authKey = decideAuthKey(
    facts.children.filter((c) => c.metadata.name === stable),
    now,
  );
  if (!(tailnet.ok && tag && nodes)) return { ...(tag ? { tag } : {}), write, authKey, expireKeys: [] };
  const ownKeys = facts.ownKeys ?? ingressOwnKeys(parent, facts.children, tag);
  const hostname = agentHostname(spec.hostname, parent.metadata.namespace ?? "", tailnet.settings.dnsFlatNamespaces);
  const replicas = planAgentReplicas(facts.replicas, {
    replicas: spec.replicas,
    nodes,
    ownKeys,
    tag,
    now,
    hostname: ingressHostname(spec, hostname),
  });
  const held = authKey.action === "reuse" ? authKey.current.secret : undefined;
  const expireKeys = write && facts.keys?.ok ? expirableKeyIds(held, ownKeys, facts.keys.value, now) : [];
  return { tag, write, authKey, replicas, expireKeys };
}
