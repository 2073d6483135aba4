// The parallel-coordinates view: one vertical axis per chosen parameter
// (and one for a summary metric), one line per visible run. Dragging on an
// axis brushes a range; the runs inside every brush are handed to onBrush,
// which filters the runs table. Keyboard: Tab to an axis, ArrowUp/ArrowDown
// move its brush (one is made at the middle if there is none), Shift+Arrow
// widens/narrows it (on an axis of categories: moves by one category,
// Shift+↑ adds one, Shift+↓ drops one), Escape or Delete clears it.

import { h, svg, fmtValue, errorText, limiter, paramAt, statNumber } from './dom.js';

// ---------------------------------------------------------------- models

function present(v) {
  return v !== undefined && v !== null && !(typeof v === 'number' && !Number.isFinite(v));
}

function typeRank(v) {
  return typeof v === 'boolean' ? 0 : typeof v === 'number' ? 1 : typeof v === 'string' ? 2 : 3;
}

function compareValues(a, b) {
  const ta = typeRank(a);
  const tb = typeRank(b);
  if (ta !== tb) return ta - tb;
  if (ta === 0 || ta === 1) return Number(a) - Number(b);
  const sa = ta === 2 ? a : JSON.stringify(a);
  const sb = tb === 2 ? b : JSON.stringify(b);
  return sa < sb ? -1 : sa > sb ? 1 : 0;
}

const keyOf = (v) => (typeof v === 'string' ? `s:${v}` : `j:${JSON.stringify(v)}`);

function niceTicks(lo, hi, n = 5) {
  const span = hi - lo;
  const raw = span / n;
  const mag = 10 ** Math.floor(Math.log10(raw));
  const e = raw / mag;
  const step = mag * (e >= 7.5 ? 10 : e >= 3.5 ? 5 : e >= 1.5 ? 2 : 1);
  const out = [];
  for (let v = Math.ceil(lo / step) * step; v <= hi + step * 1e-9; v += step) out.push(Math.abs(v) < step * 1e-9 ? 0 : Number(v.toPrecision(12)));
  return out;
}

/**
 * axisScale maps the values one axis shows to positions in [0, 1] (0 at
 * the bottom). Finite numbers only: a linear scale over [min, max], or a
 * log scale when every value is positive and they span at least three
 * decades (learning rates); a single value sits at 0.5. Anything else
 * (strings, booleans, a mix): categories, sorted (booleans, numbers,
 * strings, then other JSON), evenly spaced. Absent and non-finite values
 * have no position (pos returns null; the view draws them below the
 * axis, and no brush holds them).
 *
 * @param {unknown[]} values
 * @returns {{kind: 'linear'|'log'|'category', domain: unknown[], pos: (v: unknown) => number|null, ticks: {pos: number, label: string}[]}}
 */
export function axisScale(values) {
  const vs = values.filter(present);
  if (vs.length > 0 && vs.every((v) => typeof v === 'number')) {
    let lo = Infinity;
    let hi = -Infinity;
    for (const v of vs) {
      if (v < lo) lo = v;
      if (v > hi) hi = v;
    }
    if (lo === hi) {
      return { kind: 'linear', domain: [lo, hi], pos: (v) => (typeof v === 'number' && v === lo ? 0.5 : null), ticks: [{ pos: 0.5, label: fmtValue(lo) }] };
    }
    if (lo > 0 && hi / lo >= 1000) {
      const a = Math.log10(lo);
      const b = Math.log10(hi);
      const pos = (v) => (typeof v === 'number' && v > 0 && Number.isFinite(v) ? Math.min(1, Math.max(0, (Math.log10(v) - a) / (b - a))) : null);
      const ticks = [];
      for (let e = Math.ceil(a); e <= Math.floor(b); e++) ticks.push({ pos: pos(10 ** e), label: fmtValue(10 ** e) });
      return { kind: 'log', domain: [lo, hi], pos, ticks };
    }
    const pos = (v) => (typeof v === 'number' && Number.isFinite(v) ? Math.min(1, Math.max(0, (v - lo) / (hi - lo))) : null);
    return { kind: 'linear', domain: [lo, hi], pos, ticks: niceTicks(lo, hi).map((t) => ({ pos: pos(t), label: fmtValue(t) })) };
  }
  const cats = [];
  const index = new Map();
  for (const v of [...vs].sort(compareValues)) {
    const k = keyOf(v);
    if (!index.has(k)) {
      index.set(k, cats.length);
      cats.push(v);
    }
  }
  const n = cats.length;
  const at = (i) => (n === 1 ? 0.5 : i / (n - 1));
  const pos = (v) => {
    if (!present(v)) return null;
    const i = index.get(keyOf(v));
    return i === undefined ? null : at(i);
  };
  // Label at most ~12 categories, evenly.
  const every = Math.max(1, Math.ceil(n / 12));
  const ticks = cats.map((c, i) => ({ pos: at(i), label: fmtValue(c) })).filter((_, i) => i % every === 0 || i === n - 1);
  return { kind: 'category', domain: cats, pos, ticks };
}

/**
 * parallelModel places each run on each axis.
 *
 * @param {{run_id: string, values: Record<string, unknown>}[]} rows
 * @param {{key: string, label?: string}[]} axes
 * @returns {{axes: {key: string, label: string, scale: ReturnType<typeof axisScale>}[], lines: {run_id: string, pos: (number|null)[]}[]}}
 */
export function parallelModel(rows, axes) {
  const out = axes.map((a) => ({ key: a.key, label: a.label ?? a.key, scale: axisScale(rows.map((r) => r.values[a.key])) }));
  const lines = rows.map((r) => ({ run_id: r.run_id, pos: out.map((a) => a.scale.pos(r.values[a.key])) }));
  return { axes: out, lines };
}

/**
 * brushFilter returns the ids of the runs inside every brush, in the
 * model's order, or null when no axis is brushed. brushes maps an axis key
 * to a [lo, hi] range of positions (inclusive); a run without a position
 * on a brushed axis is outside. Brushes of axes the model lacks are
 * ignored.
 *
 * @param {ReturnType<typeof parallelModel>} model
 * @param {Record<string, [number, number]>|Map<string, [number, number]>} brushes
 * @returns {string[]|null}
 */
export function brushFilter(model, brushes) {
  const entries = brushes instanceof Map ? [...brushes] : Object.entries(brushes ?? {});
  const active = [];
  for (const [key, range] of entries) {
    const i = model.axes.findIndex((a) => a.key === key);
    if (i < 0 || !range) continue;
    active.push([i, Math.min(range[0], range[1]), Math.max(range[0], range[1])]);
  }
  if (active.length === 0) return null;
  return model.lines.filter((l) => active.every(([i, lo, hi]) => l.pos[i] !== null && l.pos[i] >= lo && l.pos[i] <= hi)).map((l) => l.run_id);
}

/**
 * rangeStep is the keyboard's move of a brush on a numeric axis: none
 * yet: the middle fifth; else moved by 5 % up (dir 1) or down (-1), or
 * with resize widened (up) or narrowed (down) by 5 % at each end; always
 * within [0, 1].
 */
export function rangeStep(b, dir, resize) {
  const step = 0.05;
  if (!b) return [0.4, 0.6];
  let lo = b[0];
  let hi = b[1];
  if (resize) {
    const c = (lo + hi) / 2;
    const w = Math.min(1, Math.max(0.02, hi - lo + 2 * dir * step));
    lo = c - w / 2;
    hi = c + w / 2;
  } else {
    lo += dir * step;
    hi += dir * step;
  }
  const w = hi - lo;
  if (lo < 0) [lo, hi] = [0, w];
  if (hi > 1) [lo, hi] = [1 - w, 1];
  return [lo, hi];
}

/**
 * categoryStep is the keyboard's move of a brush on an axis of n
 * categories: none yet: the lowest (dir 1) or the highest (-1) category;
 * else the brushed run of categories moves by one, or with resize grows
 * (up) or shrinks (down) by one at its top. The brush covers its
 * categories' positions and half the gap to their neighbours.
 */
export function categoryStep(n, b, dir, resize) {
  if (n === 0) return null;
  const at = (i) => (n === 1 ? 0.5 : i / (n - 1));
  const half = n === 1 ? 0.05 : 0.25 / (n - 1);
  let lo;
  let hi;
  if (!b) lo = hi = dir > 0 ? 0 : n - 1;
  else {
    // The categories inside the brush (at least the nearest one).
    lo = n === 1 ? 0 : Math.max(0, Math.ceil(b[0] * (n - 1) - 1e-9));
    hi = n === 1 ? 0 : Math.min(n - 1, Math.floor(b[1] * (n - 1) + 1e-9));
    if (hi < lo) lo = hi = Math.min(n - 1, Math.max(0, Math.round(((b[0] + b[1]) / 2) * (n - 1))));
    if (resize) {
      if (dir > 0) hi < n - 1 ? hi++ : lo > 0 && lo--;
      else if (hi > lo) hi--;
    } else if (dir > 0 && hi < n - 1) {
      lo++;
      hi++;
    } else if (dir < 0 && lo > 0) {
      lo--;
      hi--;
    }
  }
  return [Math.max(0, at(lo) - half), Math.min(1, at(hi) + half)];
}

// ---------------------------------------------------------------- the view

const STAT = { last: 'last_value', min: 'min', max: 'max' };

function metricOf(metric) {
  if (!metric) return null;
  if (typeof metric === 'string') return { name: metric, stat: 'last' };
  return { name: metric.name, context: metric.context, stat: metric.stat ?? 'last' };
}

function summaryOf(series, m) {
  const same = series.filter((s) => s.name === m.name && (m.context === undefined || s.context === m.context));
  const s = same.find((x) => x.context === '{}') ?? same[0];
  if (!s || !s.stats) return undefined;
  const v = statNumber(s.stats[STAT[m.stat] ?? 'last_value']);
  return v;
}

/**
 * renderParallel draws the parallel-coordinates view in el and returns
 * its handle. runs are the visible runs (Run objects; a run may carry its
 * parameters as run.params, else they are read with ctx.source.params);
 * params the dotted parameter keys to show, in order; metric the summary
 * metric: a name, or {name, context?, stat: 'last'|'min'|'max'} (from the
 * series' statistics: no points are read), or null. onBrush(runIds|null)
 * is called whenever the brushed set changes (null: no brush).
 *
 * @returns {{update(runs: object[]): Promise<void>, destroy(): void}}
 */
export function renderParallel(el, ctx, { runs = [], params = [], metric = null, onBrush = () => {} } = {}) {
  const m = metricOf(metric);
  const paramsCache = new Map(); // run id -> Promise<object>
  const seriesCache = new Map(); // run id -> Promise<SeriesInfo[]>
  const brushes = new Map(); // axis key -> [lo, hi]
  let current = runs;
  let model = null;
  let lastSent;
  let destroyed = false;
  let generation = 0;

  el.classList.add('kv0v', 'kv0v-parallel');
  el.replaceChildren();
  const status = h('p', { class: 'kv0v-status', role: 'status' });
  const frame = h('div', { class: 'kv0v-pc-frame' });
  el.append(
    h('p', { class: 'kv0v-hint' }, 'Drag along an axis to brush a range; click an axis to clear its brush. With the keyboard: Tab to an axis, ↑/↓ move the brush, Shift+↑/↓ resize it, Esc clears it.'),
    frame,
    status,
  );

  const axesSpec = [...params.map((k) => ({ key: `param:${k}`, label: k })), ...(m ? [{ key: 'metric', label: `${m.name}${m.context && m.context !== '{}' ? ' ' + m.context : ''} (${m.stat})` }] : [])];

  const queue = limiter(8);
  const paramsOf = (id) => {
    if (!paramsCache.has(id)) paramsCache.set(id, queue(() => ctx.source.params(id)).catch((e) => ({ __error: e })));
    return paramsCache.get(id);
  };
  const seriesOf = (id) => {
    if (!seriesCache.has(id)) seriesCache.set(id, queue(() => ctx.source.series(id)).catch((e) => ({ __error: e })));
    return seriesCache.get(id);
  };

  async function rowsOf(list) {
    const pending = list.filter((r) => (params.length && !r.params && !paramsCache.has(r.run_id)) || (m && !seriesCache.has(r.run_id))).length;
    if (pending) status.textContent = `reading ${pending} runs…`;
    const errors = [];
    const rows = await Promise.all(
      list.map(async (r) => {
        const p = params.length ? (r.params ?? (await paramsOf(r.run_id))) : {};
        const s = m ? await seriesOf(r.run_id) : [];
        if (p && p.__error) errors.push(p.__error);
        if (s && s.__error) errors.push(s.__error);
        const values = {};
        for (const k of params) values[`param:${k}`] = p && !p.__error ? paramAt(p, k) : undefined;
        if (m) values.metric = Array.isArray(s) ? summaryOf(s, m) : undefined;
        return { run_id: r.run_id, name: r.name, values };
      }),
    );
    return { rows, errors };
  }

  function emit() {
    const ids = model ? brushFilter(model, brushes) : null;
    const key = ids === null ? null : ids.join('\n');
    if (key === lastSent) return;
    lastSent = key;
    onBrush(ids);
  }

  async function draw(list) {
    const g = ++generation;
    const { rows, errors } = await rowsOf(list);
    if (destroyed || g !== generation) return;
    if (axesSpec.length === 0) {
      frame.replaceChildren(h('p', { class: 'kv0v-empty' }, 'Choose parameters (or a summary metric) to compare the runs on.'));
      status.textContent = '';
      return;
    }
    model = parallelModel(rows, axesSpec);
    for (const k of [...brushes.keys()]) if (!model.axes.some((a) => a.key === k)) brushes.delete(k);
    paint(rows);
    status.textContent = `${rows.length} runs` + (errors.length ? ` · ${errors.length} could not be read (${errorText(errors[0])})` : '');
    emit();
  }

  // Geometry.
  const H = 340;
  const TOP = 34;
  const BOTTOM = 30;
  const SIDE = 56;
  const yOf = (p) => TOP + (1 - p) * (H - TOP - BOTTOM);
  const yMissing = H - 10;
  const posOfY = (y) => Math.min(1, Math.max(0, 1 - (y - TOP) / (H - TOP - BOTTOM)));

  let lineEls = new Map();
  let brushEls = new Map();
  let painted = null; // {rows, width} of the last paint

  function paint(rows) {
    const W = Math.max(320, el.clientWidth || 800);
    painted = { rows, width: W };
    const active = typeof document !== 'undefined' ? document.activeElement : null;
    const focusedAxis = active && el.contains(active) ? active.getAttribute('data-axis') : null;
    const n = model.axes.length;
    const xOf = (i) => (n === 1 ? W / 2 : SIDE + (i * (W - 2 * SIDE)) / (n - 1));
    const root = svg('svg', { class: 'kv0v-pc', width: W, height: H, viewBox: `0 0 ${W} ${H}`, role: 'group', 'aria-label': 'parallel coordinates of the runs' });
    const linesG = svg('g', { class: 'kv0v-pc-lines' });
    lineEls = new Map();
    const nameOf = new Map(rows.map((r) => [r.run_id, r.name]));
    for (const l of model.lines) {
      let d = '';
      l.pos.forEach((p, i) => {
        d += `${i ? 'L' : 'M'}${xOf(i).toFixed(1)},${(p === null ? yMissing : yOf(p)).toFixed(1)}`;
      });
      const path = svg('path', { d, stroke: ctx.colorOf(l.run_id), class: 'kv0v-pc-line', 'data-run': l.run_id },
        svg('title', null, `${nameOf.get(l.run_id) || l.run_id}`));
      path.addEventListener('click', () => ctx.navigate({ view: 'run', run: l.run_id }));
      linesG.append(path);
      lineEls.set(l.run_id, path);
    }
    root.append(linesG);
    brushEls = new Map();
    model.axes.forEach((a, i) => {
      const x = xOf(i);
      const g = svg('g', { class: 'kv0v-pc-axis', tabindex: 0, role: 'slider', 'aria-label': `${a.label} axis${a.scale.kind === 'log' ? ' (log)' : ''}`, 'data-axis': a.key });
      g.append(svg('line', { x1: x, x2: x, y1: yOf(1), y2: yOf(0), class: 'kv0v-pc-rule' }));
      for (const t of a.scale.ticks) {
        const y = yOf(t.pos);
        g.append(svg('line', { x1: x - 3, x2: x + 3, y1: y, y2: y, class: 'kv0v-pc-rule' }));
        g.append(svg('text', { x: x - 6, y: y + 3, class: 'kv0v-pc-tick', 'text-anchor': 'end' }, t.label.length > 14 ? t.label.slice(0, 13) + '…' : t.label));
      }
      g.append(svg('text', { x, y: 14, class: 'kv0v-pc-label', 'text-anchor': 'middle' }, a.label + (a.scale.kind === 'log' ? ' (log)' : '')));
      g.append(svg('text', { x, y: yMissing + 3, class: 'kv0v-pc-tick', 'text-anchor': 'middle' }, '–'));
      const brush = svg('rect', { x: x - 7, width: 14, class: 'kv0v-pc-brush', visibility: 'hidden' });
      g.append(brush);
      brushEls.set(a.key, brush);
      // The hit area, wider than the rule.
      const hit = svg('rect', { x: x - 14, y: yOf(1) - 4, width: 28, height: yOf(0) - yOf(1) + 8, class: 'kv0v-pc-hit' });
      g.append(hit);
      bindAxis(g, hit, a.key, root);
      root.append(g);
    });
    frame.replaceChildren(root);
    for (const k of brushes.keys()) showBrush(k);
    shade();
    // Keep the keyboard where it was across a redraw.
    if (focusedAxis) root.querySelector(`[data-axis="${CSS.escape(focusedAxis)}"]`)?.focus();
  }

  // Redraw when the container's width changes.
  const resized = typeof ResizeObserver === 'function'
    ? new ResizeObserver(() => {
      if (!destroyed && painted && model && Math.abs(Math.max(320, el.clientWidth || 800) - painted.width) > 2) paint(painted.rows);
    })
    : null;
  resized?.observe(el);

  function showBrush(key) {
    const r = brushEls.get(key);
    if (!r) return;
    const b = brushes.get(key);
    const axis = r.parentNode;
    const a = model.axes.find((x) => x.key === key);
    if (!b) {
      r.setAttribute('visibility', 'hidden');
      axis.removeAttribute('aria-valuetext');
      return;
    }
    const [lo, hi] = b;
    r.setAttribute('visibility', 'visible');
    r.setAttribute('y', String(yOf(hi)));
    r.setAttribute('height', String(Math.max(2, yOf(lo) - yOf(hi))));
    axis.setAttribute('aria-valuetext', `${a.label} brushed from ${(lo * 100).toFixed(0)} % to ${(hi * 100).toFixed(0)} % of the axis`);
  }

  function shade() {
    const ids = model ? brushFilter(model, brushes) : null;
    const inside = ids === null ? null : new Set(ids);
    for (const [id, p] of lineEls) p.classList.toggle('kv0v-out', inside !== null && !inside.has(id));
  }

  function changed(key) {
    showBrush(key);
    shade();
    emit();
  }

  function bindAxis(g, hit, key, root) {
    let start = null;
    let moved = false;
    const yIn = (ev) => {
      const box = root.getBoundingClientRect();
      return ((ev.clientY - box.top) * H) / (box.height || H);
    };
    hit.addEventListener('pointerdown', (ev) => {
      start = yIn(ev);
      moved = false;
      hit.setPointerCapture?.(ev.pointerId);
      ev.preventDefault();
      g.focus?.();
    });
    hit.addEventListener('pointermove', (ev) => {
      if (start === null) return;
      const y = yIn(ev);
      if (!moved && Math.abs(y - start) < 3) return;
      moved = true;
      const a = posOfY(start);
      const b = posOfY(y);
      brushes.set(key, [Math.min(a, b), Math.max(a, b)]);
      showBrush(key);
      shade();
    });
    const end = () => {
      if (start === null) return;
      start = null;
      if (!moved) brushes.delete(key);
      changed(key);
    };
    hit.addEventListener('pointerup', end);
    hit.addEventListener('pointercancel', end);
    g.addEventListener('keydown', (ev) => {
      const a = model.axes.find((x) => x.key === key);
      const b = brushes.get(key);
      let next;
      switch (ev.key) {
        case 'ArrowUp':
        case 'ArrowDown':
          next = a.scale.kind === 'category'
            ? categoryStep(a.scale.domain.length, b, ev.key === 'ArrowUp' ? 1 : -1, ev.shiftKey)
            : rangeStep(b, ev.key === 'ArrowUp' ? 1 : -1, ev.shiftKey);
          if (!next) return;
          brushes.set(key, next);
          break;
        case 'Escape':
        case 'Delete':
        case 'Backspace':
          if (!b) return;
          brushes.delete(key);
          break;
        default:
          return;
      }
      ev.preventDefault();
      changed(key);
    });
  }

  const ready = draw(current);
  return {
    /** The visible runs changed: draw them (brushes stay). */
    async update(list) {
      current = list;
      await ready;
      await draw(list);
    },
    /** Removes the view; pending reads are dropped. */
    destroy() {
      destroyed = true;
      resized?.disconnect();
      generation++;
      el.replaceChildren();
      el.classList.remove('kv0v-parallel');
    },
    /** Resolves once the first drawing is done (for tests and callers that wait). */
    ready,
  };
}
