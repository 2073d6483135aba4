// Chart panels: one uPlot panel per (metric, context) overlaying the drawn
// runs, grouped by the metric-name prefix (train/…). A panel reads its
// points only when it comes on screen (IntersectionObserver), at most
// maxPoints per line over the visible x range (the reader keeps each
// series' first and last point and each bucket's extremes, and the
// extremes' band is drawn behind the line); a drag zooms every panel and
// re-reads only the visible step range.

import uPlot from 'uplot';

import { MAX_POINTS, contextLabel, isTimeX, panelGroups, panelMatcher, prefixOf, readOptions, zoomSteps } from './first.js';

export { MAX_POINTS, contextLabel, panelMatcher, prefixOf };

const esc = (s) => String(s ?? '').replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' }[c]));

function lowerBound(a, x) {
  let lo = 0, hi = a.length;
  while (lo < hi) { const m = (lo + hi) >> 1; if (a[m] < x) lo = m + 1; else hi = m; }
  return lo;
}

const fmtVal = (v) => (v === null || v === undefined ? '–' : !Number.isFinite(v) ? String(v) : Math.abs(v) >= 1e5 || (Math.abs(v) < 1e-3 && v !== 0) ? v.toExponential(4) : String(+v.toPrecision(6)));

const fmtTick = (v) => (v === null ? '' : v === 0 ? '0' : Math.abs(v) >= 1e5 || Math.abs(v) < 1e-3 ? v.toExponential(1) : String(+v.toPrecision(4)));

function fmtRel(s) {
  if (!Number.isFinite(s)) return '';
  if (Math.abs(s) < 120) return `${+s.toFixed(1)}s`;
  if (Math.abs(s) < 7200) return `${+(s / 60).toFixed(1)}m`;
  return `${+(s / 3600).toFixed(2)}h`;
}

/**
 * ChartsView draws the panels of the app's state. app: { source, state,
 * lib: {smoothEMA, yRange, panelCSV, alignByStep?}, colorOf(id), runOf(id),
 * dark(), onZoom([lo,hi]|null), onError(e), onDrawn() }.
 */
export class ChartsView {
  constructor(el, app) {
    this.el = el;
    this.app = app;
    this.panels = new Map(); // key -> panel
    this.order = [];
    this.gen = 0;
    this.io = new IntersectionObserver((entries) => {
      for (const e of entries) {
        const p = e.target.kv0panel;
        if (!p) continue;
        p.seen = true;
        p.visible = e.isIntersecting;
        if (p.visible) this.ensure(p);
      }
      this.app.onDrawn();
    }, { rootMargin: '200px 0px' });
    this.ro = new ResizeObserver((entries) => {
      for (const e of entries) {
        const p = e.target.kv0panel;
        if (p?.plot) p.plot.setSize(this.size(p));
      }
    });
    this.tip = document.createElement('div');
    this.tip.className = 'tooltip';
    this.tip.hidden = true;
    document.body.appendChild(this.tip);
  }

  size(p) {
    const w = Math.max(200, p.plotEl.clientWidth || 400);
    return { width: w, height: 220 };
  }

  /**
   * Sets the panels: specs = [{metric, context, series: [{run_id, series_id, stats}]}],
   * already filtered and ordered. Panels keep what they read for series
   * they still draw.
   */
  setPanels(specs) {
    const keep = new Set();
    // Grouped as first.js groups them: the page's starter predicts the
    // first panels (and sends their reads) from the same order.
    const groups = panelGroups(specs).map(([g, ss]) => [g, ss.map((s) => {
      const key = `${s.metric}\u0000${s.context}`;
      keep.add(key);
      let p = this.panels.get(key);
      if (!p) {
        p = { key, metric: s.metric, context: s.context, series: [], data: new Map(), range: null, drawn: false, seen: false, visible: false, reading: null, error: null };
        this.makeEl(p);
        this.panels.set(key, p);
      }
      const before = p.series.map((x) => x.series_id).join(',');
      p.series = s.series;
      if (p.series.map((x) => x.series_id).join(',') !== before) p.dirty = true;
      return p;
    })]);
    for (const [k, p] of this.panels) {
      if (!keep.has(k)) this.drop(p);
    }
    // Lay out the groups (sections) in order.
    const frag = document.createDocumentFragment();
    this.order = [];
    for (const [g, ps] of groups) {
      let sec = this.el.querySelector(`section[data-group="${CSS.escape(g)}"]`);
      if (!sec) {
        sec = document.createElement('section');
        sec.className = 'panel-group';
        sec.dataset.group = g;
        sec.innerHTML = `<h2><button class="group-toggle" aria-expanded="true">${esc(g)}</button> <span class="count"></span></h2><div class="panel-grid"></div>`;
        sec.querySelector('.group-toggle').addEventListener('click', (e) => {
          const open = sec.classList.toggle('collapsed');
          e.currentTarget.setAttribute('aria-expanded', String(!open));
        });
      }
      sec.querySelector('.count').textContent = `${ps.length}`;
      const grid = sec.querySelector('.panel-grid');
      for (const p of ps) { grid.appendChild(p.el); this.order.push(p); }
      frag.appendChild(sec);
    }
    this.el.replaceChildren(frag);
    if (specs.length === 0) {
      this.el.innerHTML = '<p class="empty">No panels: select runs in the table (or clear the panel filter).</p>';
    }
    // New panels on screen read now, not a frame later when the
    // IntersectionObserver first reports (it then keeps their state).
    const fresh = this.order.filter((p) => !p.seen);
    if (fresh.length) {
      const top = -200, bottom = window.innerHeight + 200;
      for (const p of fresh) {
        const r = p.el.getBoundingClientRect();
        if (r.width > 0 && r.bottom >= top && r.top <= bottom) p.visible = true;
        // A panel whose read the page's starter already sent (it guessed
        // the layout) reads too, so that no answer goes unused.
        else if (r.width > 0 && this.app.source?.prefetched?.(p.series.map((s) => s.series_id), this.readPlan(p).opts)) p.visible = true;
      }
    }
    for (const p of this.order) {
      if (p.dirty && p.visible) this.ensure(p);
    }
  }

  drop(p) {
    this.io.unobserve(p.el);
    this.ro.unobserve(p.el);
    p.plot?.destroy();
    p.el.remove();
    this.panels.delete(p.key);
  }

  makeEl(p) {
    const el = document.createElement('article');
    el.className = 'panel';
    el.kv0panel = p;
    const ctx = contextLabel(p.context);
    el.innerHTML = `<header><h3 title="${esc(p.metric)} ${esc(p.context)}">${esc(p.metric)}${ctx ? ` <small>${esc(ctx)}</small>` : ''}</h3>` +
      `<span class="tools"><button data-act="csv" title="download the panel's points as CSV">CSV</button><button data-act="png" title="download the panel as PNG">PNG</button><button data-act="reset" title="reset zoom (or double-click the chart)">⤢</button></span></header>` +
      `<div class="plot" aria-label="chart of ${esc(p.metric)} ${esc(ctx)}"></div><div class="legend"></div><p class="panel-msg" hidden></p>`;
    el.dataset.metric = p.metric;
    el.dataset.context = p.context;
    p.el = el;
    p.plotEl = el.querySelector('.plot');
    p.legendEl = el.querySelector('.legend');
    p.msgEl = el.querySelector('.panel-msg');
    p.legendEl.addEventListener('click', (e) => {
      const g = e.target.closest('[data-group]');
      if (g) this.app.toggleGroup(g.dataset.group);
    });
    el.querySelector('header').addEventListener('click', (e) => {
      const act = e.target.closest('[data-act]')?.dataset.act;
      if (act === 'csv') this.exportCSV(p);
      else if (act === 'png') this.exportPNG(p);
      else if (act === 'reset') this.app.onZoom(null);
    });
    this.io.observe(el);
    this.ro.observe(el);
  }

  /** The step range to read for the current zoom, or null for all. */
  stepRange(p) {
    const z = this.app.state.zoom;
    if (!z) return null;
    const x = this.app.state.x;
    if (x === 'step') return zoomSteps(z);
    // Time axes: the steps whose x falls in the zoom, from the full read.
    let lo = Infinity, hi = -Infinity;
    for (const s of p.series) {
      const d = p.full?.get(s.series_id);
      if (!d?.timestamps) continue;
      const xs = this.xOf(s.run_id, d);
      for (let i = 0; i < xs.length; i++) {
        if (xs[i] >= z[0] && xs[i] <= z[1]) { lo = Math.min(lo, d.steps[i]); hi = Math.max(hi, d.steps[i]); }
      }
      // Keep a point either side so the line reaches the edges.
      const i0 = lowerBound(xs, z[0]);
      if (i0 > 0) lo = Math.min(lo, d.steps[i0 - 1]);
      const i1 = lowerBound(xs, z[1]);
      if (i1 < xs.length) hi = Math.max(hi, d.steps[i1]);
    }
    return Number.isFinite(lo) ? [lo, hi + 1] : null;
  }

  /** What a read of the panel asks for: the step range (null: all), its key, and the read options. */
  readPlan(p) {
    const want = this.stepRange(p);
    return { want, rkey: want ? want.join(':') : 'all', opts: readOptions(this.app.state.x, want) };
  }

  /** Reads what a visible panel lacks, then draws it. */
  ensure(p) {
    const { want, rkey, opts } = this.readPlan(p);
    // Lines read for x = step have no timestamps: a time axis reads them again.
    const timeX = this.timeX();
    // The same read already under way (setPanels and the observer both ask).
    const asked = `${rkey}|${timeX}|${p.series.map((s) => s.series_id).join(',')}`;
    if (p.reading && p.asked === asked) return p.reading;
    const missing = p.series.filter((s) => !p.data.has(s.series_id) || (timeX && !p.data.get(s.series_id).timestamps));
    if (p.rkey === rkey && missing.length === 0) {
      if (p.reading) return p.reading;
      if (!p.drawn || p.dirty) {
        const gen = ++this.gen;
        p.pending = gen;
        p.el.classList.add('loading');
        p.reading = this.app.prepare(p.series.map((s) => s.run_id)).then(() => { if (p.pending === gen) this.redraw(p); })
          .catch((e) => this.app.onError(e, p))
          .finally(() => { if (p.pending === gen) { p.reading = null; p.el.classList.remove('loading'); this.app.onDrawn(); } });
        return p.reading;
      }
      return Promise.resolve();
    }
    const ids = (p.rkey === rkey ? missing : p.series).map((s) => s.series_id);
    const gen = ++this.gen;
    p.pending = gen;
    p.asked = asked;
    p.el.classList.add('loading');
    p.reading = this.app.source.read(ids, opts).then((pts) => {
      if (p.pending !== gen) return;
      if (p.rkey !== rkey) p.data = new Map();
      p.rkey = rkey;
      pts.forEach((d) => p.data.set(d.series_id, d));
      if (!want) p.full = p.data;
      p.error = null;
      return this.app.prepare(p.series.map((s) => s.run_id));
    }).then(() => {
      if (p.pending === gen) this.redraw(p);
    }).catch((e) => {
      if (p.pending !== gen) return;
      p.error = e;
      p.msgEl.hidden = false;
      p.msgEl.textContent = this.app.describe(e);
      p.el.classList.add('failed');
      this.app.onError(e, p);
    }).finally(() => {
      if (p.pending === gen) { p.reading = null; p.el.classList.remove('loading'); this.app.onDrawn(); }
    });
    return p.reading;
  }

  /** Zoom changed (or axes): visible panels re-read, the others when seen. */
  refresh() {
    for (const p of this.order) {
      p.dirty = true;
      if (p.visible) this.ensure(p);
    }
  }

  /** Redraws every drawn panel from what it holds (smoothing, y scale, theme). */
  restyle() {
    for (const p of this.order) {
      if (!(p.drawn || p.plot)) continue;
      if (p.visible) { p.dirty = true; this.ensure(p); } else p.dirty = true;
    }
  }

  /** Whether the x axis is a time (the lines need their timestamps). */
  timeX() { return isTimeX(this.app.state.x); }

  /** x values of a run's points for the current x axis. */
  xOf(runId, d) {
    const x = this.app.state.x;
    if (x === 'wall') return d.timestamps.map((t) => t / 1000);
    if (x === 'rel') {
      const run = this.app.runOf(runId);
      const t0 = run ? Date.parse(run.created_at) : d.timestamps[0];
      return d.timestamps.map((t) => (t - t0) / 1000);
    }
    return d.steps;
  }

  /** Appends live points of a series (read from just past its last step). */
  append(seriesId, pts) {
    for (const p of this.order) {
      const d = p.data.get(seriesId);
      if (!d) continue;
      if (p.rkey !== 'all') continue; // a zoomed panel keeps its range
      const cat = (a, b) => { if (!a || !b) return a; const o = new Float64Array(a.length + b.length); o.set(a); o.set(b, a.length); return o; };
      const n = d.steps.length;
      const m = { series_id: d.series_id, steps: cat(d.steps, pts.steps), values: cat(d.values, pts.values), timestamps: cat(d.timestamps, pts.timestamps), epochs: cat(d.epochs, pts.epochs) };
      if (d.mins || pts.mins) {
        m.mins = cat(d.mins ?? d.values, pts.mins ?? pts.values);
        m.maxs = cat(d.maxs ?? d.values, pts.maxs ?? pts.values);
      }
      p.data.set(seriesId, m);
      if (n + pts.steps.length > 2 * MAX_POINTS) p.data.delete(seriesId); // re-read it downsampled
      p.dirty = true;
      if (p.visible) this.ensure(p);
    }
  }

  /** The series a panel draws (skipping hidden runs) with what was read. */
  lines(p) {
    const out = [];
    for (const s of p.series) {
      const d = p.data.get(s.series_id);
      if (d) out.push({ s, d });
    }
    return out;
  }

  /** A line of a run, prepared for the current x axis: x ascending, smoothing applied in step order. */
  prep(runId, d) {
    const st = this.app.state;
    const lib = this.app.lib;
    let xs = this.xOf(runId, d), ys = d.values, lo = d.mins, hi = d.maxs, steps = d.steps;
    if (st.x.startsWith('m:')) {
      const other = this.app.xLine(runId, st.x.slice(2));
      if (!other) return null;
      const a = lib.alignByStep(other, { steps: d.steps, values: d.values });
      xs = a.x; ys = a.y; lo = hi = undefined; steps = null;
    }
    let sm = st.s > 0 ? lib.smoothEMA(ys, st.s) : null;
    let sorted = true;
    for (let i = 1; i < xs.length; i++) if (!(xs[i] >= xs[i - 1])) { sorted = false; break; }
    if (!sorted) {
      const idx = Array.from(xs, (_, i) => i).sort((a, b) => xs[a] - xs[b] || a - b);
      const perm = (arr) => (arr ? Float64Array.from(idx, (i) => arr[i]) : arr);
      xs = perm(xs); ys = perm(ys); sm = perm(sm); lo = perm(lo); hi = perm(hi); steps = perm(steps);
    }
    return { xs, ys, lo, hi, sm, steps };
  }

  /** The entries a panel draws: a line per run, or per group (mean and band) when grouping. */
  entries(p) {
    const st = this.app.state;
    const lib = this.app.lib;
    const lines = this.lines(p);
    const by = this.app.groupBy();
    const runEntry = ({ s, d }, prefix = '') => {
      const l = this.prep(s.run_id, d);
      if (!l) return null;
      const label = this.app.runOf(s.run_id)?.name || s.run_id;
      return { ...l, key: s.run_id, run_id: s.run_id, label: prefix + label, color: this.app.colorOf(s.run_id) };
    };
    if (!by) return lines.map((l) => runEntry(l)).filter(Boolean);
    const byRun = new Map(lines.map((l) => [l.s.run_id, l]));
    const groups = lib.groupRuns(lines.map(({ s }) => this.app.groupRun(s.run_id)), by);
    const out = [];
    for (const [g, rs] of groups) {
      const name = g === '' ? '(none)' : g;
      if (this.app.expanded(g)) {
        for (const r of rs) { const e = runEntry(byRun.get(r.run_id), `${name}: `); if (e) out.push({ ...e, group: g }); }
        continue;
      }
      const ls = rs.map((r) => this.prep(r.run_id, byRun.get(r.run_id).d)).filter(Boolean);
      if (!ls.length) continue;
      const agg = lib.aggregate(ls.map((l) => ({ steps: l.xs, values: l.ys })), { band: st.band });
      out.push({
        xs: agg.steps, ys: agg.mean, lo: rs.length > 1 ? agg.lo : undefined, hi: rs.length > 1 ? agg.hi : undefined,
        sm: st.s > 0 ? lib.smoothEMA(agg.mean, st.s) : null, steps: null,
        key: `group:${g}`, group: g, label: `${name} (${rs.length} run${rs.length === 1 ? '' : 's'})`, color: lib.runColor(`group:${g}`, this.app.dark()),
      });
    }
    return out;
  }

  redraw(p) {
    p.dirty = false;
    const st = this.app.state;
    const lib = this.app.lib;
    const dark = this.app.dark();
    const lines = this.lines(p);
    const log = st.y === 'log';
    let per = this.entries(p);
    // Many lines whose x values differ (each downsampled into its own
    // buckets) make a union far longer than the panel is wide: then each
    // line is put on a grid of one cell per pixel, keeping per cell its
    // minimum and maximum and the band's extremes, so uPlot walks two
    // columns a pixel, not 100k.
    let total = 0;
    for (const l of per) total += l.xs.length;
    const width = this.size(p).width;
    if (per.length > 1 && total > 8 * width) per = snapToGrid(per, width);
    // One x array: the union of every line's x values.
    let all = [];
    for (const l of per) for (const x of l.xs) if (Number.isFinite(x)) all.push(x);
    all = Float64Array.from(all).sort();
    const xs = [];
    for (let i = 0; i < all.length; i++) if (i === 0 || all[i] !== all[i - 1]) xs.push(all[i]);
    const data = [xs];
    const series = [{}];
    const bands = [];
    const put = (l, arr) => {
      const col = new Array(xs.length).fill(null);
      for (let i = 0; i < l.xs.length; i++) {
        const v = arr[i];
        if (!Number.isFinite(l.xs[i])) continue;
        col[lowerBound(xs, l.xs[i])] = Number.isFinite(v) && (!log || v > 0) ? v : null;
      }
      return col;
    };
    p.main = [];
    for (const l of per) {
      const color = l.color;
      const label = l.label;
      if (l.lo && l.hi) {
        data.push(put(l, l.hi), put(l, l.lo));
        const hiIdx = series.length;
        series.push({ label: `${label} max`, stroke: 'transparent', width: 0, points: { show: false }, spanGaps: true },
          { label: `${label} min`, stroke: 'transparent', width: 0, points: { show: false }, spanGaps: true });
        bands.push({ series: [hiIdx, hiIdx + 1], fill: withAlpha(color, l.group !== undefined && !l.run_id ? 0.2 : 0.13) });
      }
      data.push(put(l, l.ys));
      const few = l.xs.length <= 1 || (l.xs.length <= 30 && !l.sm);
      series.push({ label, stroke: l.sm ? withAlpha(color, 0.28) : color, width: l.sm ? 1 : 1.5, points: { show: few, size: 5, fill: color }, spanGaps: true });
      if (l.sm) {
        data.push(put(l, l.sm));
        series.push({ label: `${label} (smoothed)`, stroke: color, width: 1.6, points: { show: false }, spanGaps: true });
      }
      p.main.push({ key: l.key, group: l.group, run_id: l.run_id, label, color, idx: data.length - 1, l });
    }
    const [ylo, yhi] = lib.yRange(per.map((l) => ({ steps: l.xs, values: l.ys })), { robust: st.robust, log });
    const pad = log ? 0 : (yhi - ylo) * 0.05;
    const axisColor = dark ? '#aab' : '#556';
    const grid = dark ? '#ffffff14' : '#0000000f';
    const z = st.zoom;
    const timeX = st.x === 'wall';
    const xpad = xs.length === 1 ? (timeX ? 60 : Math.max(1, Math.abs(xs[0]) * 0.05)) : 0;
    const opts = {
      ...this.size(p),
      legend: { show: false },
      cursor: { drag: { x: true, y: false, setScale: false }, points: { show: false } },
      select: { show: true },
      scales: {
        // One x value (a validation metric logged once): a narrow range around it,
        // not uPlot's padding from 0.
        // The ranges read p.xr and p.yr, so setData of the same structure takes new ones.
        x: { time: timeX, range: (u, lo, hi) => p.xr ?? [lo, hi] },
        y: log ? { distr: 3, range: () => p.yr } : { range: () => p.yr },
      },
      axes: [
        { stroke: axisColor, grid: { stroke: grid }, ticks: { stroke: grid }, ...(st.x === 'rel' ? { values: (u, vals) => vals.map(fmtRel) } : {}) },
        { stroke: axisColor, grid: { stroke: grid }, ticks: { stroke: grid }, size: 62, values: (u, vals) => vals.map(fmtTick) },
      ],
      series,
      bands,
      hooks: {
        setSelect: [(u) => {
          if (u.select.width < 3) return;
          const lo = u.posToVal(u.select.left, 'x');
          const hi = u.posToVal(u.select.left + u.select.width, 'x');
          u.setSelect({ left: 0, top: 0, width: 0, height: 0 }, false);
          this.app.onZoom([lo, hi]);
        }],
        // The tooltip at most once a frame, and not while a drag selects a range.
        setCursor: [(u) => {
          if (u.cursor.event?.buttons) { this.tip.hidden = true; return; }
          if (p.tipFrame) return;
          p.tipFrame = requestAnimationFrame(() => { p.tipFrame = 0; this.tooltip(p, u); });
        }],
      },
    };
    p.xr = z ? [z[0], z[1]] : xs.length === 1 ? [xs[0] - xpad, xs[0] + xpad] : null;
    p.yr = log ? [ylo, yhi] : [ylo - pad, yhi + pad];
    // The same series, bands and axes as drawn (new points of a live run):
    // only the data changes, the chart stays.
    const shape = JSON.stringify([series.map((x) => [x.label, x.stroke, x.width, x.points?.show]), bands, log, st.x, dark, opts.width]);
    if (p.plot && p.shape === shape) {
      p.plot.setData(data);
      this.finish(p, lines);
      return;
    }
    p.shape = shape;
    p.plot?.destroy();
    p.plotEl.replaceChildren();
    p.plot = new uPlot(opts, data, p.plotEl);
    p.plotEl.kv0plot = p.plot;
    p.el.kv0plot = p.plot;
    p.plot.over.addEventListener('dblclick', () => this.app.onZoom(null));
    p.plot.over.addEventListener('mouseleave', () => { this.tip.hidden = true; });
    this.finish(p, lines);
  }

  /** The legend, the panel's message and its drawn state. */
  finish(p, lines) {
    p.legendEl.innerHTML = p.main.map((m) => (m.group !== undefined
      ? `<button class="legend-group" data-group="${esc(m.group)}" title="${m.run_id ? 'collapse the group' : 'expand the group into its runs'}"><i class="swatch" style="background:${m.color}"></i>${esc(m.label)}</button>`
      : `<span><i class="swatch" style="background:${m.color}"></i>${esc(m.label)}</span>`)).join('');
    const empty = lines.length === 0 || lines.every(({ d }) => d.steps.length === 0);
    p.msgEl.hidden = !empty;
    if (empty) p.msgEl.textContent = lines.length ? 'No points in this range.' : 'No data for the drawn runs.';
    p.el.classList.remove('failed');
    p.drawn = lines.length > 0;
    p.el.classList.toggle('drawn', p.drawn);
  }

  tooltip(p, u) {
    const idx = u.cursor.idx;
    if (idx === null || idx === undefined || u.cursor.left < 0) { this.tip.hidden = true; return; }
    const x = u.data[0][idx];
    const st = this.app.state;
    const rows = [];
    for (const m of p.main) {
      const { xs, ys, sm } = m.l;
      if (xs.length === 0) continue;
      let i = lowerBound(xs, x);
      if (i >= xs.length || (i > 0 && Math.abs(xs[i - 1] - x) <= Math.abs(xs[i] - x))) i--;
      if (i < 0 || i >= xs.length) continue;
      rows.push({ m, v: ys[i], sv: sm ? sm[i] : null, step: m.l.steps ? m.l.steps[i] : null });
    }
    rows.sort((a, b) => (b.sv ?? b.v) - (a.sv ?? a.v));
    const xl = st.x === 'wall' ? new Date(x * 1000).toISOString().replace('T', ' ').slice(0, 19) : st.x === 'rel' ? fmtRel(x) : fmtVal(x);
    this.tip.innerHTML = `<div class="tip-x">${esc(st.x.startsWith('m:') ? st.x.slice(2) : st.x === 'step' ? 'step' : st.x === 'wall' ? 'time' : 'since start')} ${esc(xl)}</div>` +
      rows.map((r) => `<div><i class="swatch" style="background:${r.m.color}"></i>${esc(r.m.label)} <b>${esc(fmtVal(r.sv ?? r.v))}</b>${r.sv !== null ? ` <small>raw ${esc(fmtVal(r.v))}</small>` : ''} ${r.step !== null && st.x !== 'step' ? ` <small>@${esc(String(r.step))}</small>` : ''}</div>`).join('');
    const rect = u.over.getBoundingClientRect();
    this.tip.hidden = false;
    const left = rect.left + u.cursor.left + 14;
    this.tip.style.left = `${Math.min(left, window.innerWidth - this.tip.offsetWidth - 8)}px`;
    this.tip.style.top = `${rect.top + window.scrollY + u.cursor.top + 14}px`;
  }

  /** A panel as the test hook gives it: points as read (NaN where not finite). */
  chartOf(p, withNames = false) {
    return {
      metric: p.metric,
      context: p.context,
      x: this.app.state.x,
      runs: this.lines(p).map(({ s, d }) => {
        const r = { run_id: s.run_id, steps: Array.from(d.steps), values: Array.from(d.values, (v) => (Number.isFinite(v) ? v : NaN)) };
        if (withNames) r.name = this.app.runOf(s.run_id)?.name ?? '';
        return r;
      }),
    };
  }

  exportCSV(p) {
    const text = this.app.lib.panelCSV(this.chartOf(p, true));
    download(new Blob([text], { type: 'text/csv' }), `${fileName(p)}.csv`);
  }

  exportPNG(p) {
    if (!p.plot) return;
    const src = p.plot.ctx.canvas;
    const c = document.createElement('canvas');
    c.width = src.width; c.height = src.height + 28 * devicePixelRatio;
    const g = c.getContext('2d');
    g.fillStyle = this.app.dark() ? '#16181d' : '#ffffff';
    g.fillRect(0, 0, c.width, c.height);
    g.fillStyle = this.app.dark() ? '#e6e6ea' : '#222';
    g.font = `${14 * devicePixelRatio}px system-ui, sans-serif`;
    g.fillText(`${p.metric} ${contextLabel(p.context)}`, 8 * devicePixelRatio, 19 * devicePixelRatio);
    g.drawImage(src, 0, 28 * devicePixelRatio);
    c.toBlob((b) => download(b, `${fileName(p)}.png`), 'image/png');
  }
}

/**
 * Lines on a grid of `cells` cells across their x extent (see redraw): in
 * each cell a line keeps its minimum and its maximum (in their order, at the
 * cell's start and middle), so its extremes and spikes stay, and the cell's
 * band is the extremes of the band values in it.
 */
export function snapToGrid(lines, cells) {
  let lo = Infinity, hi = -Infinity;
  for (const l of lines) for (const x of l.xs) if (Number.isFinite(x)) { if (x < lo) lo = x; if (x > hi) hi = x; }
  if (!(hi > lo)) return lines;
  const dx = (hi - lo) / cells;
  return lines.map((l) => {
    const n = l.xs.length;
    const xs = [], ys = [], sm = l.sm ? [] : null, mins = l.lo ? [] : null, maxs = l.hi ? [] : null, steps = l.steps ? [] : null;
    let i = 0;
    while (i < n) {
      if (!Number.isFinite(l.xs[i])) { i++; continue; }
      const c = Math.round((l.xs[i] - lo) / dx);
      // The cell's points: [i, j).
      let j = i, imin = -1, imax = -1, blo = Infinity, bhi = -Infinity;
      while (j < n && (!Number.isFinite(l.xs[j]) || Math.round((l.xs[j] - lo) / dx) === c)) {
        const v = l.ys[j];
        if (Number.isFinite(l.xs[j]) && Number.isFinite(v)) {
          if (imin < 0 || v < l.ys[imin]) imin = j;
          if (imax < 0 || v > l.ys[imax]) imax = j;
        }
        if (mins && l.lo[j] < blo) blo = l.lo[j];
        if (maxs && l.hi[j] > bhi) bhi = l.hi[j];
        j++;
      }
      const keep = imin < 0 ? [i] : imin === imax ? [imin] : [Math.min(imin, imax), Math.max(imin, imax)];
      keep.forEach((k, q) => {
        xs.push(lo + (c + q * 0.5) * dx);
        ys.push(l.ys[k]);
        if (sm) sm.push(l.sm[k]);
        if (mins) mins.push(Number.isFinite(blo) ? blo : l.lo[k]);
        if (maxs) maxs.push(Number.isFinite(bhi) ? bhi : l.hi[k]);
        if (steps) steps.push(l.steps[k]);
      });
      i = j;
    }
    return { ...l, xs, ys, sm, lo: mins, hi: maxs, steps };
  });
}

function fileName(p) {
  return `${p.metric}${p.context !== '{}' ? '-' + contextLabel(p.context) : ''}`.replace(/[^\w.=-]+/g, '_');
}

function download(blob, name) {
  const a = document.createElement('a');
  a.href = URL.createObjectURL(blob);
  a.download = name;
  document.body.appendChild(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(a.href), 10000);
}

/** A CSS colour with alpha (hsl(...) or #rrggbb). */
export function withAlpha(color, a) {
  if (color.startsWith('hsl(')) return color.replace(/\)$/, ` / ${a})`).replace(/,/g, ' ');
  if (color.startsWith('#') && color.length === 7) return color + Math.round(a * 255).toString(16).padStart(2, '0');
  if (color.startsWith('rgb(')) return color.replace('rgb(', 'rgba(').replace(')', `, ${a})`);
  return color;
}
