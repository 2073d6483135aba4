// Grouping runs (by experiment, a tag or a parameter value) and the mean
// line of a group with its band.

// paramValue finds a parameter in a run's parameters, given by dotted key
// as `params(id)` returns them ({"optimizer.lr": 0.01}) or as a nested
// tree ({optimizer: {lr: 0.01}}). undefined when the run lacks it.
function paramValue(params, name) {
  if (!params || typeof params !== 'object') return undefined;
  if (Object.hasOwn(params, name)) return params[name];
  // Walk the dotted path, trying the longest dotted prefix at each level
  // (a key may itself hold dots).
  const parts = name.split('.');
  for (let i = parts.length - 1; i >= 1; i--) {
    const head = parts.slice(0, i).join('.');
    if (Object.hasOwn(params, head)) {
      const v = paramValue(params[head], parts.slice(i).join('.'));
      if (v !== undefined) return v;
    }
  }
  return undefined;
}

/**
 * groupKey is the group a run falls in:
 * - `{kind: 'experiment'}`: the run's experiment;
 * - `{kind: 'tag', name}`: `name` when the run has that tag, '' otherwise;
 *   `{kind: 'tag'}` without a name: the run's tags, sorted, joined by ',';
 * - `{kind: 'param', name}`: the value of parameter `name` (dotted key) in
 *   `run.params` (the object `source.params(id)` returns, which the caller
 *   attaches to the run): a string as is, any other value as its JSON
 *   (so 1 and "1" are different groups).
 * '' means none (no experiment, no such tag, no such parameter).
 *
 * @param {{experiment?: string, tags?: string[], params?: object}} run
 * @param {{kind: 'experiment'|'tag'|'param', name?: string}} by
 * @returns {string}
 */
export function groupKey(run, by) {
  switch (by && by.kind) {
    case 'experiment':
      return run.experiment || '';
    case 'tag': {
      const tags = run.tags || [];
      if (by.name === undefined || by.name === null || by.name === '') return [...tags].sort().join(',');
      return tags.includes(by.name) ? by.name : '';
    }
    case 'param': {
      if (!by.name) throw invalid('groupKey: a param grouping needs the parameter name');
      const v = paramValue(run.params, by.name);
      if (v === undefined || v === null) return '';
      return typeof v === 'string' ? v : JSON.stringify(v);
    }
  }
  throw invalid(`groupKey: unknown grouping ${JSON.stringify(by && by.kind)} (want experiment, tag or param)`);
}

function invalid(msg) {
  const err = new Error(msg);
  err.code = 'Invalid';
  return err;
}

/**
 * groupRuns splits runs into groups by groupKey. The map's keys are in
 * the order their first run appears, and each group keeps the runs' order.
 *
 * @param {object[]} runs
 * @param {{kind: 'experiment'|'tag'|'param', name?: string}} by
 * @returns {Map<string, object[]>}
 */
export function groupRuns(runs, by) {
  const out = new Map();
  for (const r of runs) {
    const k = groupKey(r, by);
    let g = out.get(k);
    if (!g) out.set(k, (g = []));
    g.push(r);
  }
  return out;
}

// finitePoints returns a line's finite points with ascending, distinct
// steps (the readers' order; anything else is sorted, the later point of
// a repeated step winning).
function finitePoints(line) {
  const n = Math.min(line.steps.length, line.values.length);
  let s = [];
  let v = [];
  let sorted = true;
  for (let i = 0; i < n; i++) {
    const x = line.values[i];
    if (!Number.isFinite(x)) continue;
    const st = line.steps[i];
    if (s.length && st <= s[s.length - 1]) sorted = false;
    s.push(st);
    v.push(x);
  }
  if (!sorted) {
    const idx = s.map((_, i) => i).sort((a, b) => s[a] - s[b] || a - b);
    const s2 = [];
    const v2 = [];
    for (const i of idx) {
      if (s2.length && s2[s2.length - 1] === s[i]) v2[v2.length - 1] = v[i];
      else {
        s2.push(s[i]);
        v2.push(v[i]);
      }
    }
    s = s2;
    v = v2;
  }
  return { s, v };
}

/**
 * aggregate is the mean line of a group of lines with its band.
 *
 * Alignment rule: runs of a group rarely share their steps (different
 * logging intervals, different downsampling buckets, a run that stopped
 * early). The result is drawn over the union of every line's steps; at
 * each step, a line contributes its value there when it has a point
 * there, the linear interpolation of its two neighbouring points when
 * the step falls between them, and nothing outside its first..last step
 * (a run that ended does not hold the mean where it stopped, and none is
 * extrapolated). Non-finite points are skipped: the line is interpolated
 * across them. A step where no line contributes has NaN (a gap).
 *
 * band 'minmax' gives the contributions' minimum and maximum; 'std' the
 * mean ± their (population) standard deviation.
 *
 * @param {{steps: ArrayLike<number>, values: ArrayLike<number>}[]} lines
 * @param {{band?: 'minmax'|'std'}} [opts]
 * @returns {{steps: Float64Array, mean: Float64Array, lo: Float64Array, hi: Float64Array}}
 */
export function aggregate(lines, { band = 'minmax' } = {}) {
  if (band !== 'minmax' && band !== 'std') throw invalid(`aggregate: band ${JSON.stringify(band)} (want minmax or std)`);
  let total = 0;
  for (const l of lines) total += l.steps.length;
  const all = new Float64Array(total);
  let k = 0;
  for (const l of lines) for (let i = 0; i < l.steps.length; i++) all[k++] = l.steps[i];
  all.sort();
  let u = 0;
  for (let i = 0; i < all.length; i++) if (i === 0 || all[i] !== all[u - 1]) all[u++] = all[i];
  const steps = all.slice(0, u);
  const pts = lines.map(finitePoints);
  const cur = new Int32Array(pts.length);
  const mean = new Float64Array(u);
  const lo = new Float64Array(u);
  const hi = new Float64Array(u);
  const c = new Float64Array(pts.length);
  for (let i = 0; i < u; i++) {
    const st = steps[i];
    let m = 0;
    for (let li = 0; li < pts.length; li++) {
      const { s, v } = pts[li];
      let j = cur[li];
      while (j < s.length && s[j] < st) j++;
      cur[li] = j;
      if (j >= s.length) continue;
      if (s[j] === st) c[m++] = v[j];
      else if (j > 0) c[m++] = v[j - 1] + ((v[j] - v[j - 1]) * (st - s[j - 1])) / (s[j] - s[j - 1]);
    }
    if (m === 0) {
      mean[i] = lo[i] = hi[i] = NaN;
      continue;
    }
    let sum = 0;
    let mn = Infinity;
    let mx = -Infinity;
    for (let q = 0; q < m; q++) {
      sum += c[q];
      if (c[q] < mn) mn = c[q];
      if (c[q] > mx) mx = c[q];
    }
    const mu = sum / m;
    // The mean of equal values is that value (a sum can round).
    mean[i] = mn === mx ? mn : Math.min(mx, Math.max(mn, mu));
    if (band === 'minmax') {
      lo[i] = mn;
      hi[i] = mx;
    } else {
      let ss = 0;
      for (let q = 0; q < m; q++) ss += (c[q] - mu) * (c[q] - mu);
      const sd = Math.sqrt(ss / m);
      lo[i] = mean[i] - sd;
      hi[i] = mean[i] + sd;
    }
  }
  return { steps, mean, lo, hi };
}
