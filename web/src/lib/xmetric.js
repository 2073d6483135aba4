// A metric plotted against another metric of the same run (loss against
// tokens seen).

/**
 * alignByStep pairs each point of yLine with the value xLine has at the
 * same step, to plot y against x. A step xLine holds gives its value; a
 * step between two points of xLine gives the linear interpolation of
 * their values (both lines are usually downsampled, and their kept steps
 * differ; a counter such as tokens seen grows between its points). Points
 * of yLine before xLine's first step or after its last, and points where
 * x is not finite, are left out. The result is in yLine's step order
 * (x is not sorted when the x metric is not monotonic). Both lines'
 * steps must ascend, as the readers return them.
 *
 * @param {{steps: ArrayLike<number>, values: ArrayLike<number>}} xLine
 * @param {{steps: ArrayLike<number>, values: ArrayLike<number>}} yLine
 * @returns {{x: Float64Array, y: Float64Array}}
 */
export function alignByStep(xLine, yLine) {
  const xs = xLine.steps;
  const xv = xLine.values;
  const ys = yLine.steps;
  const yv = yLine.values;
  const nx = Math.min(xs.length, xv.length);
  const ny = Math.min(ys.length, yv.length);
  const x = new Float64Array(ny);
  const y = new Float64Array(ny);
  let k = 0;
  let j = 0; // first index of xLine with step >= the current y step
  for (let i = 0; i < ny; i++) {
    const s = ys[i];
    while (j < nx && xs[j] < s) j++;
    if (j >= nx) break;
    let v;
    if (xs[j] === s) v = xv[j];
    else if (j === 0) continue;
    else {
      const s0 = xs[j - 1];
      const s1 = xs[j];
      v = xv[j - 1] + ((xv[j] - xv[j - 1]) * (s - s0)) / (s1 - s0);
    }
    if (!Number.isFinite(v)) continue;
    x[k] = v;
    y[k] = yv[i];
    k++;
  }
  return { x: x.slice(0, k), y: y.slice(0, k) };
}
