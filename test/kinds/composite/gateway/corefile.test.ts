/** Parsing the cluster Corefile for the ClusterDNSForward check. */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import {
  checkClusterForward,
  parseCorefile,
  parseServerKey,
} from "../../../../src/kinds/composite/gateway/corefile.js";

const IP = "10.96.0.53";

describe("parseCorefile", () => {
  it("reads server blocks, nested blocks, comments and quotes", () => {
    const blocks = parseCorefile(`# cluster DNS
(common) {
  errors
}
.:53 {
    errors
    kubernetes cluster.local in-addr.arpa {
       pods insecure   # comment
    }
    forward . /etc/resolv.conf {
       max_concurrent 1000
    }
}
ts.example.com, other.example.com:53 {
    log "a } b"
    forward . ${IP}
}
`);
    assert.deepEqual(blocks, [
      {
        keys: [".:53"],
        directives: [
          { name: "errors", args: [] },
          {
            name: "kubernetes",
            args: ["cluster.local", "in-addr.arpa"],
            block: [{ name: "pods", args: ["insecure"] }],
          },
          { name: "forward", args: [".", "/etc/resolv.conf"], block: [{ name: "max_concurrent", args: ["1000"] }] },
        ],
      },
      {
        keys: ["ts.example.com", "other.example.com:53"],
        directives: [
          { name: "log", args: ["a } b"] },
          { name: "forward", args: [".", IP] },
        ],
      },
    ]);
  });

  it("server keys: scheme, trailing dot and port", () => {
    assert.deepEqual(parseServerKey("dns://TS.example.com.:53"), { zone: "ts.example.com", port: 53 });
    assert.deepEqual(parseServerKey("ts.example.com"), { zone: "ts.example.com", port: 53 });
    assert.deepEqual(parseServerKey("ts.example.com:1053"), { zone: "ts.example.com", port: 1053 });
    assert.deepEqual(parseServerKey(".:53"), { zone: ".", port: 53 });
    assert.equal(parseServerKey("tls://ts.example.com"), undefined);
  });
});

describe("checkClusterForward", () => {
  const cases: { name: string; corefile: string; configured: boolean }[] = [
    { name: "plain block", corefile: `ts.example.com:53 {\n forward . ${IP}\n}\n`, configured: true },
    {
      name: "with port and scheme",
      corefile: `dns://ts.example.com. {\n forward ts.example.com dns://${IP}:53\n}\n`,
      configured: true,
    },
    {
      name: "one of several upstreams",
      corefile: `ts.example.com {\n forward . 10.0.0.1 ${IP}\n}\n`,
      configured: true,
    },
    { name: "forwards elsewhere", corefile: `ts.example.com {\n forward . 10.0.0.1\n}\n`, configured: false },
    { name: "right IP, wrong port", corefile: `ts.example.com {\n forward . ${IP}:1053\n}\n`, configured: false },
    { name: "block on another port", corefile: `ts.example.com:5353 {\n forward . ${IP}\n}\n`, configured: false },
    { name: "only the root zone forwards there", corefile: `.:53 {\n forward . ${IP}\n}\n`, configured: false },
    { name: "a sub-zone is not the zone", corefile: `a.ts.example.com {\n forward . ${IP}\n}\n`, configured: false },
  ];
  for (const c of cases) {
    it(c.name, () => {
      assert.equal(checkClusterForward(c.corefile, "ts.example.com", IP).configured, c.configured);
    });
  }

  it("says why it is not configured", () => {
    assert.deepEqual(checkClusterForward(".:53 {\n}\n", "ts.example.com", IP), {
      configured: false,
      reason: "noBlock",
      upstreams: [],
    });
    assert.deepEqual(checkClusterForward("ts.example.com {\n forward . 10.0.0.1 10.0.0.2\n}\n", "ts.example.com", IP), {
      configured: false,
      reason: "elsewhere",
      upstreams: ["10.0.0.1", "10.0.0.2"],
    });
  });
});
