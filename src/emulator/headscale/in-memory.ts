/**
 * The Headscale that `render` talks to: a snapshot file (the shape `tailnet-operator headscale
 * snapshot` writes: nodes, users, policy, API keys, pre-auth keys, version and policy mode) served
 * in memory through an undici MockAgent, so the real client, cache and kinds run unchanged and
 * nothing leaves the process. Writes change only this in-memory copy. Without a file it is an empty
 * 0.29 server in database mode.
 */
import { MockAgent } from "undici";
import { parseHuJson } from "../../policy/hujson.js";

export interface HeadscaleSnapshot {
  version: "0.29" | "0.28";
  policyMode: "database" | "file";
  nodes: Record<string, unknown>[];
  users: Record<string, unknown>[];
  policy: { policy: string; updatedAt: string | null } | null;
  apiKeys: Record<string, unknown>[];
  preAuthKeys: Record<string, unknown>[];
}

export const EMPTY_SNAPSHOT: HeadscaleSnapshot = {
  version: "0.29",
  policyMode: "database",
  nodes: [],
  users: [],
  policy: null,
  apiKeys: [],
  preAuthKeys: [],
};

const isObj = (v: unknown): v is Record<string, unknown> => !!v && typeof v === "object" && !Array.isArray(v);

/** Validates a parsed snapshot file; throws with the field that is wrong. */
export function snapshotFrom(raw: unknown): HeadscaleSnapshot {
  if (!isObj(raw)) throw new Error("snapshot: must be a JSON object");
  const list = (k: string) => {
    const v = raw[k] ?? [];
    if (!Array.isArray(v) || !v.every(isObj)) throw new Error(`snapshot.${k}: must be an array of objects`);
    return v as Record<string, unknown>[];
  };
  const version = raw.version ?? "0.29";
  if (version !== "0.29" && version !== "0.28") throw new Error('snapshot.version: must be "0.29" or "0.28"');
  const policyMode = raw.policyMode ?? "database";
  if (policyMode !== "database" && policyMode !== "file")
    throw new Error('snapshot.policyMode: must be "database" or "file"');
  let policy: HeadscaleSnapshot["policy"] = null;
  if (raw.policy !== undefined && raw.policy !== null) {
    if (!isObj(raw.policy) || typeof raw.policy.policy !== "string")
      throw new Error("snapshot.policy.policy: must be a string");
    policy = {
      policy: raw.policy.policy,
      updatedAt: typeof raw.policy.updatedAt === "string" ? raw.policy.updatedAt : null,
    };
  }
  return {
    version,
    policyMode,
    nodes: list("nodes"),
    users: list("users"),
    policy,
    apiKeys: list("apiKeys"),
    preAuthKeys: list("preAuthKeys"),
  };
}

/** tailscale.com util/dnsname ValidLabel: 1-63 letters, digits and inner hyphens. */
const DNS_LABEL = /^[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?$/;

type Reply = { statusCode: number; data: string; responseOptions?: { headers: Record<string, string> } };
const json = (statusCode: number, body: unknown): Reply => ({
  statusCode,
  data: JSON.stringify(body),
  responseOptions: { headers: { "content-type": "application/json" } },
});
const rpcError = (statusCode: number, code: number, message: string) =>
  json(statusCode, { code, message, details: [] });

/** The in-memory server; `writes` lists what the operator would have changed. */
export class SnapshotHeadscale {
  readonly state: HeadscaleSnapshot;
  readonly writes: string[] = [];
  private keySeq = 0;

  constructor(
    snapshot: HeadscaleSnapshot,
    private readonly now: () => Date,
  ) {
    this.state = structuredClone(snapshot);
  }

  dispatcher(origin: string): MockAgent {
    const agent = new MockAgent();
    agent.disableNetConnect();
    agent
      .get(origin)
      .intercept({ path: () => true, method: () => true })
      .reply((req) => this.handle(req.method, String(req.path), typeof req.body === "string" ? req.body : ""))
      .persist();
    return agent;
  }

  handle(method: string, fullPath: string, bodyText: string): Reply {
    const path = fullPath.split("?")[0];
    let body: Record<string, unknown> = {};
    try {
      body = bodyText ? (JSON.parse(bodyText) as Record<string, unknown>) : {};
    } catch {
      return rpcError(400, 3, "invalid JSON body");
    }
    return (
      this.reads(method, path) ??
      this.policy(method, path, body) ??
      this.preAuthKeys(method, path, body) ??
      this.users(method, path, body) ??
      this.rename(method, path) ??
      this.nodes(method, path, body) ??
      rpcError(404, 5, "Not Found")
    );
  }

  /** Health and the lists: the snapshot as it is now. */
  private reads(method: string, path: string): Reply | undefined {
    if (method !== "GET") return undefined;
    const s = this.state;
    if (path === "/health") return json(200, { status: "pass" });
    if (path === "/api/v1/health") return json(200, { databaseConnectivity: true });
    if (path === "/api/v1/node") return json(200, { nodes: s.nodes });
    if (path === "/api/v1/user") return json(200, { users: s.users });
    if (path === "/api/v1/apikey") return json(200, { apiKeys: s.apiKeys });
    if (path === "/api/v1/preauthkey") return json(200, { preAuthKeys: s.preAuthKeys });
    return undefined;
  }

  /** GET, check (0.29 only) and PUT (database mode only) of the policy. */
  private policy(method: string, path: string, body: Record<string, unknown>): Reply | undefined {
    const s = this.state;
    if (method === "GET" && path === "/api/v1/policy") {
      if (s.policyMode === "file") return json(200, { policy: s.policy?.policy ?? "{}", updatedAt: null });
      if (!s.policy) return rpcError(500, 2, "loading ACL from database: acl policy not found");
      return json(200, s.policy);
    }
    if (method === "POST" && path === "/api/v1/policy/check") {
      if (s.version === "0.28") return rpcError(404, 5, "Not Found");
      const parsed = parseHuJson(String(body.policy ?? ""));
      return parsed.ok ? json(200, {}) : rpcError(400, 3, `parsing policy: ${parsed.message}`);
    }
    if (method === "PUT" && path === "/api/v1/policy") {
      if (s.policyMode === "file") return rpcError(500, 2, "update is disabled for modes other than 'database'");
      const parsed = parseHuJson(String(body.policy ?? ""));
      if (!parsed.ok) return rpcError(500, 2, `setting policy: parsing policy: ${parsed.message}`);
      s.policy = { policy: String(body.policy), updatedAt: this.now().toISOString() };
      this.writes.push("PUT /api/v1/policy");
      return json(200, s.policy);
    }
    return undefined;
  }

  /** Create and expire pre-auth keys. */
  private preAuthKeys(method: string, path: string, body: Record<string, unknown>): Reply | undefined {
    if (method !== "POST") return undefined;
    const s = this.state;
    if (path === "/api/v1/preauthkey") {
      const id = String(1000 + ++this.keySeq);
      // 0.28+ shapes: the full key once, in this answer; the list shows it masked (hscontrol/types/preauth_key.go)
      const prefix = `render${id.padStart(6, "0")}`;
      const userId = typeof body.user === "string" && body.user ? body.user : undefined;
      const key = {
        user: userId ? (s.users.find((u) => String(u.id) === userId) ?? { id: userId, name: "" }) : null,
        id,
        key: `hskey-auth-${prefix}-***`,
        reusable: !!body.reusable,
        ephemeral: !!body.ephemeral,
        used: false,
        expiration: typeof body.expiration === "string" ? body.expiration : null,
        createdAt: this.now().toISOString(),
        aclTags: Array.isArray(body.aclTags) ? body.aclTags : [],
      };
      s.preAuthKeys.push(key);
      this.writes.push(
        userId ? `POST /api/v1/preauthkey (user ${userId})` : `POST /api/v1/preauthkey (tags ${key.aclTags.join(",")})`,
      );
      return json(200, { preAuthKey: { ...key, key: `hskey-auth-${prefix}-rendersecret${id}` } });
    }
    if (path === "/api/v1/preauthkey/expire") {
      this.writes.push(`POST /api/v1/preauthkey/expire (id ${String(body.id)})`);
      // Headscale sets the key's expiration to now (hscontrol/db/preauth_keys.go ExpirePreAuthKey); nodes
      // show their key as loaded from that table, so a later list sees it expired and no one expires it again
      const at = this.now().toISOString();
      const keys = [...s.preAuthKeys, ...s.nodes.map((n) => (n as { preAuthKey?: unknown }).preAuthKey)];
      for (const k of keys as ({ id?: unknown; expiration?: unknown } | null | undefined)[])
        if (k && String(k.id) === String(body.id)) k.expiration = at;
      return json(200, {});
    }
    return undefined;
  }

  /** Create a user (names are unique among local users, as Headscale's database index). */
  private users(method: string, path: string, body: Record<string, unknown>): Reply | undefined {
    if (method !== "POST" || path !== "/api/v1/user") return undefined;
    const s = this.state;
    const name = String(body.name ?? "");
    if (s.users.some((u) => u.name === name && !u.providerId)) {
      return rpcError(500, 13, "creating user: creating user: UNIQUE constraint failed: users.name");
    }
    const id = String(Math.max(0, ...s.users.map((u) => Number(u.id) || 0)) + 1);
    const user = {
      id,
      name,
      createdAt: this.now().toISOString(),
      displayName: String(body.displayName ?? ""),
      email: String(body.email ?? ""),
      providerId: "",
      provider: "",
      profilePicUrl: "",
    };
    s.users.push(user);
    this.writes.push(`POST /api/v1/user (${name})`);
    return json(200, { user });
  }

  /**
   * POST /api/v1/node/<id>/rename/<name>: as 0.29.3 State.RenameNode (hscontrol/state/state.go) orders it: the
   * label is checked first, then the node, then that no other node holds the name; each a 500 with code 2.
   */
  private rename(method: string, path: string): Reply | undefined {
    const m = path.match(/^\/api\/v1\/node\/([^/]+)\/rename\/([^/]+)$/);
    if (method !== "POST" || !m) return undefined;
    const [id, name] = [m[1], decodeURIComponent(m[2])];
    if (!DNS_LABEL.test(name))
      return rpcError(500, 2, `renaming node: ${JSON.stringify(name)} is not a valid DNS label`);
    const node = this.state.nodes.find((n) => String(n.id) === id);
    if (!node) return rpcError(500, 2, `node no longer exists in NodeStore: ${id}`);
    if (this.state.nodes.some((n) => n !== node && n.givenName === name))
      return rpcError(500, 2, `node name is not unique: ${name}`);
    node.givenName = name;
    this.writes.push(`POST /api/v1/node/${id}/rename/${name}`);
    return json(200, { node });
  }

  /** /api/v1/node/<id>[/action]: delete, approve routes, expire, set tags. */
  private nodes(method: string, path: string, body: Record<string, unknown>): Reply | undefined {
    const nodeMatch = path.match(/^\/api\/v1\/node\/([^/]+)(\/[a-z_]+)?$/);
    if (!nodeMatch) return undefined;
    const s = this.state;
    const node = s.nodes.find((n) => String(n.id) === nodeMatch[1]);
    if (!node) return rpcError(404, 5, "node not found");
    const action = nodeMatch[2] ?? "";
    if (method === "DELETE" && action === "") {
      s.nodes = s.nodes.filter((n) => n !== node);
      this.writes.push(`DELETE /api/v1/node/${nodeMatch[1]}`);
      return json(200, {});
    }
    if (method === "POST" && action === "/approve_routes") {
      node.approvedRoutes = Array.isArray(body.routes) ? body.routes : [];
      this.writes.push(
        `POST /api/v1/node/${nodeMatch[1]}/approve_routes (${(node.approvedRoutes as string[]).join(",")})`,
      );
      return json(200, { node });
    }
    if (method === "POST" && action === "/expire") {
      this.writes.push(`POST /api/v1/node/${nodeMatch[1]}/expire`);
      return json(200, { node });
    }
    if (method === "POST" && action === "/tags") {
      node.tags = Array.isArray(body.tags) ? body.tags : [];
      this.writes.push(`POST /api/v1/node/${nodeMatch[1]}/tags`);
      return json(200, { node });
    }
    return undefined;
  }
}
