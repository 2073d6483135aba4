// Unit tests of the chart module's pure helpers (web/src/charts.js) in Node:
// the grid that many lines are put on before uPlot draws them, the panel
// filter, the metric-name groups and the colour with alpha.
import test from 'node:test';
import assert from 'node:assert/strict';
import { snapToGrid, panelMatcher, prefixOf, contextLabel, withAlpha } from '../../web/src/charts.js';

// mulberry32: a small seeded generator.
function rng(seed) {
  let a = seed >>> 0;
  return () => { a = (a + 0x6d2b79f5) >>> 0; let t = a; t = Math.imul(t ^ (t >>> 15), t | 1); t ^= t + Math.imul(t ^ (t >>> 7), t | 61); return ((t ^ (t >>> 14)) >>> 0) / 4294967296; };
}

test('snapToGrid: at most two points per cell, x ascending, every line keeps its extremes and its band', () => {
  const seed = Number(process.env.KV0_SEED ?? Date.now() % 100000);
  const r = rng(seed);
  for (let trial = 0; trial < 50; trial++) {
    const cells = 50 + Math.floor(r() * 500);
    const lines = Array.from({ length: 2 + Math.floor(r() * 5) }, () => {
      const n = 1 + Math.floor(r() * 3000);
      let x = r() * 10;
      const xs = [], ys = [], lo = [], hi = [];
      for (let i = 0; i < n; i++) {
        x += r() * 3;
        xs.push(x);
        const v = r() < 0.01 ? NaN : r() < 0.005 ? 1e3 * (r() - 0.5) : Math.sin(x / 40);
        ys.push(v);
        lo.push(Number.isFinite(v) ? v - r() : NaN);
        hi.push(Number.isFinite(v) ? v + r() : NaN);
      }
      return { xs, ys, lo, hi, sm: null, steps: xs.map((_, i) => i) };
    });
    const out = snapToGrid(lines, cells);
    out.forEach((l, li) => {
      const src = lines[li];
      assert.ok(l.xs.length <= 2 * (cells + 1), `seed ${seed}: ${l.xs.length} points on ${cells} cells`);
      for (let i = 1; i < l.xs.length; i++) assert.ok(l.xs[i] > l.xs[i - 1], `seed ${seed}: ascending`);
      const fin = (a) => a.filter(Number.isFinite);
      assert.equal(Math.max(...fin(l.ys)), Math.max(...fin(src.ys)), `seed ${seed}: the maximum stays`);
      assert.equal(Math.min(...fin(l.ys)), Math.min(...fin(src.ys)), `seed ${seed}: the minimum stays`);
      assert.equal(Math.max(...fin(l.hi)), Math.max(...fin(src.hi)), `seed ${seed}: the band's top stays`);
      assert.equal(Math.min(...fin(l.lo)), Math.min(...fin(src.lo)), `seed ${seed}: the band's bottom stays`);
      // Each kept step is a step of the line with the kept value.
      l.steps.forEach((st, i) => { if (Number.isFinite(l.ys[i])) assert.equal(src.ys[st], l.ys[i]); });
    });
  }
});

test('snapToGrid: lines on one x value are left as they are', () => {
  const lines = [{ xs: [5], ys: [1], sm: null, steps: [5] }, { xs: [5], ys: [2], sm: null, steps: [5] }];
  assert.equal(snapToGrid(lines, 100), lines);
});

test('panelMatcher: a regex when it parses, else a substring, case-insensitive', () => {
  assert.ok(panelMatcher('^train/')('train/loss'));
  assert.ok(!panelMatcher('^train/')('val/train/loss'));
  assert.ok(panelMatcher('LOSS')('train/loss'));
  assert.ok(panelMatcher('loss(')('a loss(x)'), 'an unparsable regex is a substring');
  assert.ok(panelMatcher('')('anything'));
});

test('prefixOf, contextLabel, withAlpha', () => {
  assert.equal(prefixOf('train/loss'), 'train');
  assert.equal(prefixOf('loss'), 'Charts');
  assert.equal(prefixOf('/odd'), 'Charts');
  assert.equal(contextLabel('{}'), '');
  assert.equal(contextLabel('{"subset":"val","k":2}'), 'subset=val k=2');
  assert.equal(withAlpha('hsl(10, 50%, 40%)', 0.5), 'hsl(10  50%  40% / 0.5)');
  assert.equal(withAlpha('#112233', 1), '#112233ff');
});
