// The y-range of a chart panel.

/**
 * yRange is the y-axis range [lo, hi] of the lines of a panel, over their
 * finite values. With robust, the 5 % lowest and the 5 % highest finite
 * values are left out (an outlier-robust view of a curve with a few
 * spikes; fewer than 20 values keep them all). With log, values ≤ 0 are
 * left out (a log axis cannot show them). A range with no values is [0, 1]
 * ([1, 10] with log); a single value v gives a range around it ([v-1, v+1]
 * for 0, ±10 % of |v| otherwise; [v/2, 2v] with log), so the axis never
 * collapses.
 *
 * @param {{steps: ArrayLike<number>, values: ArrayLike<number>}[]} lines
 * @param {{robust?: boolean, log?: boolean}} [opts]
 * @returns {[number, number]}
 */
export function yRange(lines, { robust = false, log = false } = {}) {
  let n = 0;
  for (const l of lines) n += l.values.length;
  const vals = new Float64Array(n);
  let k = 0;
  let lo = Infinity;
  let hi = -Infinity;
  for (const l of lines) {
    const vs = l.values;
    for (let i = 0; i < vs.length; i++) {
      const v = vs[i];
      if (!Number.isFinite(v) || (log && v <= 0)) continue;
      vals[k++] = v;
      if (v < lo) lo = v;
      if (v > hi) hi = v;
    }
  }
  if (k === 0) return log ? [1, 10] : [0, 1];
  if (robust) {
    const cut = Math.floor(k * 0.05);
    if (cut > 0) {
      const s = vals.subarray(0, k).sort();
      lo = s[cut];
      hi = s[k - 1 - cut];
    }
  }
  if (lo === hi) {
    if (log) return [lo / 2, hi * 2];
    const d = lo === 0 ? 1 : Math.abs(lo) * 0.1;
    return [lo - d, hi + d];
  }
  return [lo, hi];
}
