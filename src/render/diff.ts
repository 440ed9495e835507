/** A small unified diff of two texts (line LCS), for `render`'s live-vs-rendered policy view. */
export function unifiedDiff(a: string, b: string, labels: [string, string], context = 3): string {
  if (a === b) return "";
  const x = a.split("\n");
  const y = b.split("\n");
  const n = x.length;
  const m = y.length;
  let ops: { op: " " | "-" | "+"; line: string }[];
  if (n * m > 4_000_000) {
    ops = [...x.map((line) => ({ op: "-" as const, line })), ...y.map((line) => ({ op: "+" as const, line }))];
  } else {
    // lcs[i][j] = LCS length of x[i..] and y[j..]
    const lcs = Array.from({ length: n + 1 }, () => new Uint32Array(m + 1));
    for (let i = n - 1; i >= 0; i--) {
      for (let j = m - 1; j >= 0; j--) {
        lcs[i][j] = x[i] === y[j] ? lcs[i + 1][j + 1] + 1 : Math.max(lcs[i + 1][j], lcs[i][j + 1]);
      }
    }
    ops = [];
    let i = 0;
    let j = 0;
    while (i < n || j < m) {
      if (i < n && j < m && x[i] === y[j]) {
        ops.push({ op: " ", line: x[i++] });
        j++;
      } else if (i < n && (j === m || lcs[i + 1][j] >= lcs[i][j + 1])) {
        ops.push({ op: "-", line: x[i++] });
      } else {
        ops.push({ op: "+", line: y[j++] });
      }
    }
  }
  const out = [`--- ${labels[0]}`, `+++ ${labels[1]}`];
  let k = 0;
  while (k < ops.length) {
    if (ops[k].op === " ") {
      k++;
      continue;
    }
    const start = Math.max(0, k - context);
    let end = k;
    // extend the hunk while changes are within 2*context lines of each other
    while (end < ops.length) {
      let next = end;
      while (next < ops.length && ops[next].op === " ") next++;
      if (next === ops.length || next - end > 2 * context) break;
      while (next < ops.length && ops[next].op !== " ") next++;
      end = next;
    }
    const stop = Math.min(ops.length, end + context);
    const before = ops.slice(0, start);
    const aStart = before.filter((o) => o.op !== "+").length + 1;
    const bStart = before.filter((o) => o.op !== "-").length + 1;
    const hunk = ops.slice(start, stop);
    const aLen = hunk.filter((o) => o.op !== "+").length;
    const bLen = hunk.filter((o) => o.op !== "-").length;
    out.push(`@@ -${aStart},${aLen} +${bStart},${bLen} @@`);
    for (const o of hunk) out.push(`${o.op}${o.line}`);
    k = stop;
  }
  return `${out.join("\n")}\n`;
}
