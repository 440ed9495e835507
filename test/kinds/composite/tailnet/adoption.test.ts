import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { lostByReplacing, lostOverLiveText } from "../../../../src/kinds/composite/tailnet/adoption.js";

const grant = { src: ["tag:a"], dst: ["tag:b"], ip: ["tcp:443"] };

describe("what replacing a live policy would drop", () => {
  const rows: { name: string; live: Record<string, unknown>; rendered: Record<string, unknown>; want: string[] }[] = [
    { name: "an empty live policy loses nothing", live: {}, rendered: { grants: [grant] }, want: [] },
    {
      name: "entries the render keeps (equal, key order aside) are not lost",
      live: { grants: [{ ip: ["tcp:443"], dst: ["tag:b"], src: ["tag:a"] }], tagOwners: { "tag:a": [] } },
      rendered: { grants: [grant], tagOwners: { "tag:a": [], "tag:b": [] } },
      want: [],
    },
    {
      name: "rules are counted per section, in policy order",
      live: {
        acls: [{ action: "accept", src: ["*"], dst: ["*:*"] }],
        grants: [grant, { src: ["*"], dst: ["*"], ip: ["*"] }],
        ssh: [{}, {}],
        tests: [{ src: "*", accept: ["100.64.0.1:22"] }],
      },
      rendered: { grants: [grant] },
      want: ["1 acl rule", "1 grant", "2 ssh rules", "1 test"],
    },
    {
      name: "map keys missing or changed are named, at most five",
      live: {
        groups: { "group:a": ["x@"], "group:b": ["y@"] },
        tagOwners: { "tag:a": ["group:a"] },
        hosts: Object.fromEntries(["h1", "h2", "h3", "h4", "h5", "h6", "h7"].map((h, i) => [h, `10.0.0.${i}`])),
      },
      rendered: { groups: { "group:a": ["x@"] }, tagOwners: { "tag:a": [] } },
      want: ["groups group:b", "hosts h1, h2, h3, h4, h5 and 2 more", "tagOwners tag:a"],
    },
    {
      name: "approvers the render does not keep, and other top-level keys",
      live: {
        autoApprovers: { routes: { "10.0.0.0/8": ["tag:r"], "10.1.0.0/16": ["tag:s"] }, exitNode: ["tag:e"] },
        randomizeClientPort: true,
      },
      rendered: { autoApprovers: { routes: { "10.0.0.0/8": ["tag:r", "tag:k8s"] } } },
      want: ["autoApprovers routes 10.1.0.0/16", "autoApprovers exitNode", "randomizeClientPort"],
    },
  ];
  for (const row of rows) {
    it(row.name, () => assert.deepEqual(lostByReplacing(row.live, row.rendered), row.want));
  }

  it("reads the live HuJSON text; blank is nothing, unparsable is unknown", () => {
    assert.deepEqual(lostOverLiveText('// hand\n{"acls": [{"action": "accept"},],}', {}), ["1 acl rule"]);
    assert.deepEqual(lostOverLiveText("  \n", { grants: [grant] }), []);
    assert.equal(lostOverLiveText("{not json", {}), undefined);
  });
});
