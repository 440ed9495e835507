/**
 * The install (manifests/) against a real kube-apiserver: the CRDs become Established, the base and
 * every overlay apply with server-side apply and strict field validation without a warning, the
 * operator's own pod is admitted where the manifests put it, and the aggregated roles give a
 * namespace `edit` user exactly what docs/security.md says.
 */
import assert from "node:assert/strict";
import { readdirSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { parseObjects } from "../../chart/helm.js";
import { REPO } from "../bins.js";
import { apply, applyClean, ensureNamespace } from "./apply.js";
import { type Cluster, startCluster } from "./cluster.js";
import { metacontrollerCrds, monitoringCrds } from "./foreign-crds.js";
import { podFrom } from "./pods.js";

let cluster: Cluster;
const kustomize = (dir: string) => parseObjects(cluster.kubectl(["kustomize", join(REPO, dir)]));
const overlays = readdirSync(join(REPO, "manifests", "overlays")).sort();

describe("the install on a real API server", { timeout: 300_000 }, () => {
  before(async () => {
    cluster = await startCluster();
    applyClean(cluster, [...metacontrollerCrds, ...monitoringCrds]);
    cluster.kubectl(["wait", "--for=condition=Established", "--timeout=60s", "crd", "--all"]);
  });
  after(async () => {
    await cluster?.stop();
  });

  it("every CRD in manifests/crds is Established with its names accepted and a structural schema", () => {
    const crds = kustomize("manifests/crds");
    assert.ok(crds.length >= 6, `manifests/crds has ${crds.length} CRDs`);
    applyClean(cluster, crds);
    const names = crds.map((c) => `crd/${c.metadata.name}`);
    cluster.kubectl(["wait", "--for=condition=Established", "--timeout=60s", ...names]);
    for (const name of names) {
      const crd = JSON.parse(cluster.kubectl(["get", name, "-o", "json"])) as {
        status: { conditions: { type: string; status: string; message?: string }[] };
      };
      const byType = Object.fromEntries(crd.status.conditions.map((c) => [c.type, c]));
      assert.equal(byType.Established?.status, "True", `${name} Established`);
      assert.equal(byType.NamesAccepted?.status, "True", `${name} NamesAccepted`);
      assert.equal(byType.NonStructuralSchema, undefined, `${name}: ${byType.NonStructuralSchema?.message}`);
    }
  });

  it("`kubectl kustomize manifests/` applies strictly (server-side, no warning)", () => {
    applyClean(cluster, kustomize("manifests"));
    const deploy = JSON.parse(cluster.kubectl(["-n", "tailnet-system", "get", "deployment", "-o", "json"])) as {
      items: unknown[];
    };
    assert.ok(deploy.items.length >= 1, "the operator Deployment exists");
  });

  for (const overlay of overlays) {
    it(`the overlay manifests/overlays/${overlay} applies strictly`, () => {
      applyClean(cluster, kustomize(`manifests/overlays/${overlay}`));
    });
  }

  it("the operator's pod (base and every overlay) is admitted in its namespace as labelled there", () => {
    for (const dir of ["manifests", ...overlays.map((o) => `manifests/overlays/${o}`)]) {
      const objects = kustomize(dir);
      const ns = objects.find((o) => o.kind === "Namespace");
      assert.equal(ns?.metadata.labels?.["pod-security.kubernetes.io/enforce"], "restricted", `${dir}: namespace`);
      for (const d of objects.filter((o) => o.kind === "Deployment")) {
        const r = apply(cluster, [podFrom(d, d.metadata.namespace ?? "tailnet-system")], { dryRun: true });
        assert.equal(r.status, 0, `${dir}: ${d.metadata.name}: ${r.stderr}`);
        assert.deepEqual(r.warnings, [], `${dir}: ${d.metadata.name}`);
      }
    }
  });

  describe("a namespace `edit` user (docs/security.md, RBAC)", () => {
    /** `kubectl auth can-i` as jane; `resource/sub` asks about the subresource (not an object named sub). */
    const can = (verb: string, resource: string, ns = "team") => {
      const [res, sub] = resource.split("/");
      const args = ["auth", "can-i", verb, res, "-n", ns, ...(sub ? [`--subresource=${sub}`] : [])];
      return cluster.tryKubectl(args, { as: "user" }).stdout.trim();
    };
    before(() => {
      ensureNamespace(cluster, "team");
      cluster.grantEdit("team");
    });

    it("has full access to TailnetEgresses and TailnetIngresses in the namespace, none elsewhere", () => {
      for (const r of ["tailnetegresses.tailnet.internal", "tailnetingresses.tailnet.internal"]) {
        for (const verb of ["get", "list", "watch", "create", "update", "patch", "delete", "deletecollection"]) {
          assert.equal(can(verb, r), "yes", `${verb} ${r}`);
        }
        assert.equal(can("create", r, "default"), "no", `create ${r} in another namespace`);
      }
    });

    it("reads but cannot write their status (the operator's report is not the user's to forge)", () => {
      for (const r of ["tailnetegresses.tailnet.internal/status", "tailnetingresses.tailnet.internal/status"]) {
        assert.equal(can("get", r), "yes", `get ${r}`);
        for (const verb of ["update", "patch"]) assert.equal(can(verb, r), "no", `${verb} ${r}`);
      }
    });

    it("cannot create, change or delete the routing and policy kinds", () => {
      for (const r of ["tailnetsites", "tailnetgateways", "tailnets", "tailnetproxyclasses"]) {
        for (const verb of ["create", "update", "patch", "delete"]) {
          assert.equal(can(verb, `${r}.tailnet.internal`), "no", `${verb} ${r}`);
        }
      }
    });

    it("has full access to TailnetAuthKeys and reads their status; cannot read or write TailnetUsers (issue 27)", () => {
      for (const verb of ["get", "list", "watch", "create", "update", "patch", "delete", "deletecollection"]) {
        assert.equal(can(verb, "tailnetauthkeys.tailnet.internal"), "yes", `${verb} tailnetauthkeys`);
      }
      assert.equal(can("create", "tailnetauthkeys.tailnet.internal", "default"), "no", "in another namespace");
      assert.equal(can("get", "tailnetauthkeys.tailnet.internal/status"), "yes");
      for (const verb of ["update", "patch"]) assert.equal(can(verb, "tailnetauthkeys.tailnet.internal/status"), "no");
      for (const verb of ["get", "list", "create", "update", "patch", "delete"]) {
        assert.equal(can(verb, "tailnetusers.tailnet.internal"), "no", `${verb} tailnetusers`);
      }
    });

    it("can read every kind in its namespace (the view role is part of edit)", () => {
      for (const r of ["tailnetegresses", "tailnetingresses", "tailnetsites", "tailnetgateways"]) {
        for (const verb of ["get", "list", "watch"])
          assert.equal(can(verb, `${r}.tailnet.internal`), "yes", `${verb} ${r}`);
      }
    });

    it("creating a TailnetEgress as that user goes through; a TailnetSite is forbidden", () => {
      const egress = apply(
        cluster,
        [
          {
            apiVersion: "tailnet.internal/v1alpha1",
            kind: "TailnetEgress",
            metadata: { name: "db", namespace: "team" },
            spec: { tailnetRef: { name: "home" }, targets: [{ name: "pg", host: "db-1", ports: [{ port: 5432 }] }] },
          },
        ],
        { as: "user" },
      );
      assert.equal(egress.status, 0, egress.stderr);
      const site = apply(
        cluster,
        [
          {
            apiVersion: "tailnet.internal/v1alpha1",
            kind: "TailnetSite",
            metadata: { name: "lan", namespace: "team" },
            spec: { tailnetRef: { name: "home" } },
          },
        ],
        { as: "user" },
      );
      assert.notEqual(site.status, 0);
      assert.match(site.stderr, /forbidden/i);
    });
  });
});
