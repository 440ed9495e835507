// mode kube-api of TailnetIngress: the cluster's API server on the tailnet, each request impersonating the
// connecting peer (src/agent/kube-api.ts). What the kind renders for it, and the spec rules of the mode.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { DEFAULT_CONFIG } from "../../../../src/config.js";
import { validateAgentConfig } from "../../../../src/contract/agent-config.js";
import type { K8sObject } from "../../../../src/k8s/objects.js";
import {
  ingressAgentConfig,
  ingressChildren,
  ingressServeConfig,
} from "../../../../src/kinds/composite/ingress/children.js";
import { ingressSpecProblem, KUBE_API_FILES, readIngressSpec } from "../../../../src/kinds/composite/ingress/spec.js";
import { authKeySecret } from "../../../../src/kinds/shared/authkey.js";
import { ingressNames } from "../../../../src/kinds/shared/ingress-names.js";
import { validateChildren } from "../../../helpers/validate.js";
import { observedReplicas } from "../../shared/replica-fixtures.js";
import { BASE, type ExposeInput, ingress, LOGIN, TAG } from "./fixtures.js";

const KUBE: ExposeInput = { name: "kube", port: 80 } as ExposeInput;
const kubeIngress = (opts: { exposes?: ExposeInput[]; namespace?: string } = {}) =>
  ingress("kube", {
    mode: "kube-api" as "tcp",
    namespace: opts.namespace ?? "tailnet-system",
    exposes: opts.exposes ?? [KUBE],
  });

const KEY = {
  id: "7",
  key: "hskey-auth-x",
  createdAt: new Date("2026-11-29T00:00:00Z"),
  expiresAt: new Date("2026-11-30T00:00:00Z"),
};

type Pod = {
  serviceAccountName: string;
  automountServiceAccountToken: boolean;
  volumes: { name: string; projected?: { sources: Record<string, unknown>[] } }[];
  containers: { name: string; volumeMounts: { name: string; mountPath: string; readOnly?: boolean }[] }[];
};

describe("TailnetIngress mode kube-api", () => {
  const parent = kubeIngress();
  const spec = readIngressSpec(parent);
  const names = ingressNames(parent, BASE).exposes;
  const key = authKeySecret(parent, KEY, {});
  const children = () =>
    ingressChildren(parent, DEFAULT_CONFIG, spec, {
      tag: TAG,
      loginServer: LOGIN,
      names,
      authKeySecret: key,
      replicas: observedReplicas(parent, 1),
      released: new Set(),
      migrated: true,
    });

  it("the agent dials the API server with its projected token and the cluster CA, behind a PROXY header", () => {
    const config = ingressAgentConfig(parent, spec, names);
    assert.deepEqual(config.exposes, [
      {
        name: "kube",
        listenPort: 20000,
        mode: "kube-api",
        backend: { host: "kubernetes.default.svc", port: 443 },
        kubeApi: KUBE_API_FILES,
        proxyProtocol: true,
        names: ["kube.ts.example.com"],
      },
    ]);
    validateAgentConfig(config); // the agent accepts it
    // only serve reaches 127.0.0.2; a peer's own connection lands on 127.0.0.1 and is reset (issue 31)
    assert.deepEqual([config.listenHost, config.refuseHost], ["127.0.0.2", "127.0.0.1"]);
    assert.deepEqual(ingressServeConfig(spec), { TCP: { "80": { TCPForward: "127.0.0.2:20000", ProxyProtocol: 2 } } });
  });

  it("the agent container gets the kube-api token: a projected, expiring ServiceAccount token and kube-root-ca.crt", () => {
    const deployment = children().find((c) => c.kind === "StatefulSet") as K8sObject;
    const pod = (deployment.spec as { template: { spec: Pod } }).template.spec;
    // the replica's own ServiceAccount (issue 32): an impersonation binding names kube-agent-0, kube-agent-1, …
    assert.equal(pod.serviceAccountName, "kube-agent-0");
    assert.equal(pod.automountServiceAccountToken, false);
    const volume = pod.volumes.find((v) => v.name === "kube-api");
    assert.deepEqual(volume?.projected?.sources, [
      { serviceAccountToken: { path: "token", expirationSeconds: 3600 } },
      { configMap: { name: "kube-root-ca.crt", items: [{ key: "ca.crt", path: "ca.crt" }] } },
    ]);
    const mounts = (name: string) => pod.containers.find((c) => c.name === name)?.volumeMounts ?? [];
    assert.deepEqual(
      mounts("agent").filter((m) => m.name === "kube-api"),
      [{ name: "kube-api", mountPath: "/var/run/tailnet/kube-api", readOnly: true }],
    );
    assert.deepEqual(
      mounts("tailscale").filter((m) => m.name === "kube-api"),
      [],
      "tailscaled holds no kube-api mount (only its own token for its state Secret)",
    );
    assert.equal(KUBE_API_FILES.tokenFile, "/var/run/tailnet/kube-api/token");
    assert.equal(KUBE_API_FILES.caFile, "/var/run/tailnet/kube-api/ca.crt");
    validateChildren(children());
  });

  it("other modes mount no token", () => {
    const web = ingress("g");
    const all = ingressChildren(web, DEFAULT_CONFIG, readIngressSpec(web), {
      tag: TAG,
      loginServer: LOGIN,
      names: ingressNames(web, BASE).exposes,
      authKeySecret: authKeySecret(web, KEY, {}),
      replicas: observedReplicas(web, 1),
      released: new Set(),
      migrated: true,
    });
    assert.doesNotMatch(JSON.stringify(all), /kube-api/);
    // the only token is tailscaled's, for its state Secret, mounted in the tailscale container alone
    const sts = all.find((c) => c.kind === "StatefulSet") as K8sObject;
    const pod = (sts.spec as { template: { spec: Pod } }).template.spec;
    const tokenVolumes = pod.volumes.filter((v) => JSON.stringify(v).includes("serviceAccountToken"));
    assert.deepEqual(
      tokenVolumes.map((v) => v.name),
      ["serviceaccount"],
    );
    assert.deepEqual(
      pod.containers.filter((c) => c.volumeMounts?.some((m) => m.name === "serviceaccount")).map((c) => c.name),
      ["tailscale"],
    );
  });

  const problems: [string, () => K8sObject, string | undefined][] = [
    ["one expose without a backend", () => kubeIngress(), undefined],
    [
      "two exposes",
      () => kubeIngress({ exposes: [KUBE, { ...KUBE, name: "k2", port: 81 }] }),
      "spec.exposes[1]: mode kube-api serves the API server on one port (one expose)",
    ],
    [
      "a backend",
      () => kubeIngress({ exposes: [{ ...KUBE, backend: { service: "kubernetes", port: 443 } }] }),
      "spec.exposes[0].backend: not allowed in mode kube-api (the backend is the cluster's API server)",
    ],
    // HTTPS when the expose has tls (a Secret or a cert-manager issuer), never both at once
    ["TLS from a Secret", () => kubeIngress({ exposes: [{ ...KUBE, tls: { secretName: "x" } }] }), undefined],
    [
      "TLS from a Secret and an issuer",
      () => kubeIngress({ exposes: [{ ...KUBE, tls: { secretName: "x", issuerRef: { name: "ca" } } }] }),
      "spec.exposes[0].tls: secretName or issuerRef, not both",
    ],
    [
      "a host",
      () => kubeIngress({ exposes: [{ ...KUBE, host: "api" }] }),
      "spec.exposes[0].host: not allowed in mode kube-api (the API server answers on spec.hostname)",
    ],
    [
      // port is optional in the schema (an http expose means 443 without it), not in kube-api
      "no port",
      () => kubeIngress({ exposes: [{ name: KUBE.name } as ExposeInput] }),
      "spec.exposes[0].port: required in mode kube-api",
    ],
    [
      "tcp without a backend",
      () => ingress("pg", { mode: "tcp", exposes: [{ name: "pg", port: 5432 } as ExposeInput] }),
      "spec.exposes[0].backend: required in mode tcp",
    ],
  ];
  for (const [name, parentOf, want] of problems) {
    it(`ingressSpecProblem: ${name}`, () => assert.equal(ingressSpecProblem(parentOf()), want));
  }
});
