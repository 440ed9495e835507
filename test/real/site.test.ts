/**
 * TailnetSite against the real world (issue 14 § Site): the real Headscale 0.29.3, the real subnet
 * router (tailscaled advertising 192.168.10.0/24 in front of 192.168.10.5) and real clients. The site
 * and the Tailnet (Apply) are driven through the Metacontroller loop; no pod runs (a site has no
 * children). What is proven here:
 * - the approval shows in `headscale nodes list-routes` and in the site's status;
 * - the grant the Tailnet renders for `allowFrom: [group:eng]` is enforced by the real packet filters:
 *   the laptop (alice, group:eng) reaches 192.168.10.5, the outsider (mallory, no group, routes
 *   accepted too) does not;
 * - a default-route site does not stop the policy of everyone else (issue 15 item 12);
 * - deleting the site withdraws exactly its approval: the router's other routes stay, also after the
 *   router announces its routes again (issue 15 item 13).
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { parseHuJson } from "../../src/policy/hujson.js";
import { parentObject } from "../fixtures/hooks.js";
import { API, listRoutes, type RealOperator, socksEcho, startOperator } from "./operator.js";
import { waitFor } from "./peers.js";
import { type RealWorld, SITE_ECHO_PORT, SITE_HOST, SITE_PREFIX, startRealWorld, TAGS } from "./world.js";

/** A route of the router that is none of the site's business (approved by an administrator). */
const OTHER_ROUTE = "10.50.0.0/16";

describe("TailnetSite on the real Headscale", { timeout: 600_000 }, () => {
  let world: RealWorld;
  let op: RealOperator;

  before(async () => {
    world = await startRealWorld({ id: "site" });
    // No reserved networks: a default route overlaps every network, and a RouteConflict would hide
    // what a default-route site does to the policy (issue 15 item 12).
    op = await startOperator(world, { tailnet: { reservedNetworks: [] } });
    // The outsider accepts routes as the laptop does: whatever keeps it out is the policy, not its prefs.
    await world.peers.outsider.tailscale(["set", "--accept-routes"]);
  });
  after(async () => {
    await op?.close();
    await world?.close();
  });

  const siteReasons = (name: string) => op.reasons("TailnetSite", name, "net");
  // The operator's policy starts with its marker comment (src/policy/marker.ts): HuJSON, not JSON.
  const livePolicy = async () => {
    const read = parseHuJson(await world.headscale.cli(["policy", "get"]));
    assert.ok(read.ok, read.ok ? "" : read.message);
    return read.value;
  };
  const routerRow = async () => {
    const row = (await listRoutes(world)).get("router");
    assert.ok(row, "the router is listed by `headscale nodes list-routes`");
    return row;
  };
  const describeWorld = async () =>
    [
      `list-routes: ${JSON.stringify([...(await listRoutes(world)).values()])}`,
      `site: ${JSON.stringify(op.mc.get(API, "TailnetSite", "lan", "net")?.status)}`,
      `tailnet: ${JSON.stringify(op.reasons("Tailnet", "home"))}`,
      op.failures(),
      world.peers.laptop.daemon().logs(),
    ].join("\n");

  it("approves the site's route on the real server; the laptop reaches 192.168.10.5, the outsider does not", async () => {
    const before = await routerRow();
    assert.deepEqual(before.approved_routes ?? [], [], "nothing approved before the site exists");
    assert.deepEqual(before.available_routes, [SITE_PREFIX]);

    op.mc.apply(
      parentObject(
        "TailnetSite",
        "lan",
        {
          tailnetRef: { name: "home" },
          prefixes: [SITE_PREFIX],
          advertiserTags: [TAGS.router],
          allowFrom: ["group:eng"],
        },
        { namespace: "net" },
      ),
    );
    await op.mc.settle();
    assert.deepEqual(op.mc.errors, []);
    assert.equal(op.reasons("Tailnet", "home").PolicyApplied, "InSync", "the real server took the rendered policy");

    // The approval, as Headscale's own CLI shows it (approved and elected primary).
    const row = await waitFor("the router serving the site prefix", async () => {
      const r = await routerRow();
      return r.subnet_routes?.includes(SITE_PREFIX) ? r : undefined;
    });
    assert.deepEqual(row.approved_routes, [SITE_PREFIX]);

    // Status of the site, once the loop has seen the approval.
    await op.mc.settle();
    assert.deepEqual(siteReasons("lan"), {
      RouteConflict: "NoConflict",
      UnmanagedOverlap: "None",
      Advertised: "Advertised",
      Approved: "Approved",
      Ready: "Ready",
    });
    assert.deepEqual(op.mc.status(API, "TailnetSite", "lan", "net")?.advertisers, [
      { node: "router", prefixes: [SITE_PREFIX], approved: true },
    ]);
    const policy = (await livePolicy()) as {
      autoApprovers?: { routes?: Record<string, string[]> };
      grants?: { src: string[]; dst: string[] }[];
    };
    assert.deepEqual(policy.autoApprovers?.routes?.[SITE_PREFIX], [TAGS.router]);
    assert.ok(
      policy.grants?.some((g) => g.src.includes("group:eng") && g.dst.includes(SITE_PREFIX)),
      "the site's grant is in the live policy",
    );

    // The data path: laptop → WireGuard → router → 192.168.10.5 (echo), and the outsider refused.
    const echoed = await waitFor(
      "the laptop reaching 192.168.10.5 through the router",
      async () =>
        (await socksEcho(world.peers.laptop, SITE_HOST, SITE_ECHO_PORT, "hello-lan")) === "hello-lan"
          ? true
          : undefined,
      60_000,
      describeWorld,
    );
    assert.equal(echoed, true);
    assert.equal((await world.peers.outsider.status()).BackendState, "Running", "the outsider is up, only refused");
    assert.match(await socksEcho(world.peers.outsider, SITE_HOST, SITE_ECHO_PORT), /^error: /);
  });

  it("a default-route site does not stop everyone else's policy: exit-node support on the real server", async (t) => {
    const router = world.peers.router;
    // Whatever happens here, the next test starts from the lan site alone on a plain subnet router.
    t.after(async () => {
      op.mc.delete(API, "TailnetSite", "everything", "net");
      op.mc.delete(API, "TailnetSite", "exit", "net");
      await op.mc.settle().catch(() => undefined);
      await router.tailscale(["set", "--advertise-exit-node=false"]);
      const r = await routerRow();
      if (r.approved_routes?.some((x) => x.endsWith("/0"))) {
        await world.headscale.cli(["nodes", "approve-routes", "-i", String(r.id), "-r", SITE_PREFIX]);
      }
    });
    const tailnetPolicy = () =>
      op.mc.status(API, "Tailnet", "home")?.policy as { renderedHash?: string; appliedHash?: string };
    await router.tailscale(["set", "--advertise-exit-node"]);
    await waitFor("the router announcing exit routes", async () =>
      (await routerRow()).available_routes?.includes("0.0.0.0/0"),
    );

    // A lone 0.0.0.0/0: Headscale 0.29 refuses it as a grant destination (and a `routes` key of it
    // approves no exit node), so the site must be refused on its own, not in everyone's policy.
    op.mc.apply(
      parentObject(
        "TailnetSite",
        "everything",
        {
          tailnetRef: { name: "home" },
          prefixes: ["0.0.0.0/0"],
          advertiserTags: [TAGS.router],
          allowFrom: ["group:eng"],
        },
        // Older than the lan site: it may not take the lan site down either (an overlap it is not).
        { namespace: "net", creationTimestamp: "2026-10-01T00:00:00Z" },
      ),
    );
    await op.mc.settle();
    assert.deepEqual(op.mc.errors, []);
    assert.equal(
      op.reasons("Tailnet", "home").PolicyApplied,
      "InSync",
      op.condition("Tailnet", "home", "PolicyApplied")?.message,
    );
    assert.notEqual(siteReasons("everything").Ready, "Ready");
    assert.equal(op.condition("TailnetSite", "everything", "Ready", "net")?.status, "False");
    const lone = (await livePolicy()) as { grants?: { dst: string[] }[] };
    assert.ok(!lone.grants?.some((g) => g.dst.includes("0.0.0.0/0")), "no raw default route in the live policy");
    assert.ok(
      lone.grants?.some((g) => g.dst.includes(SITE_PREFIX)),
      "the lan site's grant is still live",
    );
    assert.equal(await socksEcho(world.peers.laptop, SITE_HOST, SITE_ECHO_PORT, "still"), "still");
    op.mc.delete(API, "TailnetSite", "everything", "net");
    await op.mc.settle();
    assert.equal(op.mc.get(API, "TailnetSite", "everything", "net"), undefined, "finalized");

    // The pair 0.0.0.0/0 + ::/0: an exit-node site (autoApprovers.exitNode, autogroup:internet).
    op.mc.apply(
      parentObject(
        "TailnetSite",
        "exit",
        {
          tailnetRef: { name: "home" },
          prefixes: ["0.0.0.0/0", "::/0"],
          advertiserTags: [TAGS.router],
          allowFrom: ["group:eng"],
        },
        { namespace: "net", creationTimestamp: "2026-11-03T00:00:00Z" },
      ),
    );
    await op.mc.settle();
    assert.deepEqual(op.mc.errors, []);
    assert.equal(
      op.reasons("Tailnet", "home").PolicyApplied,
      "InSync",
      op.condition("Tailnet", "home", "PolicyApplied")?.message,
    );
    const live = (await livePolicy()) as {
      autoApprovers?: { exitNode?: string[]; routes?: Record<string, string[]> };
      grants?: { src: string[]; dst: string[] }[];
    };
    assert.deepEqual(live.autoApprovers?.exitNode, [TAGS.router]);
    assert.ok(live.grants?.some((g) => g.src.includes("group:eng") && g.dst.includes("autogroup:internet")));
    assert.ok(
      live.grants?.some((g) => g.dst.includes(SITE_PREFIX)),
      "the lan site's grant is still live",
    );
    assert.equal(tailnetPolicy()?.appliedHash, tailnetPolicy()?.renderedHash, "what is live is what was rendered");
    const exitRow = await waitFor("the exit routes approved on the router", async () => {
      const r = await routerRow();
      return r.approved_routes?.includes("0.0.0.0/0") && r.approved_routes.includes("::/0") ? r : undefined;
    });
    assert.ok(exitRow.approved_routes?.includes(SITE_PREFIX));
    await op.mc.settle();
    assert.equal(siteReasons("exit").Ready, "Ready", JSON.stringify(op.mc.status(API, "TailnetSite", "exit", "net")));
    assert.equal(await socksEcho(world.peers.laptop, SITE_HOST, SITE_ECHO_PORT, "still"), "still");

    // Deleting the exit-node site withdraws the exit routes and nothing else.
    op.mc.delete(API, "TailnetSite", "exit", "net");
    await op.mc.settle();
    assert.equal(op.mc.get(API, "TailnetSite", "exit", "net"), undefined, "finalized");
    assert.deepEqual((await routerRow()).approved_routes, [SITE_PREFIX], "the exit routes withdrawn, the lan kept");
  });

  it("deleting the site withdraws exactly its approval; the router's other routes stay", async () => {
    const router = world.peers.router;
    // An administrator's own route on the same router: announced and approved by hand.
    await router.tailscale(["set", `--advertise-routes=${SITE_PREFIX},${OTHER_ROUTE}`]);
    const id = String(
      (
        await waitFor("the router announcing both routes", async () => {
          const r = await routerRow();
          return r.available_routes?.includes(OTHER_ROUTE) ? r : undefined;
        })
      ).id,
    );
    await world.headscale.cli(["nodes", "approve-routes", "-i", id, "-r", `${SITE_PREFIX},${OTHER_ROUTE}`]);
    assert.deepEqual((await routerRow()).approved_routes?.sort(), [OTHER_ROUTE, SITE_PREFIX].sort());
    await op.mc.settle();
    assert.equal(siteReasons("lan").Ready, "Ready");

    op.mc.delete(API, "TailnetSite", "lan", "net");
    await op.mc.settle();
    assert.deepEqual(op.mc.errors, []);
    assert.equal(op.mc.get(API, "TailnetSite", "lan", "net"), undefined, "the site is finalized");
    assert.deepEqual((await routerRow()).approved_routes, [OTHER_ROUTE], "exactly the site's prefix withdrawn");
    const policy = (await livePolicy()) as {
      autoApprovers?: { routes?: Record<string, string[]> };
      grants?: { dst: string[] }[];
    };
    assert.equal(policy.autoApprovers?.routes?.[SITE_PREFIX], undefined, "no auto-approver left to undo it");
    assert.ok(!policy.grants?.some((g) => g.dst.includes(SITE_PREFIX)));
    assert.equal(op.reasons("Tailnet", "home").PolicyApplied, "InSync");

    // It stays withdrawn when the router announces its routes again (Headscale re-runs auto-approval
    // on a changed announcement), and the laptop is cut off.
    await router.tailscale(["set", `--advertise-routes=${OTHER_ROUTE}`]);
    await waitFor("the router announcing one route", async () => (await routerRow()).available_routes?.length === 1);
    await router.tailscale(["set", `--advertise-routes=${SITE_PREFIX},${OTHER_ROUTE}`]);
    await waitFor(
      "the router announcing both routes again",
      async () => (await routerRow()).available_routes?.length === 2,
    );
    assert.deepEqual((await routerRow()).approved_routes, [OTHER_ROUTE]);
    await waitFor(
      "the laptop cut off from 192.168.10.5",
      async () => (await socksEcho(world.peers.laptop, SITE_HOST, SITE_ECHO_PORT)).startsWith("error: "),
      30_000,
    );
  });
});
