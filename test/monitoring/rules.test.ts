/**
 * The bundled alerts: as the operations page describes them (name, threshold, duration,
 * severity), valid for promtool, passing the unit tests in monitoring/tests/, and taking their
 * thresholds from the chart values.
 */
import assert from "node:assert/strict";
import { cpSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { parse, stringify } from "yaml";
import { find, renderChart, repoRoot } from "../chart/helm.js";
import { type AlertRule, alertRules } from "./content.js";
import { renderedRuleFile } from "./generated.js";
import { promtool } from "./promtool.js";

/** The bundled groups, the last-known series first (as monitoring/tests/*.yaml order them). */
const GROUP_ORDER = [
  "tailnet-operator.last-known",
  "tailnet-operator.operator",
  "tailnet-operator.resources",
  "tailnet-operator.policy",
  "tailnet-operator.keys",
];
const RUNBOOK = "https://github.com/tailnet-operator/tailnet-operator/blob/main/docs/OPERATIONS.md";
const testsDir = join(repoRoot, "monitoring", "tests");
const work = mkdtempSync(join(tmpdir(), "tailnet-rules-"));
after(() => rmSync(work, { recursive: true, force: true }));

/** What the operations page and the issue fix for each alert. */
const EXPECTED: Record<string, { severity: string; for?: string; expr: string }> = {
  TailnetOperatorDown: { severity: "critical", for: "5m", expr: 'absent(up{job="tailnet-operator"} == 1)' },
  TailnetHooksSilent: {
    severity: "critical",
    for: "2m",
    expr: 'time() - (\n    max by (job) (max_over_time(tailnet_hook_last_success_timestamp_seconds{job="tailnet-operator"}[1d]) > 0)\n  or\n    max by (job) (process_start_time_seconds{job="tailnet-operator"})\n) > 600',
  },
  TailnetReconcileErrors: {
    severity: "warning",
    for: "10m",
    expr: 'sum by (kind, hook) (rate(tailnet_hook_requests_total{code=~"5.."}[5m])) > 0.1',
  },
  TailnetHeadscaleAPIErrors: {
    severity: "warning",
    expr: 'sum by (job) (rate(tailnet_headscale_requests_total{code=~"5.."}[10m]))\n  /\nsum by (job) (rate(tailnet_headscale_requests_total{code!="0"}[10m]))\n  > 0.05',
  },
  TailnetResourceNotReady: { severity: "warning", for: "10m", expr: "tailnet_resource_ready:last_known == 0" },
  TailnetRouteConflict: {
    severity: "warning",
    for: "15m",
    expr: 'tailnet_resource_condition:last_known{kind="TailnetSite",type="RouteConflict",reason=~"OverlapsReserved|OverlapsSite"} == 1',
  },
  TailnetUnmanagedRouteOverlap: {
    severity: "info",
    for: "30m",
    expr: 'tailnet_resource_condition:last_known{kind="TailnetSite",type="UnmanagedOverlap",reason="Unmanaged"} == 1',
  },
  TailnetGatewayFreshBlocked: {
    severity: "warning",
    for: "5m",
    expr: 'tailnet_resource_ready:last_known{kind="TailnetGateway",reason="FreshBlocked"} == 0',
  },
  TailnetNodeOffline: { severity: "warning", for: "5m", expr: "tailnet_node_online:last_known == 0" },
  TailnetNodeIdentityChanged: {
    severity: "warning",
    for: "5m",
    expr: 'tailnet_resource_condition:last_known{kind=~"TailnetEgress|TailnetIngress",type="NodeIdentity",reason=~"IdentityChanged|ForeignNode|StateLost|Reregistered"} == 1',
  },
  TailnetIngressNamesNotServed: {
    severity: "warning",
    for: "15m",
    expr: 'tailnet_resource_condition:last_known{kind="TailnetIngress",type="DNSServed",reason="NotServed"} == 1',
  },
  TailnetIngressCertificateRenewal: {
    severity: "warning",
    for: "30m",
    expr: 'tailnet_resource_condition:last_known{kind="TailnetIngress",type="TLSReady",reason="TLSExpiring"} == 1',
  },
  TailnetPolicyStale: { severity: "warning", for: "15m", expr: "tailnet_policy_pending:last_known == 1" },
  TailnetPolicyRejected: {
    severity: "warning",
    for: "5m",
    expr: 'tailnet_resource_condition:last_known{kind="Tailnet",type="PolicyApplied",reason="PolicyRejected"} == 1',
  },
  TailnetPolicyApplyErrors: {
    severity: "warning",
    expr: "sum by (tailnet) (increase(tailnet_policy_apply_errors_total[30m])) >= 6",
  },
  TailnetPolicyWriteContended: {
    severity: "warning",
    expr: 'sum by (tailnet) (increase(tailnet_policy_write_retries_total{result="gave_up"}[30m])) >= 3',
  },
  TailnetPolicyGeneratedDrop: {
    severity: "warning",
    expr: "tailnet_policy_generated < max_over_time(tailnet_policy_generated[10m]) / 2",
  },
  TailnetApprovalReplays: {
    severity: "warning",
    expr: "sum by (tailnet) (increase(tailnet_route_approvals_replayed_total[1h])) > 3",
  },
  TailnetAPIKeyExpiringSoon: {
    severity: "warning",
    expr: "tailnet_api_key_expiry_timestamp_seconds:last_known - time() < 604800",
  },
  TailnetEgressAuthKeyExpiringSoon: {
    severity: "warning",
    expr: 'tailnet_auth_key_expiry_timestamp_seconds:last_known{kind="TailnetEgress"} - time() < 86400',
  },
  TailnetIngressAuthKeyExpiringSoon: {
    severity: "warning",
    expr: 'tailnet_auth_key_expiry_timestamp_seconds:last_known{kind="TailnetIngress"} - time() < 86400',
  },
  TailnetAuthKeyRenewalFailing: {
    severity: "warning",
    for: "10m",
    expr: '(tailnet_auth_key_expiry_timestamp_seconds:last_known{kind="TailnetAuthKey"} - time()) and on (namespace, name) (tailnet_resource_condition:last_known{kind="TailnetAuthKey",type="RenewalDue",reason="RenewalFailed"} == 1)',
  },
};

/** Writes rules and copies of the promtool test files into a fresh directory (tests use ../rules.yaml). */
function promtoolWorkspace(name: string, rules: unknown, extraTests: Record<string, unknown> = {}): string {
  const dir = join(work, name);
  cpSync(testsDir, join(dir, "tests"), { recursive: true });
  writeFileSync(join(dir, "rules.yaml"), stringify(rules));
  for (const [file, content] of Object.entries(extraTests)) writeFileSync(join(dir, "tests", file), stringify(content));
  return dir;
}

describe("bundled alert rules", () => {
  const rules = alertRules();
  const byName = new Map(rules.map((r) => [r.alert, r]));

  it("are exactly the alerts of the operations page", () => {
    assert.deepEqual([...byName.keys()].sort(), Object.keys(EXPECTED).sort());
    assert.equal(rules.length, byName.size, "an alert name is used twice");
  });

  for (const [name, want] of Object.entries(EXPECTED)) {
    it(`${name}: expression, duration and severity`, () => {
      const rule = byName.get(name) as AlertRule;
      assert.equal(rule.expr, want.expr);
      assert.equal(rule.for, want.for);
      assert.deepEqual(rule.labels, { severity: want.severity });
      assert.equal(rule.annotations.runbook_url, `${RUNBOOK}#${name.toLowerCase()}`);
      assert.ok(rule.annotations.summary && rule.annotations.description, "summary and description are set");
      assert.doesNotMatch(JSON.stringify(rule), /\$\{/, "no unreplaced placeholder");
    });
  }

  it("pass promtool check rules", () => {
    const dir = promtoolWorkspace("check", renderedRuleFile());
    const run = promtool(["check", "rules", join(dir, "rules.yaml")]);
    assert.equal(run.code, 0, run.output);
    assert.match(run.output, /SUCCESS: 29 rules found/);
  });

  it("pass the promtool unit tests in monitoring/tests", () => {
    const dir = promtoolWorkspace("unit", renderedRuleFile());
    const files = readdirSync(join(dir, "tests")).filter((f) => f.endsWith(".yaml"));
    assert.ok(files.length >= 4);
    const run = promtool(["test", "rules", ...files.map((f) => join("tests", f))], dir);
    assert.equal(run.code, 0, run.output);
    assert.doesNotMatch(run.output, /FAILED/);
  });

  it("fail the promtool unit tests when a threshold changes (the tests can fail)", () => {
    const broken = renderedRuleFile() as { groups: Array<{ rules: Array<{ alert: string; expr: string }> }> };
    for (const g of broken.groups) {
      for (const r of g.rules) if (r.alert === "TailnetPolicyApplyErrors") r.expr = r.expr.replace(">= 6", ">= 7");
    }
    const dir = promtoolWorkspace("mutant", broken);
    const run = promtool(["test", "rules", "tests/policy.yaml"], dir);
    assert.notEqual(run.code, 0);
    assert.match(run.output, /TailnetPolicyApplyErrors/);
  });

  it("fail the silence tests when the alerts read the raw per-object series (the tests can fail)", () => {
    const raw = renderedRuleFile() as { groups: Array<{ rules: Array<{ alert?: string; expr: string }> }> };
    for (const g of raw.groups) for (const r of g.rules) if (r.alert) r.expr = r.expr.replaceAll(":last_known", "");
    const run = promtool(["test", "rules", "tests/silence.yaml"], promtoolWorkspace("raw-series", raw));
    assert.notEqual(run.code, 0);
    // the series vanish with the restarted pod: NotReady resolves at 27m, a RouteConflict once every pod is gone
    assert.match(
      run.output,
      /hooks stop and the operator restarts[^\n]*\n\s*alertname: TailnetResourceNotReady, time: 27m/,
    );
    assert.match(run.output, /every operator pod gone[^\n]*\n\s*alertname: TailnetRouteConflict, time: 1h,/);
  });

  it("fail the silence tests when TailnetHooksSilent forgets a replaced pod's last answer", () => {
    const forgetful = renderedRuleFile() as { groups: Array<{ rules: Array<{ alert?: string; expr: string }> }> };
    for (const g of forgetful.groups) {
      for (const r of g.rules) {
        if (r.alert === "TailnetHooksSilent") r.expr = r.expr.replace(/max_over_time\((.*)\[1d\]\)/, "$1");
      }
    }
    const run = promtool(["test", "rules", "tests/silence.yaml"], promtoolWorkspace("forgetful", forgetful));
    assert.notEqual(run.code, 0);
    assert.match(run.output, /hooks stop and the operator restarts[^\n]*\n\s*alertname: TailnetHooksSilent, time: 33m/);
  });

  it("are evaluated by every promtool test file in the bundled group order, last-known series first", () => {
    const groups = (renderedRuleFile() as { groups: Array<{ name: string }> }).groups.map((g) => g.name);
    assert.deepEqual(groups, GROUP_ORDER);
    for (const file of readdirSync(testsDir).filter((f) => f.endsWith(".yaml"))) {
      const doc = parse(readFileSync(join(testsDir, file), "utf8")) as { group_eval_order?: string[] };
      assert.deepEqual(doc.group_eval_order, GROUP_ORDER, file);
    }
  });

  it("have, for every alert, a promtool case that fires it and a near miss that must not", () => {
    const firing = new Set<string>();
    const quiet = new Set<string>();
    for (const file of readdirSync(testsDir).filter((f) => f.endsWith(".yaml"))) {
      const doc = parse(readFileSync(join(testsDir, file), "utf8")) as {
        tests: Array<{ alert_rule_test?: Array<{ alertname: string; exp_alerts?: unknown[] }> }>;
      };
      for (const t of doc.tests) {
        for (const a of t.alert_rule_test ?? []) (a.exp_alerts?.length ? firing : quiet).add(a.alertname);
      }
    }
    const names = Object.keys(EXPECTED).sort();
    assert.deepEqual(
      names.filter((n) => !firing.has(n)),
      [],
      "alerts without a firing case",
    );
    assert.deepEqual(
      names.filter((n) => !quiet.has(n)),
      [],
      "alerts without a near miss",
    );
  });
});

describe("alert thresholds from chart values", () => {
  const values = {
    monitoring: {
      rules: {
        apiKeyExpiryWarningSeconds: 1209600,
        authKeyExpiryWarningSeconds: 10000000,
        runbookBaseURL: "https://runbooks.example.org/tailnet/",
      },
    },
  };
  const rules = new Map(alertRules(values).map((r) => [r.alert, r]));

  it("reach the expressions as plain integers and the runbook links", () => {
    assert.equal(
      rules.get("TailnetAPIKeyExpiringSoon")?.expr,
      "tailnet_api_key_expiry_timestamp_seconds:last_known - time() < 1209600",
    );
    assert.equal(
      rules.get("TailnetIngressAuthKeyExpiringSoon")?.expr,
      'tailnet_auth_key_expiry_timestamp_seconds:last_known{kind="TailnetIngress"} - time() < 10000000',
    );
    assert.equal(
      rules.get("TailnetNodeOffline")?.annotations.runbook_url,
      "https://runbooks.example.org/tailnet#tailnetnodeoffline",
    );
  });

  it("change when the alert fires (promtool)", () => {
    // 10 days away: quiet with the 7 day default, firing with a 14 day warning.
    const series = [{ series: 'tailnet_api_key_expiry_timestamp_seconds{tailnet="home"}', values: "864000x10" }];
    const test = (expAlerts: unknown[]) => ({
      rule_files: ["../rules.yaml"],
      evaluation_interval: "1m",
      group_eval_order: GROUP_ORDER,
      tests: [
        {
          interval: "1m",
          input_series: series,
          alert_rule_test: [{ eval_time: "5m", alertname: "TailnetAPIKeyExpiringSoon", exp_alerts: expAlerts }],
        },
      ],
    });
    const quietDir = promtoolWorkspace("default-threshold", renderedRuleFile(), { "threshold.yaml": test([]) });
    const quiet = promtool(["test", "rules", "tests/threshold.yaml"], quietDir);
    assert.equal(quiet.code, 0, quiet.output);

    const firing = test([
      {
        exp_labels: { severity: "warning", tailnet: "home" },
        exp_annotations: {
          summary: "The Headscale API key of Tailnet home expires in 9d 23h 55m 0s.",
          description:
            "The API key the operator uses for Tailnet home expires in 9d 23h 55m 0s and has not been rotated. Without it the operator cannot read or write Headscale.",
          runbook_url: "https://runbooks.example.org/tailnet#tailnetapikeyexpiringsoon",
        },
      },
    ]);
    const dir = promtoolWorkspace("custom-threshold", renderedRuleFile(values), { "threshold.yaml": firing });
    const run = promtool(["test", "rules", "tests/threshold.yaml"], dir);
    assert.equal(run.code, 0, run.output);
  });
});

describe("custom rule groups", () => {
  it("replace the bundled groups entirely", () => {
    const groups = [
      { name: "mine", rules: [{ alert: "MyTailnetAlert", expr: "tailnet_node_online == 0", for: "1h" }] },
    ];
    const rule = find(
      renderChart({ monitoring: { rules: { enabled: true, groups } } }),
      "PrometheusRule",
      "tailnet-operator",
    );
    assert.deepEqual((rule.spec as { groups: unknown }).groups, groups);
  });
});
