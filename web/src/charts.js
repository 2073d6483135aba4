// Chart panels: one uPlot panel per (metric, context) overlaying the drawn
// runs, grouped by the metric-name prefix (train/…). A panel reads its
// points only when it comes on screen (IntersectionObserver), at most
// maxPoints per line over the visible x range (the reader keeps each
// series' first and last point and each bucket's extremes, and the
// extremes' band is drawn behind the line); a drag zooms every panel and
// re-reads only the visible step range.

import uPlot from 'uplot';

export const MAX_POINTS = 1000;

const esc = (s) => String(s ?? '').replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' }[c]));

/** The group of a metric: its name up to the first '/', or "Charts". */
export function prefixOf(metric) {
  const i = metric.indexOf('/');
  return i > 0 ? metric.slice(0, i) : 'Charts';
}

/** A panel filter: a case-insensitive regex when q parses as one, else a substring. */
export function panelMatcher(q) {
  if (!q) return () => true;
  let re = null;
  try { re = new RegExp(q, 'i'); } catch { /* not a regex */ }
  const lower = q.toLowerCase();
  return (text) => (re ? re.test(text) : text.toLowerCase().includes(lower));
}

export function contextLabel(ctx) {
  if (!ctx || ctx === '{}') return '';
  try {
    return Object.entries(JSON.parse(ctx)).map(([k, v]) => `${k}=${typeof v === 'string' ? v : JSON.stringify(v)}`).join(' ');
  } catch { return ctx; }
}

function lowerBound(a, x) {
  let lo = 0, hi = a.length;
  while (lo < hi) { const m = (lo + hi) >> 1; if (a[m] < x) lo = m + 1; else hi = m; }
  return lo;
}

const fmtVal = (v) => (v === null || v === undefined ? '–' : !Number.isFinite(v) ? String(v) : Math.abs(v) >= 1e5 || (Math.abs(v) < 1e-3 && v !== 0) ? v.toExponential(4) : String(+v.toPrecision(6)));

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
    const groups = new Map();
    for (const s of specs) {
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
      const g = prefixOf(s.metric);
      if (!groups.has(g)) groups.set(g, []);
      groups.get(g).push(p);
    }
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
    for (const p of this.order) {
      if (p.dirty && p.visible) this.ensure(p);
      else if (p.dirty && p.plot) this.redraw(p);
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
    if (x === 'step') return [Math.floor(z[0]), Math.floor(z[1]) + 1];
    // Time axes: the steps whose x falls in the zoom, from the full read.
    let lo = Infinity, hi = -Infinity;
    for (const s of p.series) {
      const d = p.full?.get(s.series_id);
      if (!d) continue;
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

  /** Reads what a visible panel lacks, then draws it. */
  ensure(p) {
    const want = this.stepRange(p);
    const rkey = want ? want.join(':') : 'all';
    const missing = p.series.filter((s) => !p.data.has(s.series_id));
    if (p.rkey === rkey && missing.length === 0) {
      if (!p.drawn || p.dirty) this.redraw(p);
      return p.reading ?? Promise.resolve();
    }
    const ids = (p.rkey === rkey ? missing : p.series).map((s) => s.series_id);
    const gen = ++this.gen;
    p.pending = gen;
    p.el.classList.add('loading');
    const opts = { maxPoints: MAX_POINTS };
    if (want) { opts.fromStep = want[0]; opts.toStep = want[1]; }
    p.reading = this.app.source.read(ids, opts).then((pts) => {
      if (p.pending !== gen) return;
      if (p.rkey !== rkey) p.data = new Map();
      p.rkey = rkey;
      pts.forEach((d) => p.data.set(d.series_id, d));
      if (!want) p.full = p.data;
      p.error = null;
      this.redraw(p);
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
    for (const p of this.order) if (p.drawn || p.plot) this.redraw(p);
  }

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

  redraw(p) {
    p.dirty = false;
    const st = this.app.state;
    const lib = this.app.lib;
    const dark = this.app.dark();
    const lines = this.lines(p);
    const log = st.y === 'log';
    // One x array: the union of every line's x values.
    const per = lines.map(({ s, d }) => {
      let xs = this.xOf(s.run_id, d), ys = d.values, lo = d.mins, hi = d.maxs;
      if (st.x.startsWith('m:') && lib.alignByStep) {
        const other = this.app.xLine(s.run_id, st.x.slice(2));
        if (other) {
          const a = lib.alignByStep(other, { steps: d.steps, values: d.values });
          xs = a.x; ys = a.y; lo = hi = undefined;
        }
      }
      const sm = st.s > 0 ? lib.smoothEMA(ys, st.s) : null;
      return { s, d, xs, ys, lo, hi, sm };
    });
    let all = [];
    for (const l of per) all.push(...l.xs);
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
        col[lowerBound(xs, l.xs[i])] = Number.isFinite(v) && (!log || v > 0) ? v : null;
      }
      return col;
    };
    p.main = [];
    for (const l of per) {
      const color = this.app.colorOf(l.s.run_id);
      const label = this.app.runOf(l.s.run_id)?.name || l.s.run_id;
      if (l.lo && l.hi) {
        data.push(put(l, l.hi), put(l, l.lo));
        const hiIdx = series.length;
        series.push({ label: `${label} max`, stroke: 'transparent', width: 0, points: { show: false }, spanGaps: true, kv0band: true },
          { label: `${label} min`, stroke: 'transparent', width: 0, points: { show: false }, spanGaps: true, kv0band: true });
        bands.push({ series: [hiIdx, hiIdx + 1], fill: withAlpha(color, 0.13) });
      }
      data.push(put(l, l.ys));
      const few = l.xs.length <= 1 || (l.xs.length <= 30 && !l.sm);
      series.push({ label, stroke: l.sm ? withAlpha(color, 0.28) : color, width: l.sm ? 1 : 1.5, points: { show: few, size: 5, fill: color }, spanGaps: true, kv0raw: true });
      if (l.sm) {
        data.push(put(l, l.sm));
        series.push({ label: `${label} (smoothed)`, stroke: color, width: 1.6, points: { show: false }, spanGaps: true });
      }
      p.main.push({ run_id: l.s.run_id, label, color, idx: data.length - 1, l });
    }
    const [ylo, yhi] = lib.yRange(per.map((l) => ({ steps: l.d.steps, values: l.ys })), { robust: st.robust, log });
    const pad = log ? 0 : (yhi - ylo) * 0.05;
    const axisColor = dark ? '#aab' : '#556';
    const grid = dark ? '#ffffff14' : '#0000000f';
    const z = st.zoom;
    const timeX = st.x === 'wall';
    const opts = {
      ...this.size(p),
      legend: { show: false },
      cursor: { drag: { x: true, y: false, setScale: false }, points: { show: false } },
      select: { show: true },
      scales: {
        x: { time: timeX, ...(z ? { range: () => [z[0], z[1]] } : { range: (u, lo, hi) => (lo === hi ? [lo - 1, hi + 1] : [lo, hi]) }) },
        y: log ? { distr: 3, range: () => [ylo, yhi] } : { range: () => [ylo - pad, yhi + pad] },
      },
      axes: [
        { stroke: axisColor, grid: { stroke: grid }, ticks: { stroke: grid }, ...(st.x === 'rel' ? { values: (u, vals) => vals.map(fmtRel) } : {}) },
        { stroke: axisColor, grid: { stroke: grid }, ticks: { stroke: grid }, size: 56, values: (u, vals) => vals.map((v) => fmtVal(v)) },
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
        setCursor: [(u) => this.tooltip(p, u)],
      },
    };
    p.plot?.destroy();
    p.plotEl.replaceChildren();
    p.plot = new uPlot(opts, data, p.plotEl);
    p.plotEl.kv0plot = p.plot;
    p.el.kv0plot = p.plot;
    p.plot.over.addEventListener('dblclick', () => this.app.onZoom(null));
    p.plot.over.addEventListener('mouseleave', () => { this.tip.hidden = true; });
    p.legendEl.innerHTML = p.main.map((m) => `<span><i class="swatch" style="background:${m.color}"></i>${esc(m.label)}</span>`).join('');
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
      rows.push({ m, v: ys[i], sv: sm ? sm[i] : null, step: m.l.d.steps[i] ?? x });
    }
    rows.sort((a, b) => (b.sv ?? b.v) - (a.sv ?? a.v));
    const xl = st.x === 'wall' ? new Date(x * 1000).toISOString().replace('T', ' ').slice(0, 19) : st.x === 'rel' ? fmtRel(x) : fmtVal(x);
    this.tip.innerHTML = `<div class="tip-x">${esc(st.x.startsWith('m:') ? st.x.slice(2) : st.x === 'step' ? 'step' : st.x === 'wall' ? 'time' : 'since start')} ${esc(xl)}</div>` +
      rows.map((r) => `<div><i class="swatch" style="background:${r.m.color}"></i>${esc(r.m.label)} <b>${esc(fmtVal(r.sv ?? r.v))}</b>${r.sv !== null ? ` <small>raw ${esc(fmtVal(r.v))}</small>` : ''} <small>@${esc(String(r.step))}</small></div>`).join('');
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
