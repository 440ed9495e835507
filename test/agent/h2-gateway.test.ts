// A GRPCRoute as the Gateway API class renders it (docs/gateway-api.md), served by the agent over HTTP/2: the rule
// matches the gRPC method's path, POST and an exact header, its weighted backends are h2c, a zero-weight share is
// never chosen, and an expose with `unmatched: notFound` answers 404 to the rest. Real agent, real h2c backend,
// on loopback.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import type { AgentExpose } from "../../src/contract/agent-config.js";
import { GrpcReader, grpcFrame, SERVICE, startGrpcBackend } from "../fakes/agent/grpc.js";
import { createTestPki, type IssuedCertificate, type TestPki } from "../fakes/agent/pki.js";
import { grpcHeaders, h2Client, h2Request, NAME } from "./h2-helpers.js";
import { agentFor } from "./helpers.js";

let pki: TestPki;
let cert: IssuedCertificate;
before(async () => {
  pki = await createTestPki();
  cert = await pki.issue({ names: [NAME] });
});
after(() => pki.cleanup());

test("a GRPCRoute rule: method path, POST and a header route to its h2c backend by weight; the rest is 404", async (t) => {
  const grpc = await startGrpcBackend();
  const idle = await startGrpcBackend();
  t.after(() => Promise.all([grpc.close(), idle.close()]));
  const expose: AgentExpose = {
    name: "gw",
    listenPort: 0,
    mode: "http",
    backend: { host: "127.0.0.1", port: 9 }, // never used: unmatched requests are 404
    unmatched: "notFound",
    paths: [
      {
        path: `${SERVICE}/GetFeature`,
        pathType: "Exact",
        method: "POST",
        headers: [{ name: "x-tenant", value: "a" }],
        backends: [
          { host: "127.0.0.1", port: grpc.port, weight: 1, protocol: "h2c" },
          { host: "127.0.0.1", port: idle.port, weight: 0, protocol: "h2c" },
        ],
      },
    ],
    tls: { certFile: cert.certFile, keyFile: cert.keyFile },
    names: [NAME],
  };
  const agent = await agentFor(t, {
    role: "ingress",
    metricsPort: 0,
    metricsHost: "127.0.0.1",
    listenHost: "127.0.0.1",
    exposes: [expose],
  });
  const session = h2Client(t, agent.ports.exposes[0].listenPort, pki);
  const call = (extra: Record<string, string>) =>
    new Promise<{ status: string | undefined; messages: string[]; grpcStatus: string | undefined }>((resolve) => {
      const stream = session.request(grpcHeaders("GetFeature", extra));
      const reader = new GrpcReader();
      const out = {
        status: undefined as string | undefined,
        messages: [] as string[],
        grpcStatus: undefined as string | undefined,
      };
      stream.on("response", (h) => (out.status = String(h[":status"])));
      stream.on("trailers", (tr) => (out.grpcStatus = tr["grpc-status"] as string | undefined));
      stream.on("data", (chunk: Buffer) => out.messages.push(...reader.push(chunk)));
      stream.on("error", () => {});
      stream.on("close", () => resolve(out));
      stream.end(grpcFrame("1,2"));
    });
  for (let i = 0; i < 5; i++) {
    const ok = await call({ "x-tenant": "a" });
    assert.equal(ok.status, "200");
    assert.deepEqual(ok.messages, ["feature at 1,2"]);
    assert.equal(ok.grpcStatus, "0");
  }
  assert.equal((await call({ "x-tenant": "b" })).status, "404", "another header value matches no rule");
  assert.equal((await call({})).status, "404", "no header matches no rule");
  const get = await h2Request(session, {
    ":method": "GET",
    ":path": `${SERVICE}/GetFeature`,
    ":authority": NAME,
    "x-tenant": "a",
  });
  assert.equal(get.status, 404, "GET is not the rule's method");
  assert.equal(grpc.streams.length, 5, "the weighted backend answered every matching call");
  assert.equal(idle.streams.length, 0, "a zero-weight share is never chosen");
});
