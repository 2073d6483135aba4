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
  let k = 0;
  let lo = Infinity;
  let hi = -Infinity;
  for (const l of lines) {
    const vs = l.values;
    for (let i = 0; i < vs.length; i++) {
      const v = vs[i];
      if (!Number.isFinite(v) || (log && v <= 0)) continue;
      k++;
      if (v < lo) lo = v;
      if (v > hi) hi = v;
    }
  }
  if (k === 0) return log ? [1, 10] : [0, 1];
  const cut = robust ? Math.floor(k * 0.05) : 0;
  if (cut > 0) {
    // The cut-th smallest and largest finite values, by selection (linear
    // time: a zoomed panel may hold millions of points).
    const vals = new Float64Array(k);
    let j = 0;
    for (const l of lines) {
      const vs = l.values;
      for (let i = 0; i < vs.length; i++) {
        const v = vs[i];
        if (Number.isFinite(v) && !(log && v <= 0)) vals[j++] = v;
      }
    }
    lo = select(vals, cut, 0, k - 1);
    hi = select(vals, k - 1 - cut, cut, k - 1);
  }
  if (lo === hi) {
    if (log) return [lo / 2, hi * 2];
    const d = lo === 0 ? 1 : Math.abs(lo) * 0.1;
    return [lo - d, hi + d];
  }
  return [lo, hi];
}

// select reorders a[from..to] so that a[n] holds the value a sorted copy
// would hold there, everything before it no larger and everything after
// it no smaller, and returns it (Hoare's quickselect, median-of-three
// pivots; the values are finite).
function select(a, n, from, to) {
  let lo = from;
  let hi = to;
  while (hi > lo) {
    const mid = (lo + hi) >>> 1;
    const x = a[lo];
    const y = a[mid];
    const z = a[hi];
    const pivot = x < y ? (y < z ? y : x < z ? z : x) : x < z ? x : y < z ? z : y;
    let i = lo;
    let j = hi;
    while (i <= j) {
      while (a[i] < pivot) i++;
      while (a[j] > pivot) j--;
      if (i <= j) {
        const t = a[i];
        a[i] = a[j];
        a[j] = t;
        i++;
        j--;
      }
    }
    if (n <= j) hi = j;
    else if (n >= i) lo = i;
    else return a[n];
  }
  return a[n];
}
