// TensorBoard's debiased exponential moving average, the smoothing of the
// dashboard's charts.

/**
 * smoothEMA smooths a series with TensorBoard's debiased exponential moving
 * average: for each finite value v, `last = last*w + (1-w)*v` and the output
 * is `last / (1 - w^n)`, n the number of finite values seen so far (the
 * debiasing keeps the first points from being pulled towards 0). A
 * non-finite value (NaN, ±Infinity) is copied through and does not advance
 * the average. Weight 0 is the identity. Each output is kept within the
 * minimum and maximum of the finite values so far, where the exact average
 * lies (it is a convex combination of them): the formula's rounding would
 * otherwise wobble a constant series, or a constant start, in its last
 * bits (TensorBoard guards the whole-constant case alone); so a constant
 * series stays exactly constant. Elsewhere the result is the formula's
 * to within rounding.
 *
 * @param {ArrayLike<number>} values the series' values, in step order
 * @param {number} weight in [0, 1) (the slider's 0–0.999)
 * @returns {Float64Array} the smoothed values, as many as given
 */
export function smoothEMA(values, weight) {
  if (typeof weight !== 'number' || !(weight >= 0 && weight < 1)) {
    const err = new RangeError(`smoothEMA: weight ${weight} is not in [0, 1)`);
    err.code = 'Invalid';
    throw err;
  }
  const n = values.length;
  const out = new Float64Array(n);
  if (weight === 0) {
    for (let i = 0; i < n; i++) out[i] = values[i];
    return out;
  }
  let last = 0;
  let seen = 0;
  let lo = Infinity;
  let hi = -Infinity;
  for (let i = 0; i < n; i++) {
    const v = values[i];
    if (!Number.isFinite(v)) {
      out[i] = v;
      continue;
    }
    if (v < lo) lo = v;
    if (v > hi) hi = v;
    last = last * weight + (1 - weight) * v;
    seen++;
    const s = last / (1 - Math.pow(weight, seen));
    out[i] = s < lo ? lo : s > hi ? hi : s;
  }
  return out;
}
