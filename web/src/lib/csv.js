// CSV export of one chart panel.

// A field is quoted when it holds a comma, a quote, a line break or
// leading/trailing spaces (RFC 4180; quotes inside are doubled).
function field(s) {
  s = String(s);
  return /[",\r\n]|^\s|\s$/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
}

// Values as core/jsonl writes the non-finite ones; finite ones in
// JavaScript's shortest round-trip form.
function num(v) {
  if (v === Infinity) return 'Infinity';
  if (v === -Infinity) return '-Infinity';
  if (v !== v || v === null || v === undefined) return 'NaN';
  return String(v);
}

/**
 * panelCSV writes one drawn panel (an entry of `kv0dash.charts()`:
 * `{metric, context, x, runs: [{run_id, name?, steps, values}]}`) as CSV:
 * a header `run_id,name,step,value` (the name column only when some run
 * carries a name), then one row per point, run by run in the panel's
 * order, lines ending in "\n". Non-finite values are written `NaN`,
 * `Infinity`, `-Infinity`.
 *
 * @param {{runs: {run_id: string, name?: string, steps: ArrayLike<number>, values: ArrayLike<number>}[]}} chart
 * @returns {string}
 */
export function panelCSV(chart) {
  const runs = chart.runs || [];
  const named = runs.some((r) => r.name !== undefined && r.name !== null);
  const out = [named ? 'run_id,name,step,value\n' : 'run_id,step,value\n'];
  for (const r of runs) {
    const head = named ? `${field(r.run_id)},${field(r.name ?? '')},` : `${field(r.run_id)},`;
    const n = Math.min(r.steps.length, r.values.length);
    for (let i = 0; i < n; i++) out.push(`${head}${num(r.steps[i])},${num(r.values[i])}\n`);
  }
  return out.join('');
}
