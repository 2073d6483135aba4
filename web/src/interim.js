// Stand-ins for web/src/lib (smooth, colors, range, csv) until that branch is
// merged; the exports follow the contract, so swapping the import is all it
// takes.

/** TensorBoard's debiased EMA; non-finite values pass through and do not advance it. */
export function smoothEMA(values, weight) {
  const out = new Float64Array(values.length);
  let last = 0, n = 0;
  for (let i = 0; i < values.length; i++) {
    const v = values[i];
    if (!Number.isFinite(v)) { out[i] = v; continue; }
    if (weight === 0) { out[i] = v; continue; }
    last = last * weight + (1 - weight) * v;
    n++;
    const deb = 1 - Math.pow(weight, n);
    out[i] = last / deb;
  }
  return out;
}

function hash(s) {
  let h = 2166136261;
  for (let i = 0; i < s.length; i++) { h ^= s.charCodeAt(i); h = Math.imul(h, 16777619); }
  return h >>> 0;
}

/** A stable colour per run. */
export function runColor(runId, dark = false) {
  const h = hash(String(runId));
  const hue = (h % 360);
  const sat = 55 + ((h >>> 9) % 25);
  const light = dark ? 62 + ((h >>> 17) % 12) : 38 + ((h >>> 17) % 12);
  return `hsl(${hue} ${sat}% ${light}%)`;
}

/** The y range of lines; robust ignores the 5 % tails, log values ≤ 0. */
export function yRange(lines, { robust = false, log = false } = {}) {
  const vals = [];
  for (const l of lines) for (const v of l.values) if (Number.isFinite(v) && (!log || v > 0)) vals.push(v);
  if (vals.length === 0) return log ? [1, 10] : [0, 1];
  vals.sort((a, b) => a - b);
  let lo = vals[0], hi = vals[vals.length - 1];
  if (robust && vals.length >= 20) {
    lo = vals[Math.floor(vals.length * 0.05)];
    hi = vals[Math.ceil(vals.length * 0.95) - 1];
  }
  if (lo === hi) { const d = Math.abs(lo) * 0.1 || 1; lo = log ? lo / 2 : lo - d; hi = log ? hi * 2 : hi + d; }
  return [lo, hi];
}

/** One panel as CSV: run_id,name,step,value. */
export function panelCSV(chart) {
  const rows = ['run_id,name,step,value'];
  for (const r of chart.runs) {
    const name = r.name ?? '';
    const q = /[",\n]/.test(name) ? `"${name.replace(/"/g, '""')}"` : name;
    for (let i = 0; i < r.steps.length; i++) rows.push(`${r.run_id},${q},${r.steps[i]},${r.values[i]}`);
  }
  return rows.join('\n') + '\n';
}
