// Unit tests of the dashboard's pure libraries (web/src/lib), its binary points decoder and the
// views' models (web/src/views), with node:test and no dependencies:
//
//	node --test tests/web/lib.test.mjs
//
// Randomised tests draw from a seeded generator; a failure names its seed
// (KV0_SEED=N reruns one).
import test from 'node:test';
import assert from 'node:assert/strict';

import { smoothEMA } from '../../web/src/lib/smooth.js';
import { runColor } from '../../web/src/lib/colors.js';
import { yRange } from '../../web/src/lib/range.js';
import { panelCSV } from '../../web/src/lib/csv.js';
import { groupKey, groupRuns, aggregate } from '../../web/src/lib/group.js';
import { alignByStep } from '../../web/src/lib/xmetric.js';
import { pointsFromF64 } from '../../web/src/source.js';

// mulberry32: a small seeded generator.
function rng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
const seeds = process.env.KV0_SEED ? [Number(process.env.KV0_SEED)] : Array.from({ length: 200 }, (_, i) => i + 1);
function forSeeds(fn) {
  for (const seed of seeds) {
    try {
      fn(rng(seed), seed);
    } catch (e) {
      e.message = `seed ${seed}: ${e.message}`;
      throw e;
    }
  }
}

// ---------------------------------------------------------------- smooth

// TensorBoard's smoothing, written as its scalar dashboard does it (over
// datum objects), as the reference.
function tensorBoardSmooth(values, weight) {
  const data = values.map((v) => ({ scalar: v }));
  let last = data.length > 0 ? 0 : NaN;
  let numAccum = 0;
  const isConstant = data.every((d) => d.scalar === data[0].scalar);
  for (const d of data) {
    const nextVal = d.scalar;
    if (isConstant || !Number.isFinite(nextVal)) {
      d.smoothed = nextVal;
    } else {
      last = last * weight + (1 - weight) * nextVal;
      numAccum++;
      let debiasWeight = 1;
      if (weight !== 1) debiasWeight = 1 - Math.pow(weight, numAccum);
      d.smoothed = last / debiasWeight;
    }
  }
  return data.map((d) => d.smoothed);
}

test('smoothEMA: known series, by hand', () => {
  // w = 0.5 over 1, 2, 3: last = 0.5, 1.25, 2.125; debias 0.5, 0.75, 0.875.
  assert.deepEqual([...smoothEMA([1, 2, 3], 0.5)], [1, 1.25 / 0.75, 2.125 / 0.875]);
  // The first point is always itself (debiased).
  assert.equal(smoothEMA([7, 100], 0.9)[0], 7);
  assert.deepEqual([...smoothEMA([], 0.6)], []);
});

test('smoothEMA equals TensorBoard on known series', () => {
  const series = {
    ramp: Array.from({ length: 50 }, (_, i) => i),
    noisy: Array.from({ length: 300 }, (_, i) => Math.sin(i / 7) + ((i * 7919) % 13) / 13),
    loss: Array.from({ length: 1000 }, (_, i) => 2 * Math.exp(-i / 200) + 0.1 * Math.cos(i)),
    withNaN: [1, 2, NaN, 4, Infinity, 5, -Infinity, 6],
  };
  for (const [name, vs] of Object.entries(series)) {
    for (const w of [0, 0.1, 0.5, 0.6, 0.9, 0.99, 0.999]) {
      const got = [...smoothEMA(vs, w)];
      const want = tensorBoardSmooth(vs, w);
      for (let i = 0; i < vs.length; i++) {
        if (Number.isNaN(want[i])) assert.ok(Number.isNaN(got[i]), `${name} w=${w} [${i}]`);
        else assert.ok(got[i] === want[i] || Math.abs(got[i] - want[i]) <= 1e-12 * Math.max(1, Math.abs(want[i])), `${name} w=${w} [${i}]: ${got[i]} != ${want[i]}`);
      }
    }
  }
});

test('smoothEMA: non-finite values pass through and do not advance the average', () => {
  const got = smoothEMA([1, NaN, 3, Infinity, -Infinity, 5], 0.5);
  assert.ok(Number.isNaN(got[1]));
  assert.equal(got[3], Infinity);
  assert.equal(got[4], -Infinity);
  // The finite values smooth as if the others were not there.
  const finite = smoothEMA([1, 3, 5], 0.5);
  assert.deepEqual([got[0], got[2], got[5]], [...finite]);
  // A series of only non-finite values is returned unchanged.
  const only = smoothEMA([NaN, Infinity], 0.9);
  assert.ok(Number.isNaN(only[0]));
  assert.equal(only[1], Infinity);
});

test('smoothEMA: a constant series stays exactly constant', () => {
  for (const c of [0.1, 1 / 3, -2.7e-8, 1e300, 0]) {
    for (const w of [0.3, 0.6, 0.9, 0.999]) {
      const vs = new Array(500).fill(c);
      vs[17] = NaN; // non-finite points do not break constancy
      const got = smoothEMA(vs, w);
      for (let i = 0; i < vs.length; i++) if (i !== 17) assert.equal(got[i], c, `c=${c} w=${w} [${i}]`);
      assert.ok(Number.isNaN(got[17]));
    }
  }
  // A constant start stays exact too, though the series goes on to change
  // (the bare formula wobbles there: 0.7 at w=0.9 is off in 493 of 500).
  const start = [...new Array(500).fill(0.7), 1, 2, 3];
  const got = smoothEMA(start, 0.9);
  for (let i = 0; i < 500; i++) assert.equal(got[i], 0.7, `[${i}]`);
  assert.ok(got[500] > 0.7 && got[502] > got[501]);
  const bare = [];
  for (let i = 0, last = 0; i < 500; i++) bare.push((last = last * 0.9 + 0.1 * 0.7) / (1 - 0.9 ** (i + 1)));
  assert.ok(bare.some((v) => v !== 0.7), 'the bare formula wobbles, so the check above can fail');
});

test('smoothEMA: weight 0 is the identity', () => {
  forSeeds((r) => {
    const vs = Array.from({ length: 1 + Math.floor(r() * 50) }, () => (r() < 0.1 ? NaN : (r() - 0.5) * 1e6));
    const got = smoothEMA(vs, 0);
    vs.forEach((v, i) => (Number.isNaN(v) ? assert.ok(Number.isNaN(got[i])) : assert.equal(got[i], v)));
  });
});

test('smoothEMA: weight 0.999 smooths hard and stays within the values seen', () => {
  const vs = Array.from({ length: 5000 }, (_, i) => (i % 2 ? 1 : 0));
  const got = smoothEMA(vs, 0.999);
  // Debiased: the first value is itself, then the mean of alternating 0/1
  // settles at about 0.5.
  assert.equal(got[0], 0);
  assert.ok(Math.abs(got[4999] - 0.5) < 0.01, String(got[4999]));
  forSeeds((r) => {
    const xs = Array.from({ length: 200 }, () => r() * 10 - 5);
    const s = smoothEMA(xs, 0.999);
    let lo = Infinity;
    let hi = -Infinity;
    for (let i = 0; i < xs.length; i++) {
      lo = Math.min(lo, xs[i]);
      hi = Math.max(hi, xs[i]);
      // A debiased average is a convex combination of the values so far.
      assert.ok(s[i] >= lo - 1e-9 && s[i] <= hi + 1e-9, `[${i}] ${s[i]} outside [${lo}, ${hi}]`);
    }
  });
});

test('smoothEMA refuses weights outside [0, 1)', () => {
  for (const w of [-0.1, 1, 1.5, NaN, '0.5', undefined]) {
    assert.throws(() => smoothEMA([1, 2], w), (e) => e.code === 'Invalid' && /weight/.test(e.message), String(w));
  }
});

// ---------------------------------------------------------------- colors

test('runColor is stable, a valid CSS colour, and spreads hues', () => {
  // Pinned values: a change here changes every user's colours.
  assert.equal(runColor('0192f1a2-7c55-7d2e-9b1e-3f2a8e1c0d4b'), runColor('0192f1a2-7c55-7d2e-9b1e-3f2a8e1c0d4b'));
  const pinned = runColor('run-1');
  assert.match(pinned, /^hsl\(\d{1,3}, \d{1,3}%, \d{1,3}%\)$/);
  assert.equal(pinned, runColor('run-1', false));
  assert.notEqual(runColor('run-1', true), pinned);
  const hues = new Set();
  for (let i = 0; i < 1000; i++) {
    // UUIDv7-like ids made in one millisecond differ in their last characters.
    const id = `0192f1a2-7c55-7d2e-9b1e-3f2a8e1c${i.toString(16).padStart(4, '0')}`;
    for (const dark of [false, true]) {
      const m = /^hsl\((\d+), (\d+)%, (\d+)%\)$/.exec(runColor(id, dark));
      assert.ok(m, runColor(id, dark));
      const [h, s, l] = m.slice(1).map(Number);
      assert.ok(h >= 0 && h < 360 && s <= 100);
      // Contrast with the theme's background: dark lines on light, light on dark.
      if (dark) assert.ok(l >= 50, `dark ${id}: ${l}`);
      else assert.ok(l <= 50, `light ${id}: ${l}`);
      if (!dark) hues.add(Math.floor(h / 30));
    }
  }
  assert.equal(hues.size, 12, 'ids made together cover every 30° slice of the wheel');
});

test('runColor: pinned colours (stable across machines and releases)', () => {
  // Computed once; the function depends on nothing but the id.
  const got = ['a', 'run-1', '0192f1a2-7c55-7d2e-9b1e-3f2a8e1c0d4b'].map((id) => runColor(id));
  assert.deepEqual(got, PINNED_COLORS);
});
const PINNED_COLORS = ["hsl(315, 65%, 42%)", "hsl(347, 65%, 42%)", "hsl(141, 65%, 38%)"];

// ---------------------------------------------------------------- range

test('yRange: plain, robust and log', () => {
  assert.deepEqual(yRange([{ steps: [0, 1, 2], values: [3, -1, 2] }]), [-1, 3]);
  assert.deepEqual(yRange([{ steps: [0, 1], values: [3, NaN] }, { steps: [5], values: [Infinity] }, { steps: [0, 1], values: [1, 7] }]), [1, 7]);
  assert.deepEqual(yRange([]), [0, 1]);
  assert.deepEqual(yRange([{ steps: [0], values: [NaN] }], { log: true }), [1, 10]);
  assert.deepEqual(yRange([{ steps: [0, 1, 2], values: [-5, 0, 0.01] }, { steps: [0], values: [100] }], { log: true }), [0.01, 100]);
  assert.deepEqual(yRange([{ steps: [0], values: [5] }]), [4.5, 5.5]);
  assert.deepEqual(yRange([{ steps: [0, 1], values: [0, 0] }]), [-1, 1]);
  assert.deepEqual(yRange([{ steps: [0], values: [4] }], { log: true }), [2, 8]);
  // 100 values (1..100 with 4 and 51 replaced by spikes): robust drops 5
  // of 100 at each end: -1e9, 1, 2, 3, 5 below and 97..100, 1e9 above.
  const vs = Array.from({ length: 100 }, (_, i) => i + 1);
  vs[3] = 1e9;
  vs[50] = -1e9;
  assert.deepEqual(yRange([{ steps: vs.map((_, i) => i), values: vs }]), [-1e9, 1e9]);
  assert.deepEqual(yRange([{ steps: vs.map((_, i) => i), values: vs }], { robust: true }), [6, 96]);
  // Fewer than 20 values: nothing to cut.
  assert.deepEqual(yRange([{ steps: [0, 1, 2], values: [1, 2, 1000] }], { robust: true }), [1, 1000]);
});

test('yRange robust equals a sort-and-cut model on random lines', () => {
  forSeeds((r, seed) => {
    const big = seed % 10 === 0; // some lines long enough to cut many values, with many repeats
    const lines = Array.from({ length: 1 + Math.floor(r() * 5) }, () => {
      const n = Math.floor(r() * (big ? 5000 : 80));
      const values = Array.from({ length: n }, () => {
        const u = r();
        if (big && u < 0.5) return Math.floor(r() * 4); // repeats
        return u < 0.05 ? NaN : u < 0.08 ? (r() < 0.5 ? Infinity : -Infinity) : u < 0.12 ? (r() - 0.5) * 1e12 : r() * 10;
      });
      return { steps: values.map((_, i) => i), values };
    });
    const log = r() < 0.3;
    const finite = lines.flatMap((l) => l.values).filter((v) => Number.isFinite(v) && (!log || v > 0)).sort((a, b) => a - b);
    const got = yRange(lines, { robust: true, log });
    if (finite.length === 0) return assert.deepEqual(got, log ? [1, 10] : [0, 1]);
    const cut = Math.floor(finite.length / 20);
    const lo = finite[cut];
    const hi = finite[finite.length - 1 - cut];
    if (lo !== hi) return assert.deepEqual(got, [lo, hi]);
    assert.ok(got[0] < lo && got[1] > hi);
    // At least 90 % of the finite values lie inside.
    const inside = finite.filter((v) => v >= got[0] && v <= got[1]).length;
    assert.ok(inside >= 0.9 * finite.length);
  });
});

// ---------------------------------------------------------------- csv

test('panelCSV: header, rows and non-finite values', () => {
  const csv = panelCSV({ metric: 'loss', context: '{}', x: 'step', runs: [
    { run_id: 'a', steps: [0, 10], values: [1.5, NaN] },
    { run_id: 'b', steps: [5], values: [-Infinity] },
  ] });
  assert.equal(csv, 'run_id,step,value\na,0,1.5\na,10,NaN\nb,5,-Infinity\n');
  assert.equal(panelCSV({ runs: [] }), 'run_id,step,value\n');
  // Full precision, as read.
  assert.equal(panelCSV({ runs: [{ run_id: 'x', steps: [1], values: [0.1 + 0.2] }] }), 'run_id,step,value\nx,1,0.30000000000000004\n');
});

test('panelCSV quotes names with commas, quotes and line breaks', () => {
  const csv = panelCSV({ runs: [
    { run_id: 'r1', name: 'lr=0.1, bs=32', steps: [1], values: [2] },
    { run_id: 'r2', name: 'the "big" one', steps: [1], values: [3] },
    { run_id: 'r3', name: 'two\nlines', steps: [1], values: [4] },
    { run_id: 'r4', name: ' padded', steps: [1], values: [5] },
    { run_id: 'r5', name: 'plain', steps: [1], values: [6] },
    { run_id: 'r6', steps: [1], values: [7] },
  ] });
  assert.equal(csv, [
    'run_id,name,step,value',
    'r1,"lr=0.1, bs=32",1,2',
    'r2,"the ""big"" one",1,3',
    'r3,"two\nlines",1,4',
    'r4," padded",1,5',
    'r5,plain,1,6',
    'r6,,1,7',
    '',
  ].join('\n'));
  // A strict RFC 4180 reader gets the names back.
  const rows = parseCSV(csv);
  assert.deepEqual(rows.slice(1).map((r) => r[1]), ['lr=0.1, bs=32', 'the "big" one', 'two\nlines', ' padded', 'plain', '']);
});

test('panelCSV round-trips random names through an RFC 4180 reader', () => {
  const alphabet = 'ab ,"\n\r=;\t\'é';
  forSeeds((r) => {
    const runs = Array.from({ length: 1 + Math.floor(r() * 4) }, (_, k) => ({
      run_id: `id${k}`,
      name: Array.from({ length: Math.floor(r() * 8) }, () => alphabet[Math.floor(r() * alphabet.length)]).join(''),
      steps: [k],
      values: [r()],
    }));
    const rows = parseCSV(panelCSV({ runs }));
    assert.deepEqual(rows[0], ['run_id', 'name', 'step', 'value']);
    assert.deepEqual(rows.slice(1).map((x) => x[1]), runs.map((x) => x.name));
    assert.deepEqual(rows.slice(1).map((x) => Number(x[3])), runs.map((x) => x.values[0]));
  });
});

// parseCSV: a strict RFC 4180 reader (rows end in \n; a quoted field may
// hold anything).
function parseCSV(s) {
  const rows = [];
  let row = [];
  let i = 0;
  while (i < s.length) {
    let f = '';
    if (s[i] === '"') {
      i++;
      for (;;) {
        if (i >= s.length) throw new Error('unterminated quote');
        if (s[i] === '"') {
          if (s[i + 1] === '"') {
            f += '"';
            i += 2;
            continue;
          }
          i++;
          break;
        }
        f += s[i++];
      }
    } else {
      while (i < s.length && s[i] !== ',' && s[i] !== '\n') {
        if (s[i] === '"' || s[i] === '\r') throw new Error(`bare ${JSON.stringify(s[i])} in an unquoted field`);
        f += s[i++];
      }
    }
    row.push(f);
    if (s[i] === ',') i++;
    else if (s[i] === '\n') {
      rows.push(row);
      row = [];
      i++;
    } else if (i < s.length) throw new Error(`junk after a quoted field at ${i}`);
  }
  if (row.length) throw new Error('last row without a line end');
  return rows;
}

// ---------------------------------------------------------------- group

const RUNS = [
  { run_id: 'r1', experiment: 'mnist', tags: ['base', 'gpu'], params: { 'optimizer.lr': 0.1, seed: 1, name: 'x' } },
  { run_id: 'r2', experiment: 'cifar', tags: ['gpu'], params: { optimizer: { lr: 0.01 }, seed: 1 } },
  { run_id: 'r3', tags: [], params: { 'optimizer.lr': 0.1, seed: '1' } },
  { run_id: 'r4', experiment: 'mnist', tags: ['base'] },
];

test('groupKey by experiment, tag and parameter', () => {
  assert.deepEqual(RUNS.map((r) => groupKey(r, { kind: 'experiment' })), ['mnist', 'cifar', '', 'mnist']);
  assert.deepEqual(RUNS.map((r) => groupKey(r, { kind: 'tag', name: 'base' })), ['base', '', '', 'base']);
  assert.deepEqual(RUNS.map((r) => groupKey(r, { kind: 'tag' })), ['base,gpu', 'gpu', '', 'base']);
  assert.deepEqual(RUNS.map((r) => groupKey(r, { kind: 'param', name: 'optimizer.lr' })), ['0.1', '0.01', '0.1', '']);
  // 1 and "1" are different groups.
  assert.deepEqual(RUNS.map((r) => groupKey(r, { kind: 'param', name: 'seed' })), ['1', '1', '1', '']);
  assert.notEqual(groupKey({ params: { seed: 1 } }, { kind: 'param', name: 'seed' }), groupKey({ params: { seed: '"1"' } }, { kind: 'param', name: 'seed' }));
  assert.equal(groupKey({ params: { a: { b: [1, 2] } } }, { kind: 'param', name: 'a.b' }), '[1,2]');
  assert.equal(groupKey({ params: { 'a.b': { c: true } } }, { kind: 'param', name: 'a.b.c' }), 'true');
  assert.throws(() => groupKey(RUNS[0], { kind: 'color' }), (e) => e.code === 'Invalid');
  assert.throws(() => groupKey(RUNS[0], { kind: 'param' }), (e) => e.code === 'Invalid');
});

test('groupRuns keeps first-seen group order and run order', () => {
  const g = groupRuns(RUNS, { kind: 'experiment' });
  assert.deepEqual([...g.keys()], ['mnist', 'cifar', '']);
  assert.deepEqual(g.get('mnist').map((r) => r.run_id), ['r1', 'r4']);
  forSeeds((r) => {
    const runs = Array.from({ length: Math.floor(r() * 30) }, (_, i) => ({ run_id: `r${i}`, experiment: `e${Math.floor(r() * 4)}` }));
    const g = groupRuns(runs, { kind: 'experiment' });
    assert.equal([...g.values()].reduce((n, x) => n + x.length, 0), runs.length);
    for (const [k, rs] of g) {
      assert.ok(rs.every((x) => x.experiment === k));
      const idx = rs.map((x) => runs.indexOf(x));
      assert.deepEqual(idx, [...idx].sort((a, b) => a - b));
    }
  });
});

// The model of aggregate: for each step of the union, every line's value
// there found by a linear scan (exact point, else interpolation between
// the finite points around it), then the statistics computed plainly.
function aggregateModel(lines, band) {
  const steps = [...new Set(lines.flatMap((l) => [...l.steps]))].sort((a, b) => a - b);
  const at = (l, s) => {
    const pts = [];
    for (let i = 0; i < l.steps.length; i++) if (Number.isFinite(l.values[i])) pts.push([l.steps[i], l.values[i]]);
    const exact = pts.find((p) => p[0] === s);
    if (exact) return exact[1];
    const before = pts.filter((p) => p[0] < s).pop();
    const after = pts.find((p) => p[0] > s);
    if (!before || !after) return undefined;
    return before[1] + ((after[1] - before[1]) * (s - before[0])) / (after[0] - before[0]);
  };
  return steps.map((s) => {
    const c = lines.map((l) => at(l, s)).filter((v) => v !== undefined);
    if (c.length === 0) return { s, mean: NaN, lo: NaN, hi: NaN };
    const mean = c.reduce((a, b) => a + b, 0) / c.length;
    if (band === 'minmax') return { s, mean, lo: Math.min(...c), hi: Math.max(...c) };
    const sd = Math.sqrt(c.reduce((a, b) => a + (b - mean) ** 2, 0) / c.length);
    return { s, mean, lo: mean - sd, hi: mean + sd };
  });
}

function close(a, b, what) {
  if (a === b) return;
  if (Number.isNaN(b)) return assert.ok(Number.isNaN(a), `${what}: ${a} is not NaN`);
  assert.ok(Math.abs(a - b) <= 1e-9 * Math.max(1, Math.abs(b)), `${what}: ${a} != ${b}`);
}

test('aggregate: runs with different steps, by hand', () => {
  // a logs every 10 steps, b every 5 from 5 to 25 (it stopped early).
  const a = { steps: [0, 10, 20, 30], values: [0, 10, 20, 30] };
  const b = { steps: [5, 10, 15, 20, 25], values: [1, 2, 3, 4, 5] };
  const g = aggregate([a, b], { band: 'minmax' });
  assert.deepEqual([...g.steps], [0, 5, 10, 15, 20, 25, 30]);
  // At 0 and 30 only a; at 5, a interpolated (5) with b's 1; at 25, a's 25 with b's 5.
  assert.deepEqual([...g.mean], [0, 3, 6, 9, 12, 15, 30]);
  assert.deepEqual([...g.lo], [0, 1, 2, 3, 4, 5, 30]);
  assert.deepEqual([...g.hi], [0, 5, 10, 15, 20, 25, 30]);
  const s = aggregate([a, b], { band: 'std' });
  assert.deepEqual([...s.mean], [...g.mean]);
  assert.deepEqual([...s.lo], [0, 1, 2, 3, 4, 5, 30]); // two values: ±std reaches both
  assert.deepEqual([...s.hi], [0, 5, 10, 15, 20, 25, 30]);
  // Default band is minmax; identical lines give themselves with no band.
  const same = aggregate([a, a]);
  assert.deepEqual([...same.mean], a.values);
  assert.deepEqual([...same.lo], a.values);
  // Non-finite points are interpolated across; a step with nothing is NaN.
  const n = aggregate([{ steps: [0, 1, 2], values: [0, NaN, 4] }, { steps: [7], values: [NaN] }]);
  assert.deepEqual([...n.steps], [0, 1, 2, 7]);
  assert.deepEqual([...n.mean].slice(0, 3), [0, 2, 4]);
  assert.ok(Number.isNaN(n.mean[3]));
  assert.deepEqual([...aggregate([]).steps], []);
  assert.throws(() => aggregate([a], { band: 'iqr' }), (e) => e.code === 'Invalid');
});

test('aggregate: the mean of equal values is exact', () => {
  const l = { steps: [0, 1, 2], values: [0.1, 0.7, 1 / 3] };
  const g = aggregate([l, l, l]);
  assert.deepEqual([...g.mean], l.values);
});

test('aggregate equals a brute-force model on random groups', () => {
  forSeeds((r) => {
    const lines = Array.from({ length: 1 + Math.floor(r() * 6) }, () => {
      const start = Math.floor(r() * 50);
      const every = 1 + Math.floor(r() * 7);
      const n = Math.floor(r() * 40);
      const steps = [];
      const values = [];
      for (let i = 0, s = start; i < n; i++, s += every + (r() < 0.2 ? Math.floor(r() * 20) : 0)) {
        steps.push(s);
        const u = r();
        values.push(u < 0.05 ? NaN : u < 0.07 ? Infinity : (r() - 0.3) * 100);
      }
      return r() < 0.5 ? { steps, values } : { steps: Float64Array.from(steps), values: Float64Array.from(values) };
    });
    for (const band of ['minmax', 'std']) {
      const got = aggregate(lines, { band });
      const want = aggregateModel(lines, band);
      assert.equal(got.steps.length, want.length);
      want.forEach((w, i) => {
        assert.equal(got.steps[i], w.s);
        close(got.mean[i], w.mean, `${band} mean@${w.s}`);
        close(got.lo[i], w.lo, `${band} lo@${w.s}`);
        close(got.hi[i], w.hi, `${band} hi@${w.s}`);
        if (!Number.isNaN(w.mean)) assert.ok(got.lo[i] <= got.mean[i] + 1e-9 && got.mean[i] <= got.hi[i] + 1e-9);
      });
    }
  });
});

test('aggregate sorts unsorted lines (the later point of a repeated step wins)', () => {
  const g = aggregate([{ steps: [2, 0, 1, 1], values: [20, 0, 5, 10] }]);
  assert.deepEqual([...g.steps], [0, 1, 2]);
  assert.deepEqual([...g.mean], [0, 10, 20]);
});

// ---------------------------------------------------------------- xmetric

test('alignByStep: exact steps, interpolation, and what is left out', () => {
  const tokens = { steps: [0, 10, 20, 30], values: [0, 1000, 2000, 3000] };
  const loss = { steps: [0, 5, 10, 30, 40], values: [4, 3, 2, 1, 0.5] };
  const { x, y } = alignByStep(tokens, loss);
  // Step 5 lies between 0 and 10: 500 tokens; step 40 is past x's last step.
  assert.deepEqual([...x], [0, 500, 1000, 3000]);
  assert.deepEqual([...y], [4, 3, 2, 1]);
  // A step before x's first is left out; a non-finite x too; y's NaN stays.
  const r = alignByStep({ steps: [10, 20, 30], values: [1, NaN, 3] }, { steps: [0, 10, 20, 25, 30], values: [9, NaN, 7, 6, 5] });
  assert.deepEqual([...r.x], [1, 3]);
  assert.ok(Number.isNaN(r.y[0]));
  assert.equal(r.y[1], 5);
  assert.deepEqual(alignByStep({ steps: [], values: [] }, loss), { x: new Float64Array(0), y: new Float64Array(0) });
});

test('alignByStep equals a model on random lines', () => {
  forSeeds((r) => {
    const mk = () => {
      const steps = [];
      for (let s = Math.floor(r() * 10), n = Math.floor(r() * 30); steps.length < n; s += 1 + Math.floor(r() * 5)) steps.push(s);
      return { steps, values: steps.map(() => (r() < 0.05 ? NaN : r() * 100)) };
    };
    const xl = mk();
    const yl = mk();
    const want = { x: [], y: [] };
    yl.steps.forEach((s, i) => {
      const j = xl.steps.indexOf(s);
      let v;
      if (j >= 0) v = xl.values[j];
      else {
        const b = xl.steps.filter((t) => t < s).length - 1;
        if (b < 0 || b + 1 >= xl.steps.length) return;
        const [s0, s1, v0, v1] = [xl.steps[b], xl.steps[b + 1], xl.values[b], xl.values[b + 1]];
        v = v0 + ((v1 - v0) * (s - s0)) / (s1 - s0);
      }
      if (!Number.isFinite(v)) return;
      want.x.push(v);
      want.y.push(yl.values[i]);
    });
    const got = alignByStep(xl, yl);
    assert.equal(got.x.length, want.x.length);
    want.x.forEach((v, i) => close(got.x[i], v, `x[${i}]`));
    want.y.forEach((v, i) => close(got.y[i], v, `y[${i}]`));
  });
});

// ---------------------------------------------------------------- views' models

import { flattenParams, naturalCompare, recordsModel } from '../../web/src/views/run.js';
import { compareModel } from '../../web/src/views/compare.js';
import { axisScale, parallelModel, brushFilter, rangeStep, categoryStep } from '../../web/src/views/parallel.js';
import { fmtValue, paramAt, limiter } from '../../web/src/views/dom.js';

test('flattenParams: dotted keys and nested trees give the same sorted rows', () => {
  const dotted = { 'optimizer.lr': 0.01, 'optimizer.betas': [0.9, 0.99], 'layer10.size': 3, 'layer2.size': 4, model: 'resnet', empty: {} };
  const nested = { optimizer: { lr: 0.01, betas: [0.9, 0.99] }, layer10: { size: 3 }, layer2: { size: 4 }, model: 'resnet', empty: {} };
  const want = [
    { key: 'empty', value: {}, depth: 0 },
    { key: 'layer2.size', value: 4, depth: 1 },
    { key: 'layer10.size', value: 3, depth: 1 },
    { key: 'model', value: 'resnet', depth: 0 },
    { key: 'optimizer.betas', value: [0.9, 0.99], depth: 1 },
    { key: 'optimizer.lr', value: 0.01, depth: 1 },
  ];
  assert.deepEqual(flattenParams(dotted), want);
  assert.deepEqual(flattenParams(nested), want);
  // A dotted key whose value is an object (params(id) of a dict value).
  assert.deepEqual(flattenParams({ 'a.b': { c: 1, d: { e: null } } }), [
    { key: 'a.b.c', value: 1, depth: 2 },
    { key: 'a.b.d.e', value: null, depth: 3 },
  ]);
  // Two spellings of one key: the first stays.
  assert.deepEqual(flattenParams({ 'a.b': 1, a: { b: 2 } }), [{ key: 'a.b', value: 1, depth: 1 }]);
  assert.deepEqual(flattenParams(null), []);
  assert.deepEqual(flattenParams({}), []);
});

test('flattenParams round-trips random trees', () => {
  forSeeds((r) => {
    const leaves = new Map();
    const tree = {};
    const n = Math.floor(r() * 12);
    for (let i = 0; i < n; i++) {
      const path = Array.from({ length: 1 + Math.floor(r() * 3) }, () => `k${Math.floor(r() * 4)}`);
      // Skip paths that would put a leaf where a branch is or the reverse.
      const key = path.join('.');
      if ([...leaves.keys()].some((k) => k.startsWith(key + '.') || key.startsWith(k + '.') || k === key)) continue;
      const v = [Math.floor(r() * 100), 'txt', true, null, [1, 2]][Math.floor(r() * 5)];
      leaves.set(key, v);
      let o = tree;
      for (const p of path.slice(0, -1)) o = o[p] ??= {};
      o[path[path.length - 1]] = v;
    }
    const rows = flattenParams(tree);
    assert.deepEqual(new Map(rows.map((x) => [x.key, x.value])), leaves);
    const keys = rows.map((x) => x.key);
    assert.deepEqual(keys, [...keys].sort(naturalCompare));
    // The flat spelling gives the same rows.
    assert.deepEqual(flattenParams(Object.fromEntries(leaves)), rows);
  });
});

test('naturalCompare orders digit runs as numbers', () => {
  assert.deepEqual(['b10', 'a', 'b2', 'b1', 'a10.x', 'a2.x', 'b02'].sort(naturalCompare), ['a', 'a2.x', 'a10.x', 'b1', 'b2', 'b02', 'b10']);
  assert.equal(naturalCompare('x', 'x'), 0);
});

test('recordsModel: columns of object data, JSON otherwise', () => {
  const m = recordsModel([
    { item_id: 'a', data: { score: 0.5, answer: '4' }, created_at: 't1' },
    { item_id: 'b', data: { answer: 'x', extra: [1] }, created_at: 't2' },
  ]);
  assert.deepEqual(m.columns, ['score', 'answer', 'extra']);
  assert.deepEqual(m.rows.map((r) => r.cells), [['0.5', '4', ''], ['', 'x', '[1]']]);
  const j = recordsModel([{ item_id: 'a', data: [1, 2], created_at: 't' }, { item_id: 'b', data: { x: 1 }, created_at: 't' }]);
  assert.deepEqual(j.columns, ['data']);
  assert.deepEqual(j.rows.map((r) => r.cells[0]), ['[1,2]', '{"x":1}']);
  const wide = recordsModel([{ item_id: 'w', data: Object.fromEntries(Array.from({ length: 20 }, (_, i) => [`c${i}`, i])), created_at: 't' }]);
  assert.equal(wide.columns.length, 17);
  assert.equal(wide.columns[16], '…');
  assert.deepEqual(JSON.parse(wide.rows[0].cells[16]), { c16: 16, c17: 17, c18: 18, c19: 19 });
});

test('compareModel: differing rows first, missing values differ, objects by content', () => {
  const rows = compareModel([
    { run_id: 'a', params: { 'opt.lr': 0.1, seed: 1, model: 'r18', aug: { flip: true, crop: 4 }, only_a: 1 } },
    { run_id: 'b', params: { opt: { lr: 0.01 }, seed: 1, model: 'r18', aug: { crop: 4, flip: true } } },
    { run_id: 'c', params: { 'opt.lr': 0.1, seed: 1, model: 'r34', 'aug.flip': true, 'aug.crop': 4 } },
  ]);
  assert.deepEqual(rows.map((r) => [r.key, r.differs]), [
    ['model', true], ['only_a', true], ['opt.lr', true],
    ['aug.crop', false], ['aug.flip', false], ['seed', false],
  ]);
  assert.deepEqual(rows.find((r) => r.key === 'only_a').values, [1, undefined, undefined]);
  assert.deepEqual(rows.find((r) => r.key === 'opt.lr').values, [0.1, 0.01, 0.1]);
  // An array value compares by content; 1 and "1" differ.
  const x = compareModel([{ run_id: 'a', params: { v: [1, { a: 1, b: 2 }], n: 1 } }, { run_id: 'b', params: { v: [1, { b: 2, a: 1 }], n: '1' } }]);
  assert.deepEqual(x.map((r) => [r.key, r.differs]), [['n', true], ['v', false]]);
  // One run: nothing differs; no runs: no rows.
  assert.ok(compareModel([{ run_id: 'a', params: { p: 1 } }]).every((r) => !r.differs));
  assert.deepEqual(compareModel([]), []);
});

test('compareModel equals a brute-force model on random runs', () => {
  forSeeds((r) => {
    const keys = ['a', 'b.c', 'b.d', 'e', 'f.g.h'];
    const runs = Array.from({ length: 1 + Math.floor(r() * 4) }, (_, i) => {
      const params = {};
      for (const k of keys) if (r() < 0.7) params[k] = [1, 2, 'x', true][Math.floor(r() * 4)];
      return { run_id: `r${i}`, params };
    });
    const rows = compareModel(runs);
    const all = keys.filter((k) => runs.some((x) => k in x.params));
    assert.deepEqual(new Set(rows.map((x) => x.key)), new Set(all));
    for (const row of rows) {
      const vals = runs.map((x) => x.params[row.key]);
      assert.deepEqual(row.values, vals);
      assert.equal(row.differs, vals.some((v) => v !== vals[0]), row.key);
    }
    const firstSame = rows.findIndex((x) => !x.differs);
    if (firstSame >= 0) assert.ok(rows.slice(firstSame).every((x) => !x.differs), 'differing rows first');
  });
});

test('axisScale: linear, log, single value, categories, missing', () => {
  const lin = axisScale([0, 5, 10, undefined, NaN]);
  assert.equal(lin.kind, 'linear');
  assert.deepEqual([0, 5, 10, 2.5].map(lin.pos), [0, 0.5, 1, 0.25]);
  assert.equal(lin.pos(undefined), null);
  assert.equal(lin.pos(NaN), null);
  assert.equal(lin.pos('5'), null);
  assert.deepEqual(lin.ticks.map((t) => t.label), ['0', '2', '4', '6', '8', '10']);
  assert.ok(lin.ticks.every((t) => t.pos >= 0 && t.pos <= 1));
  // Learning rates over four decades: log.
  const log = axisScale([1e-5, 1e-3, 1e-1]);
  assert.equal(log.kind, 'log');
  assert.ok(Math.abs(log.pos(1e-3) - 0.5) < 1e-12);
  assert.deepEqual(log.ticks.map((t) => t.label), ['1e-5', '1e-4', '0.001', '0.01', '0.1']);
  // Two decades stay linear; negative values too.
  assert.equal(axisScale([1, 100]).kind, 'linear');
  assert.equal(axisScale([-1, 1e6]).kind, 'linear');
  const one = axisScale([3, 3, undefined]);
  assert.equal(one.pos(3), 0.5);
  assert.equal(one.pos(4), null);
  const cat = axisScale(['sgd', 'adam', true, 2, 'adam', null, { a: 1 }]);
  assert.equal(cat.kind, 'category');
  assert.deepEqual(cat.domain, [true, 2, 'adam', 'sgd', { a: 1 }]);
  assert.deepEqual([true, 2, 'adam', 'sgd', { a: 1 }].map(cat.pos), [0, 0.25, 0.5, 0.75, 1]);
  assert.equal(cat.pos('2'), null, 'the string "2" is not the number 2');
  assert.equal(cat.pos(null), null);
  assert.equal(axisScale([]).kind, 'category');
  // Many categories: at most ~13 labels, the last always among them.
  const many = axisScale(Array.from({ length: 100 }, (_, i) => `c${String(i).padStart(3, '0')}`));
  assert.ok(many.ticks.length <= 13);
  assert.equal(many.ticks[many.ticks.length - 1].label, 'c099');
});

test('parallelModel and brushFilter against a brute-force model', () => {
  forSeeds((r) => {
    const rows = Array.from({ length: Math.floor(r() * 30) }, (_, i) => ({
      run_id: `r${i}`,
      values: {
        lr: r() < 0.1 ? undefined : 10 ** (-5 + r() * 4),
        bs: [16, 32, 64][Math.floor(r() * 3)],
        opt: r() < 0.1 ? null : ['sgd', 'adam'][Math.floor(r() * 2)],
        loss: r() < 0.05 ? NaN : r() * 3,
      },
    }));
    const axes = [{ key: 'lr' }, { key: 'bs' }, { key: 'opt' }, { key: 'loss', label: 'loss (last)' }];
    const m = parallelModel(rows, axes);
    assert.deepEqual(m.axes.map((a) => a.label), ['lr', 'bs', 'opt', 'loss (last)']);
    assert.equal(m.lines.length, rows.length);
    m.lines.forEach((l, i) => l.pos.forEach((p, k) => assert.ok(p === null || (p >= 0 && p <= 1), `${rows[i].values[axes[k].key]} -> ${p}`)));
    // Brushes in value space, converted to positions with the model's own
    // scales, select what a direct comparison of values selects.
    // A loss range inside the axis's domain (outside it, positions clamp).
    const finite = rows.map((x) => x.values.loss).filter(Number.isFinite);
    const lossLo = finite.length ? Math.min(...finite) : 0;
    const lossHi = finite.length ? Math.max(...finite) : 1;
    const lo = lossLo + r() * (lossHi - lossLo);
    const hi = lo + r() * (lossHi - lo);
    const opt = 'adam';
    const brushes = { loss: [m.axes[3].scale.pos(lo) ?? 0, m.axes[3].scale.pos(hi) ?? 1], opt: [m.axes[2].scale.pos(opt) ?? 2, m.axes[2].scale.pos(opt) ?? 2], nope: [0, 1] };
    const got = brushFilter(m, brushes);
    const single = finite.length > 0 && lossLo === lossHi; // one value: position 0.5 whatever lo and hi
    const want = rows.filter((x) => {
      const v = x.values.loss;
      return Number.isFinite(v) && x.values.opt === opt && (single || (v >= lo && v <= hi));
    }).map((x) => x.run_id);
    if (rows.some((x) => x.values.opt === opt)) assert.deepEqual(got, want);
    else assert.deepEqual(got, []);
    assert.equal(brushFilter(m, {}), null);
    assert.equal(brushFilter(m, new Map([['nope', [0, 1]]])), null);
    // Reversed ranges are the same range; the full axis keeps every run with a position.
    assert.deepEqual(brushFilter(m, { bs: [1, 0] }), m.lines.map((l) => l.run_id));
    assert.deepEqual(brushFilter(m, { lr: [0, 1] }), rows.filter((x) => x.values.lr !== undefined).map((x) => x.run_id));
  });
});

test('view helpers: fmtValue, paramAt, limiter', async () => {
  assert.deepEqual([1, 0.1 + 0.2, 1e-7, 123456789, 1.5e20, NaN, -Infinity, 'x', true, null, [1], undefined].map(fmtValue),
    ['1', '0.3', '1e-7', '123456789', '1.5e20', 'NaN', '-Infinity', 'x', 'true', 'null', '[1]', '']);
  assert.equal(paramAt({ 'a.b': 1 }, 'a.b'), 1);
  assert.equal(paramAt({ a: { b: { c: 2 } } }, 'a.b.c'), 2);
  assert.equal(paramAt({ 'a.b': { c: 3 } }, 'a.b.c'), 3);
  assert.equal(paramAt({ a: 1 }, 'a.b'), undefined);
  assert.equal(paramAt(undefined, 'a'), undefined);
  const run = limiter(2);
  let active = 0;
  let peak = 0;
  const order = [];
  const res = await Promise.all(Array.from({ length: 7 }, (_, i) => run(async () => {
    active++;
    peak = Math.max(peak, active);
    await new Promise((r) => setImmediate(r));
    active--;
    order.push(i);
    if (i === 3) throw new Error('boom');
    return i * 2;
  }).catch((e) => e.message)));
  assert.equal(peak, 2);
  assert.deepEqual(res, [0, 2, 4, 'boom', 8, 10, 12]);
  assert.equal(order.length, 7);
});

test('keyboard brushes: categoryStep selects whole categories as a model says', () => {
  forSeeds((r) => {
    const n = 1 + Math.floor(r() * 6);
    const cats = Array.from({ length: n }, (_, i) => `c${i}`);
    const m = parallelModel(cats.map((c) => ({ run_id: c, values: { k: c } })), [{ key: 'k' }]);
    let b = null;
    let model = null; // [lo, hi] category indexes
    for (let step = 0; step < 12; step++) {
      const dir = r() < 0.5 ? 1 : -1;
      const resize = r() < 0.3;
      b = categoryStep(n, b, dir, resize);
      if (!model) model = dir > 0 ? [0, 0] : [n - 1, n - 1];
      else if (resize) {
        if (dir > 0) { if (model[1] < n - 1) model[1]++; else if (model[0] > 0) model[0]--; } else if (model[1] > model[0]) model[1]--;
      } else if (dir > 0 && model[1] < n - 1) model = [model[0] + 1, model[1] + 1];
      else if (dir < 0 && model[0] > 0) model = [model[0] - 1, model[1] - 1];
      assert.ok(b[0] >= 0 && b[1] <= 1 && b[0] < b[1]);
      assert.deepEqual(brushFilter(m, { k: b }), cats.slice(model[0], model[1] + 1), `n=${n} step ${step}`);
    }
  });
  assert.equal(categoryStep(0, null, 1, false), null);
});

test('keyboard brushes: rangeStep moves and resizes within the axis', () => {
  assert.deepEqual(rangeStep(null, 1, false), [0.4, 0.6]);
  const close2 = (a, b) => a.every((x, i) => Math.abs(x - b[i]) < 1e-12);
  assert.ok(close2(rangeStep([0.4, 0.6], 1, false), [0.45, 0.65]));
  assert.ok(close2(rangeStep([0.4, 0.6], -1, true), [0.45, 0.55]));
  assert.ok(close2(rangeStep([0.4, 0.6], 1, true), [0.35, 0.65]));
  assert.ok(close2(rangeStep([0.9, 1], 1, false), [0.9, 1]));
  assert.ok(close2(rangeStep([0, 0.1], -1, false), [0, 0.1]));
  forSeeds((r) => {
    let b = null;
    for (let i = 0; i < 40; i++) {
      b = rangeStep(b, r() < 0.5 ? 1 : -1, r() < 0.4);
      assert.ok(b[0] >= -1e-12 && b[1] <= 1 + 1e-12 && b[1] - b[0] >= 0.02 - 1e-12, String(b));
    }
  });
});

// The binary points answer (docs/http-api.md, format=f64) as the server
// writes it, for the decoder's model test.
function encodePointsF64(series) {
  const head = new TextEncoder().encode(JSON.stringify(series.map((s) => ({ series_id: s.series_id, n: s.n, fields: Object.keys(s.arrays) }))));
  const start = 4 + head.length + ((8 - ((4 + head.length) % 8)) % 8);
  const total = start + series.reduce((t, s) => t + 8 * s.n * Object.keys(s.arrays).length, 0);
  const buf = new ArrayBuffer(total);
  new DataView(buf).setUint32(0, head.length, true);
  new Uint8Array(buf, 4).set(head);
  let off = start;
  for (const s of series) {
    for (const a of Object.values(s.arrays)) { new Float64Array(buf, off, s.n).set(a); off += 8 * s.n; }
  }
  return buf;
}

test('pointsFromF64 decodes what the server writes, and every answer cut short or damaged throws', () => {
  const fieldSets = [['steps', 'values'], ['steps', 'values', 'timestamps', 'epochs'], ['steps', 'values', 'mins', 'maxs'], ['values']];
  for (let seed = 1; seed <= 300; seed++) {
    const r = rng(seed);
    const series = Array.from({ length: Math.floor(r() * 4) }, (_, i) => {
      const n = Math.floor(r() * (r() < 0.2 ? 0 : 40));
      const fields = fieldSets[Math.floor(r() * fieldSets.length)];
      const pick = () => { const x = r(); return x < 0.05 ? NaN : x < 0.08 ? Infinity : (x - 0.5) * 1e6; };
      return { series_id: String(BigInt(Math.floor(r() * 2 ** 53)) * 1024n + BigInt(i)), n, arrays: Object.fromEntries(fields.map((f) => [f, Float64Array.from({ length: n }, pick)])) };
    });
    const buf = encodePointsF64(series);
    const got = pointsFromF64(buf);
    assert.equal(got.length, series.length, `seed ${seed}`);
    got.forEach((g, i) => {
      assert.equal(g.series_id, series[i].series_id, `seed ${seed}`);
      assert.deepEqual(Object.keys(g).filter((k) => k !== 'series_id'), Object.keys(series[i].arrays), `seed ${seed}`);
      for (const [f, a] of Object.entries(series[i].arrays)) assert.deepEqual([...g[f]], [...a], `seed ${seed} ${f}`);
    });
    // Any shorter answer throws: a body cut short is never drawn as fewer points.
    const cuts = new Set([0, 3, buf.byteLength - 1, Math.floor(r() * buf.byteLength), Math.floor(r() * buf.byteLength)]);
    for (const n of cuts) {
      if (n < 0 || n >= buf.byteLength) continue;
      assert.throws(() => pointsFromF64(buf.slice(0, n)), `seed ${seed}: cut at ${n} of ${buf.byteLength}`);
    }
    // Bytes after the arrays, and a header whose counts lie, throw too.
    const longer = new Uint8Array(buf.byteLength + 8);
    longer.set(new Uint8Array(buf));
    assert.throws(() => pointsFromF64(longer.buffer), `seed ${seed}: 8 bytes more`);
    if (series.length) {
      // The real arrays behind a header whose first n is not a whole number.
      const realHead = new DataView(buf).getUint32(0, true);
      const arrays = new Uint8Array(buf, 4 + realHead + ((8 - ((4 + realHead) % 8)) % 8));
      const lie = series.map((s, i) => ({ series_id: s.series_id, n: i === 0 ? s.n + 0.5 : s.n, fields: Object.keys(s.arrays) }));
      const head = new TextEncoder().encode(JSON.stringify(lie));
      const start = 4 + head.length + ((8 - ((4 + head.length) % 8)) % 8);
      const forged = new Uint8Array(start + arrays.length);
      new DataView(forged.buffer).setUint32(0, head.length, true);
      forged.set(head, 4);
      forged.set(arrays, start);
      assert.throws(() => pointsFromF64(forged.buffer), /series 0 of the header/, `seed ${seed}: n of ${lie[0].n}`);
    }
  }
  // The header itself: not a list, unknown or repeated fields, a numeric id.
  for (const head of ['{}', '[{"series_id":"1","n":0,"fields":["step"]}]', '[{"series_id":"1","n":0,"fields":["steps","steps"]}]', '[{"series_id":1,"n":0,"fields":[]}]', '[null]']) {
    const b = new TextEncoder().encode(head);
    const buf = new ArrayBuffer(4 + b.length + ((8 - ((4 + b.length) % 8)) % 8));
    new DataView(buf).setUint32(0, b.length, true);
    new Uint8Array(buf, 4).set(b);
    assert.throws(() => pointsFromF64(buf), head);
  }
});
