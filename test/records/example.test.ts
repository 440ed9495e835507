/**
 * manifests/headscale-records/headscale-records.yaml, the documented way to run the records sidecar next to
 * Headscale: every object valid, the sidecar's config one the sidecar accepts, and the pieces agreeing with
 * each other — a native sidecar whose startupProbe is the config's /readyz port, the records file in the
 * emptyDir both containers mount (read-only for Headscale), and every kubeconfig the config names mounted.
 */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { dirname } from "node:path";
import { describe, it } from "node:test";
import { parse as parseYaml } from "yaml";
import { parseRecordsConfig } from "../../src/records/config.js";
import { find, parseObjects } from "../chart/helm.js";
import { validateObject } from "../chart/validate.js";

const text = readFileSync(new URL("../../manifests/headscale-records/headscale-records.yaml", import.meta.url), "utf8");
const objects = parseObjects(text);

type Mount = { name: string; mountPath: string; readOnly?: boolean };
type Container = {
  name: string;
  args?: string[];
  restartPolicy?: string;
  ports?: { name: string; containerPort: number }[];
  startupProbe?: { httpGet: { path: string; port: string } };
  securityContext?: Record<string, unknown>;
  volumeMounts: Mount[];
};
type Pod = {
  initContainers: Container[];
  containers: Container[];
  volumes: { name: string; emptyDir?: object; secret?: { secretName: string } }[];
};

describe("example: the records sidecar next to Headscale", () => {
  const pod = (find(objects, "Deployment", "headscale").spec as { template: { spec: Pod } }).template.spec;
  const [sidecar] = pod.initContainers;
  const headscale = pod.containers.find((c) => c.name === "headscale") as Container;
  const config = parseRecordsConfig(
    parseYaml(String((find(objects, "ConfigMap", "headscale-records").data as Record<string, string>)["records.yaml"])),
  );

  it("every object is valid", () => {
    for (const o of objects) validateObject(o);
  });

  it("runs the sidecar natively, before Headscale, until /readyz on the config's port", () => {
    assert.equal(sidecar.restartPolicy, "Always");
    assert.deepEqual(sidecar.args, ["records", "--config", "/etc/headscale-records/config/records.yaml"]);
    const port = sidecar.ports?.find((p) => p.name === sidecar.startupProbe?.httpGet.port);
    assert.equal(sidecar.startupProbe?.httpGet.path, "/readyz");
    assert.equal(port?.containerPort, config.port);
    assert.equal(sidecar.securityContext?.readOnlyRootFilesystem, true);
    assert.equal(sidecar.securityContext?.runAsNonRoot, true);
  });

  it("writes the records file into the emptyDir Headscale mounts read-only at the path its comment names", () => {
    const dir = dirname(config.output);
    const own = sidecar.volumeMounts.find((m) => m.mountPath === dir);
    const hs = headscale.volumeMounts.find((m) => m.mountPath === dir);
    assert.ok(own && hs && own.name === hs.name, "both mount the records folder");
    assert.equal(hs.readOnly, true);
    assert.ok(pod.volumes.find((v) => v.name === own.name)?.emptyDir);
    assert.ok(text.includes(`extra_records_path: ${config.output}`));
  });

  it("mounts every kubeconfig the config names, read-only, from the Secret it ships", () => {
    const kubeconfigs = config.sources.flatMap((s) =>
      s.spec.kind === "kubernetes" && s.spec.kubeconfig ? [s.spec.kubeconfig] : [],
    );
    assert.ok(kubeconfigs.length > 0);
    const secret = find(objects, "Secret", "headscale-records-kubeconfigs");
    for (const path of kubeconfigs) {
      const mount = sidecar.volumeMounts.find((m) => m.mountPath === dirname(path));
      assert.ok(mount?.readOnly, path);
      assert.equal(pod.volumes.find((v) => v.name === mount.name)?.secret?.secretName, secret.metadata.name);
      assert.ok(Object.hasOwn(secret.stringData as object, path.slice(dirname(path).length + 1)), path);
    }
  });
});
