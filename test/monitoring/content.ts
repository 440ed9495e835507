/** Reads the chart's bundled monitoring content in the shapes the tests need. */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { chartDir } from "../chart/helm.js";
import { renderedRuleFile } from "./generated.js";

export interface AlertRule {
  group: string;
  alert: string;
  expr: string;
  for?: string;
  labels: Record<string, string>;
  annotations: Record<string, string>;
}

export interface RecordingRule {
  group: string;
  record: string;
  expr: string;
}

type RenderedRule = Omit<AlertRule, "group" | "alert"> & { alert?: string; record?: string };

function renderedRules(values: Record<string, unknown>): Array<RenderedRule & { group: string }> {
  const file = renderedRuleFile(values) as { groups: Array<{ name: string; rules: RenderedRule[] }> };
  return file.groups.flatMap((g) => g.rules.map((r) => ({ group: g.name, ...r, expr: String(r.expr) })));
}

/** Alerting rules of the PrometheusRule the chart renders with `values`. */
export function alertRules(values: Record<string, unknown> = {}): AlertRule[] {
  return renderedRules(values).flatMap(({ record, alert, ...r }) => (alert ? [{ ...r, alert }] : []));
}

/** Recording rules of the same PrometheusRule (the last-known series the alerts read). */
export function recordingRules(values: Record<string, unknown> = {}): RecordingRule[] {
  return renderedRules(values).flatMap(({ group, record, expr }) => (record ? [{ group, record, expr }] : []));
}

export interface DashboardTarget {
  panel: string;
  expr: string;
  datasource: unknown;
}

export interface Dashboard {
  uid: string;
  title: string;
  panels: Array<{
    id: number;
    type: string;
    title: string;
    gridPos: { x: number; y: number; w: number; h: number };
    datasource?: unknown;
    panels?: unknown[];
    targets?: unknown[];
  }>;
  templating: { list: Array<{ name: string; type: string; current?: { value?: string } }> };
}

/** The bundled dashboard exactly as stored in the chart (placeholders unreplaced). */
export function bundledDashboardText(): string {
  return readFileSync(join(chartDir, "files", "dashboard.json"), "utf8");
}

/** Every query of every panel, including panels nested in collapsed rows. */
export function dashboardTargets(dashboard: Dashboard): DashboardTarget[] {
  const out: DashboardTarget[] = [];
  const visit = (panels: Dashboard["panels"]) => {
    for (const panel of panels) {
      for (const t of (panel.targets ?? []) as Array<{ expr?: string; datasource?: unknown }>) {
        out.push({ panel: panel.title, expr: t.expr ?? "", datasource: t.datasource });
      }
      if (panel.panels) visit(panel.panels as Dashboard["panels"]);
    }
  };
  visit(dashboard.panels);
  return out;
}
