/**
 * The dynamic-apply model (src/emulator/metacontroller/apply.ts) against the cases of Metacontroller v4.17.2's own
 * pkg/dynamic/apply/apply_test.go (TestMerge, TestLastAppliedAnnotation), plus what those cases
 * imply for duplicate merge keys and for ApplyUpdate in pkg/controller/common/manage_children.go.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { apiServerErrors } from "../../../src/emulator/metacontroller/apiserver.js";
import {
  applyCreate,
  applyUpdate,
  detectListMapKey,
  goJson,
  LAST_APPLIED,
  merge,
} from "../../../src/emulator/metacontroller/apply.js";

const j = (s: string) => JSON.parse(s) as Record<string, unknown>;

describe("dynamic apply: apply_test.go TestMerge", () => {
  const cases: [string, string, string, string, string][] = [
    ["empty", "{}", "{}", "{}", "{}"],
    [
      "scalars",
      '{"keep":"other","remove":"other","replace":"other"}',
      '{"remove":"old","replace":"old"}',
      '{"replace":"new","add":"new"}',
      '{"replace":"new","add":"new","keep":"other"}',
    ],
    [
      "nested object",
      '{"update":{"keep":"other","remove":"other"}}',
      '{"update":{"remove":"old","replace":"old"}}',
      '{"update":{"replace":"new","add":"new"}}',
      '{"update":{"replace":"new","add":"new","keep":"other"}}',
    ],
    [
      "replace list",
      '{"list":[1,2,3,{"a":true}]}',
      '{"list":[4,5,6]}',
      '{"list":[7,8,9,{"b":false}]}',
      '{"list":[7,8,9,{"b":false}]}',
    ],
    [
      "merge list-map",
      `{"listMap":[{"name":"keep","value":"other"},{"name":"remove","value":"other"},{"name":"merge","nested":{"keep":"other"}}],
        "ports1":[{"port":80,"keep":"other"}],"ports2":[{"containerPort":80,"keep":"other"}]}`,
      '{"listMap":[{"name":"remove","value":"old"}],"ports1":[{"port":80,"remove":"old"}]}',
      `{"listMap":[{"name":"add","value":"new"},{"name":"merge","nested":{"add":"new"}}],
        "ports1":[{"port":80,"add":"new"},{"port":90}],"ports2":[{"containerPort":80},{"containerPort":90}]}`,
      `{"listMap":[{"name":"keep","value":"other"},{"name":"merge","nested":{"keep":"other","add":"new"}},{"name":"add","value":"new"}],
        "ports1":[{"port":80,"keep":"other","add":"new"},{"port":90}],"ports2":[{"containerPort":80,"keep":"other"},{"containerPort":90}]}`,
    ],
    [
      "replace list of objects that's not a list-map",
      '{"notListMap":[{"name":"keep","value":"other"},{"notName":"remove","value":"other"},{"name":"merge","nested":{"keep":"other"}}]}',
      '{"notListMap":[{"name":"remove","value":"old"}]}',
      '{"notListMap":[{"name":"add","value":"new"},{"name":"merge","nested":{"add":"new"}}]}',
      '{"notListMap":[{"name":"add","value":"new"},{"name":"merge","nested":{"add":"new"}}]}',
    ],
  ];
  for (const [name, observed, last, desired, want] of cases) {
    it(name, () => assert.deepEqual(merge(j(observed), j(last), j(desired)), j(want)));
  }

  it("does not change the observed object it is given", () => {
    const observed = j('{"a":{"b":1}}');
    merge(observed, {}, j('{"a":{"c":2}}'));
    assert.deepEqual(observed, j('{"a":{"b":1}}'));
  });
});

describe("dynamic apply: merge-key guessing", () => {
  it("containerPort and port win over name (knownMergeKeys order)", () => {
    assert.equal(detectListMapKey([{ name: "a", port: 1 }], [{ name: "b", port: 2 }]), "port");
    assert.equal(detectListMapKey([{ name: "a", containerPort: 1, port: 3 }]), "containerPort");
    assert.equal(detectListMapKey([{ name: "a", mountPath: "/x" }]), "mountPath");
    assert.equal(detectListMapKey([{ name: "a" }, { value: 1 }]), "");
    assert.equal(detectListMapKey(["a"]), "");
  });

  it("two ports sharing a number collapse into the same entry twice (the refused update of issue 24)", () => {
    const ports = [
      { name: "dns", port: 53, protocol: "UDP", targetPort: 53 },
      { name: "dns-tcp", port: 53, protocol: "TCP", targetPort: 53 },
    ];
    const observed = { spec: { ports } };
    const out = merge(observed, { spec: { ports } }, { spec: { ports } }) as { spec: { ports: unknown[] } };
    assert.deepEqual(out.spec.ports, [ports[1], ports[1]]);
    assert.deepEqual(apiServerErrors({ kind: "Service", spec: out.spec }), [
      'spec.ports[1].name: Duplicate value: "dns-tcp"',
      'spec.ports[1].port: Duplicate value: {"port":53,"protocol":"TCP"}',
    ]);
  });
});

describe("dynamic apply: last-applied and ApplyUpdate", () => {
  it("writes last-applied as Go's json.Marshal of a map: sorted keys, <>& escaped", () => {
    assert.equal(
      goJson({ b: 1, a: { d: [{ z: 1, y: "<&>" }], c: null } }),
      '{"a":{"c":null,"d":[{"y":"\\u003c\\u0026\\u003e","z":1}]},"b":1}',
    );
    const created = applyCreate({ kind: "ConfigMap", metadata: { name: "x" }, data: { k: "v" } });
    const meta = created.metadata as { annotations: Record<string, string> };
    assert.equal(meta.annotations[LAST_APPLIED], '{"data":{"k":"v"},"kind":"ConfigMap","metadata":{"name":"x"}}');
  });

  it("keeps what others set, drops what we stopped asking for, keeps system fields and status", () => {
    const first = { kind: "ConfigMap", metadata: { name: "x", labels: { a: "1", b: "2" } }, data: { k: "v" } };
    const observed = applyCreate(first) as Record<string, unknown> & { metadata: Record<string, unknown> };
    observed.metadata.uid = "u1";
    observed.metadata.generation = 3;
    (observed.metadata.labels as Record<string, string>).theirs = "t";
    observed.status = { s: 1 };
    const desired = {
      kind: "ConfigMap",
      metadata: { name: "x", labels: { a: "1" }, uid: "ignored" },
      data: { k: "w" },
    };
    const { object, changed } = applyUpdate(observed, desired);
    assert.equal(changed, true);
    const meta = object.metadata as Record<string, unknown>;
    assert.deepEqual(meta.labels, { a: "1", theirs: "t" });
    assert.equal(meta.uid, "u1");
    assert.equal(meta.generation, 3);
    assert.deepEqual(object.status, { s: 1 });
    assert.deepEqual(object.data, { k: "w" });
    assert.equal((meta.annotations as Record<string, string>)[LAST_APPLIED], goJson(desired));
    assert.equal(applyUpdate(object, desired).changed, false, "the same answer again is no update");
  });
});

describe("the API server's duplicate checks", () => {
  it("refuses duplicate container names, port names, volume names and mount paths in a pod template", () => {
    const errs = apiServerErrors({
      kind: "Deployment",
      spec: {
        template: {
          spec: {
            volumes: [{ name: "v" }, { name: "v" }],
            containers: [
              {
                name: "c",
                ports: [
                  { name: "p", containerPort: 1 },
                  { name: "p", containerPort: 2 },
                ],
              },
              {
                name: "c",
                volumeMounts: [
                  { name: "v", mountPath: "/m" },
                  { name: "w", mountPath: "/m" },
                ],
              },
            ],
          },
        },
      },
    });
    assert.deepEqual(errs, [
      'spec.template.spec.volumes[1].name: Duplicate value: "v"',
      'spec.template.spec.containers[1].name: Duplicate value: "c"',
      'spec.template.spec.containers[0].ports[1].name: Duplicate value: "p"',
      'spec.template.spec.containers[1].volumeMounts[1].mountPath: Duplicate value: "/m"',
    ]);
  });
});
