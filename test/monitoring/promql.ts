/**
 * Just enough PromQL reading to tell which metrics and labels an expression uses, so a test can
 * hold the alerts and the dashboard to the metrics the code registers. Not a parser: it removes
 * strings, ranges and grouping clauses, then takes every identifier that is not a function call
 * or a keyword. Its own test feeds it expressions with made-up names to show it finds them.
 */

const KEYWORDS = new Set(["and", "or", "unless", "bool", "offset", "inf", "nan", "by", "without", "on", "ignoring"]);
const GROUPING = /\b(by|without|on|ignoring|group_left|group_right)\s*\(([^)]*)\)/g;

function withoutStrings(expr: string): string {
  return expr.replace(/"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|`[^`]*`/g, '""');
}

/** Metric names an expression selects (histogram suffixes kept as written). */
export function metricNames(expr: string): string[] {
  let s = withoutStrings(expr);
  s = s.replace(GROUPING, " ");
  s = s.replace(/\{[^}]*\}/g, " ");
  s = s.replace(/\[[^\]]*\]/g, " ");
  const names = new Set<string>();
  // An identifier not preceded by a digit, dot or $ (durations, numbers, Grafana variables).
  for (const m of s.matchAll(/(?<![\w.$])[a-zA-Z_:][a-zA-Z0-9_:]*/g)) {
    const word = m[0];
    const after = s.slice((m.index ?? 0) + word.length);
    if (/^\s*\(/.test(after)) continue;
    if (KEYWORDS.has(word.toLowerCase())) continue;
    names.add(word);
  }
  return [...names].sort();
}

/** Label names an expression refers to: in matchers and in by/without/on/ignoring/group_* lists. */
export function labelNames(expr: string): string[] {
  const s = withoutStrings(expr);
  const labels = new Set<string>();
  for (const m of s.matchAll(GROUPING)) {
    for (const label of m[2].split(",")) if (label.trim()) labels.add(label.trim());
  }
  for (const m of s.matchAll(/\{([^}]*)\}/g)) {
    for (const matcher of m[1].split(",")) {
      const name = /^\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*(=~|!~|!=|=)/.exec(matcher);
      if (name) labels.add(name[1]);
    }
  }
  return [...labels].sort();
}

/** The name a histogram series belongs to: foo_seconds_bucket → foo_seconds. */
export function familyOf(series: string, histograms: ReadonlySet<string>): string {
  const m = /^(.*)_(bucket|sum|count)$/.exec(series);
  return m && histograms.has(m[1]) ? m[1] : series;
}
