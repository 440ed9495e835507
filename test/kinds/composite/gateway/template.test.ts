/** The pod template stamp behind the fresh writer's template check. */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { renderStatefulSet } from "../../../../src/kinds/composite/gateway/workload.js";
import { liveTemplateDrift, stampOf, templateHash } from "../../../../src/kinds/shared/template-hash.js";
import { gateway, renderInput } from "./fixtures.js";

type Tpl = {
  metadata: { annotations: Record<string, string>; creationTimestamp?: null };
  spec: Record<string, unknown> & {
    containers: (Record<string, unknown> & { env: Record<string, unknown>[]; ports: Record<string, unknown>[] })[];
    volumes: Record<string, unknown>[];
  };
};

function live(): { metadata: { name: string; namespace: string }; spec: { template: Tpl } } {
  const d = renderStatefulSet(renderInput(gateway()), 0, "gw-gateway-authkey");
  return structuredClone(d) as unknown as { metadata: { name: string; namespace: string }; spec: { template: Tpl } };
}

/** What the API server adds to a pod template on create (pkg/apis/core/v1/defaults.go). */
function defaulted() {
  const d = live();
  const t = d.spec.template;
  t.metadata.creationTimestamp = null;
  Object.assign(t.spec, {
    restartPolicy: "Always",
    terminationGracePeriodSeconds: 30,
    dnsPolicy: "ClusterFirst",
    schedulerName: "default-scheduler",
  });
  for (const c of t.spec.containers) {
    Object.assign(c, { terminationMessagePath: "/dev/termination-log", terminationMessagePolicy: "File" });
    for (const probe of ["readinessProbe", "livenessProbe"]) {
      const p = c[probe] as Record<string, unknown> | undefined;
      if (p) {
        Object.assign(p, { timeoutSeconds: 1, successThreshold: 1, failureThreshold: p.failureThreshold ?? 3 });
        (p.httpGet as Record<string, unknown>).scheme = "HTTP";
      }
    }
    // omitempty: an empty env value is dropped
    for (const e of c.env ?? []) if (e.value === "") delete e.value;
  }
  for (const v of t.spec.volumes) {
    const cm = v.configMap as Record<string, unknown> | undefined;
    if (cm) cm.defaultMode = 420;
  }
  return d;
}

describe("pod template stamp", () => {
  it("the rendered template carries its own hash", () => {
    const d = live();
    assert.equal(stampOf(d.spec.template), templateHash(d.spec.template));
    assert.deepEqual(liveTemplateDrift(d), { drifted: false, stamp: stampOf(d.spec.template) });
  });

  it("server defaults and kubectl rollout restart are not drift", () => {
    const d = defaulted();
    d.spec.template.metadata.annotations["kubectl.kubernetes.io/restartedAt"] = "2026-11-29T10:00:00Z";
    assert.equal(liveTemplateDrift(d).drifted, false);
  });

  const edits: [string, (t: Tpl) => void][] = [
    ["an added env var", (t) => t.spec.containers[0].env.push({ name: "TS_DEBUG", value: "1" })],
    ["a changed image", (t) => Object.assign(t.spec.containers[1], { image: "evil/coredns:1" })],
    [
      "a changed default (imagePullPolicy Always)",
      (t) => Object.assign(t.spec.containers[0], { imagePullPolicy: "Always" }),
    ],
    ["an added sidecar", (t) => t.spec.containers.push({ name: "sniffer", image: "x", env: [], ports: [] })],
    ["a privileged container", (t) => Object.assign(t.spec.containers[0], { securityContext: { privileged: true } })],
    ["hostNetwork", (t) => Object.assign(t.spec, { hostNetwork: true })],
  ];
  for (const [name, edit] of edits) {
    it(`${name} is drift`, () => {
      const d = defaulted();
      edit(d.spec.template);
      const drift = liveTemplateDrift(d);
      assert.equal(drift.drifted, true);
      assert.match(
        drift.drifted ? drift.message : "",
        /^the live pod template of StatefulSet infra\/gw-gateway-0 was changed outside the operator \(rendered hash [0-9a-f]{16}, live template hashes to [0-9a-f]{16}\)$/,
      );
    });
  }

  it("a template without the stamp is drift", () => {
    const d = live();
    delete d.spec.template.metadata.annotations["tailnet.internal/template-hash"];
    const drift = liveTemplateDrift(d);
    assert.equal(
      drift.drifted && drift.message,
      "StatefulSet infra/gw-gateway-0 has no tailnet.internal/template-hash annotation on its pod template",
    );
  });

  it("a key rotated in place renders the same stamp: the template never names a key (issue 32)", () => {
    const a = renderStatefulSet(renderInput(gateway()), 0, "gw-gateway-authkey");
    const b = renderStatefulSet(renderInput(gateway()), 0, "gw-gateway-authkey");
    assert.equal(
      stampOf((a.spec as { template: unknown }).template),
      stampOf((b.spec as { template: unknown }).template),
    );
  });

  it("a new rendering (another replica, another spec) is a new stamp, not drift", () => {
    const a = renderStatefulSet(renderInput(gateway()), 0, "gw-gateway-authkey");
    const b = renderStatefulSet(renderInput(gateway()), 1, "gw-gateway-authkey");
    const sa = stampOf((a.spec as { template: unknown }).template);
    const sb = stampOf((b.spec as { template: unknown }).template);
    assert.notEqual(sa, sb);
    assert.equal(liveTemplateDrift(b as never).drifted, false);
  });
});
