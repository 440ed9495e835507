/**
 * The operator's agent scraper against a real agent: GET /status on the pod's port named "metrics", and
 * with names the agent's quad-100 answers for them (the contract DNSServed relies on).
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { startAgent } from "../../src/agent/main.js";
import type { K8sObject } from "../../src/k8s/objects.js";
import { httpAgentScraper, podStatusUrl } from "../../src/server/scraper.js";
import { fakeStatus, startFakeLocalApi } from "../fakes/agent/localapi.js";

const pod = (port: number, ip = "127.0.0.1"): K8sObject => ({
  apiVersion: "v1",
  kind: "Pod",
  metadata: { name: "grafana-agent-0-0", namespace: "monitoring" },
  spec: { containers: [{ name: "agent", ports: [{ name: "metrics", containerPort: port }] }] },
  status: ip ? { podIP: ip } : {},
});

test("scrape asks the agent for names only when given, and reports each answer", async (t) => {
  const localapi = await startFakeLocalApi(
    fakeStatus({ HostName: "grafana-monitoring", TailscaleIPs: ["100.64.0.9"], Online: true }, []),
  );
  t.after(() => localapi.close());
  localapi.setRecords([{ name: "grafana.ts.example.com", type: "A", value: "100.64.0.9" }]);
  const agent = await startAgent(
    {
      role: "ingress",
      metricsPort: 0,
      metricsHost: "127.0.0.1",
      listenHost: "127.0.0.1",
      tailscale: { localApiSocket: localapi.socketPath },
      exposes: [{ name: "web", listenPort: 0, mode: "tcp", backend: { host: "127.0.0.1", port: 9 } }],
    },
    { timers: false, defaultMetrics: false },
  );
  t.after(() => agent.close());
  const scraper = httpAgentScraper(2000);

  const [plain] = await scraper.scrape([pod(agent.metricsPort)]);
  assert.ok(plain.ok);
  assert.equal(plain.status.names, undefined);

  const [asked] = await scraper.scrape([pod(agent.metricsPort)], ["grafana.ts.example.com", "loki.ts.example.com"]);
  assert.ok(asked.ok);
  assert.deepEqual(asked.status.names, [
    { name: "grafana.ts.example.com", addresses: ["100.64.0.9"], rcode: "NOERROR", error: "" },
    { name: "loki.ts.example.com", addresses: [], rcode: "NXDOMAIN", error: "" },
  ]);

  const [noIp] = await scraper.scrape([pod(agent.metricsPort, "")], ["grafana.ts.example.com"]);
  assert.deepEqual(noIp, { ok: false, pod: "grafana-agent-0-0", error: "pod has no IP or no port named metrics yet" });
  assert.equal(podStatusUrl(pod(9080, "fd00::7")), "http://[fd00::7]:9080/status");
});
