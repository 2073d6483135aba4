// kv0's dashboard: the entry point. It opens the source the URL names
// (source.js), lists the runs (table.js), draws the selected runs' metrics
// (charts.js), follows new versions while the tab is visible, and keeps its
// state in the URL (state.js). window.kv0dash is the hook tests use.

import 'uplot/dist/uPlot.min.css';
import './style.css';
import { openSource, describeError, parseParamFilter } from './source.js';
import { newestRuns, panelSpecs } from './first.js';
import { parseState, stateQuery } from './state.js';
import { RunsTable, parseSummary, runDuration } from './table.js';
import { ChartsView, contextLabel } from './charts.js';
import { smoothEMA } from './lib/smooth.js';
import { runColor } from './lib/colors.js';
import { yRange } from './lib/range.js';
import { panelCSV } from './lib/csv.js';
import { groupKey, groupRuns, aggregate } from './lib/group.js';
import { alignByStep } from './lib/xmetric.js';
import { renderRunPage } from './views/run.js';
import { renderCompare } from './views/compare.js';
import { renderParallel } from './views/parallel.js';
import './views/views.css';

const lib = { smoothEMA, runColor, yRange, panelCSV, groupKey, groupRuns, aggregate, alignByStep };

const $ = (sel) => document.querySelector(sel);
const esc = (s) => String(s ?? '').replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' }[c]));
const params = new URLSearchParams(location.search);
// Milliseconds between polls of the versions: ?poll=MS (250 to 60000), default 2 s.
const POLL_MS = Math.min(60000, Math.max(250, Number(params.get('poll')) || 2000));
const state = parseState(params);
const darkQuery = matchMedia('(prefers-color-scheme: dark)');
const dark = () => darkQuery.matches;

let source = null;
let runs = []; // as the source lists them (the filter applied)
let runById = new Map();
let knownExperiments = new Set(), knownTags = new Set();
const seriesCache = new Map(); // run id -> Promise<SeriesInfo[]>
const seriesDone = new Map(); // run id -> SeriesInfo[]
const paramsCache = new Map(); // run id -> Promise
const paramsDone = new Map(); // run id -> object
const colorCache = new Map();
let lastVersions = null;

let resolveReady, rejectReady;
const ready = new Promise((res, rej) => { resolveReady = res; rejectReady = rej; });
ready.catch(() => {});
let started = false, readyDone = false;

// ---- helpers ---------------------------------------------------------------

function colorOf(id) {
  const k = `${id}:${dark()}`;
  if (!colorCache.has(k)) colorCache.set(k, lib.runColor(id, dark()));
  return colorCache.get(k);
}

function writeURL() {
  const q = stateQuery(state, params);
  const url = `${location.pathname}${q ? '?' + q : ''}${location.hash}`;
  if (url !== `${location.pathname}${location.search}${location.hash}`) history.replaceState(null, '', url);
}

function showError(e, where = '') {
  const d = describeError(e, source);
  const box = $('#errors');
  const div = document.createElement('div');
  div.className = 'error';
  div.setAttribute('role', 'alert');
  div.dataset.code = e?.code ?? '';
  div.innerHTML = `<b>${esc(d.title)}</b>${where ? ` <small>(${esc(where)})</small>` : ''}<p>${esc(d.fix)}</p><button class="dismiss" aria-label="dismiss">×</button>`;
  div.querySelector('.dismiss').addEventListener('click', () => div.remove());
  // The same message once.
  for (const old of box.children) if (old.textContent === div.textContent) return;
  box.appendChild(div);
}

const describe = (e) => { const d = describeError(e, source); return `${d.title}: ${d.fix}`; };

// The series lists asked for in one task go in one request when the source
// reads many runs' lists at once (api mode: /api/v1/series?runs=); direct
// mode reads each run's list from the module, which needs no round trip per
// run beyond the data it reads.
let seriesBatch = null; // run id -> {resolve, reject}, until the microtask sends them
function seriesOf(id) {
  if (!seriesCache.has(id)) {
    let p;
    if (source.seriesOfRuns) {
      if (!seriesBatch) { seriesBatch = new Map(); queueMicrotask(sendSeriesBatch); }
      p = new Promise((resolve, reject) => seriesBatch.set(id, { resolve, reject }));
    } else {
      p = source.series(id);
    }
    p = p.then((s) => { seriesDone.set(id, s); return s; });
    p.catch(() => { if (seriesCache.get(id) === p) seriesCache.delete(id); });
    seriesCache.set(id, p);
  }
  return seriesCache.get(id);
}
function sendSeriesBatch() {
  const batch = seriesBatch;
  seriesBatch = null;
  const ids = [...batch.keys()];
  source.seriesOfRuns(ids).then((lists) => {
    ids.forEach((id, i) => { const l = lists[i]; if (l instanceof Error) batch.get(id).reject(l); else batch.get(id).resolve(l); });
  }, (e) => { for (const w of batch.values()) w.reject(e); });
}

function paramsOfRun(id) {
  if (!paramsCache.has(id)) {
    const p = source.params(id).then((s) => { paramsDone.set(id, s); return s; });
    p.catch(() => paramsCache.delete(id));
    paramsCache.set(id, p);
  }
  return paramsCache.get(id);
}

function summaryValue(id, spec) {
  const m = parseSummary(spec);
  const list = seriesDone.get(id);
  if (!m || !list) return undefined;
  const s = list.find((x) => x.name === m.name && x.context === m.context);
  if (!s?.stats) return undefined;
  return m.agg === 'last' ? s.stats.last_value : m.agg === 'min' ? s.stats.min : s.stats.max;
}

// A small queue so lazy loads of the table's rows stay a few requests wide.
let queue = [], active = 0, repaint = 0;
function enqueue(fn) {
  return new Promise((res, rej) => { queue.push({ fn, res, rej }); pump(); });
}
function pump() {
  while (active < 6 && queue.length) {
    const { fn, res, rej } = queue.shift();
    active++;
    fn().then(res, rej).finally(() => { active--; pump(); scheduleRepaint(); });
  }
}
function scheduleRepaint() {
  if (!repaint) repaint = requestAnimationFrame(() => { repaint = 0; table.paint(true); });
}

// ---- the runs table ----------------------------------------------------------

const sel = new Set();
const hidden = new Set();

const table = new RunsTable($('#runs'), {
  colorOf,
  paramsOf: (id, key) => paramsDone.get(id)?.[key],
  summaryOf: summaryValue,
  want(ids) {
    for (const id of ids) {
      if (state.pc.length && !paramsCache.has(id)) enqueue(() => paramsOfRun(id)).catch(() => {});
      if (state.mc.length && !seriesCache.has(id)) enqueue(() => seriesOf(id)).catch(() => {});
    }
  },
  onToggle(id, on) {
    if (on) sel.add(id); else sel.delete(id);
    selectionChanged();
  },
  onSelectAll(on) {
    for (const r of displayRows()) { if (on) sel.add(r.run_id); else sel.delete(r.run_id); }
    selectionChanged();
  },
  onHide(id) {
    if (hidden.has(id)) hidden.delete(id); else hidden.add(id);
    selectionChanged();
  },
  onOpen(id) { navigate({ view: 'run', run: id }); },
  onSort(key) {
    const [k, d] = state.sort.split(':');
    state.sort = k === key ? (d === 'asc' ? `${key}:desc` : '') : `${key}:asc`;
    writeURL();
    sortNeeds().then(paintTable);
    paintTable();
  },
});

/** Loads what a sort by a parameter or summary column needs for every run. */
async function sortNeeds() {
  const [k] = state.sort.split(':');
  if (k.startsWith('p:')) await Promise.all(runs.map((r) => enqueue(() => paramsOfRun(r.run_id)).catch(() => {})));
  if (k.startsWith('m:')) await Promise.all(runs.map((r) => enqueue(() => seriesOf(r.run_id)).catch(() => {})));
}

function sortValue(r, key, now) {
  switch (key) {
    case 'name': return r.name ?? r.run_id;
    case 'experiment': return r.experiment ?? '';
    case 'status': return r.status;
    case 'tags': return (r.tags ?? []).join(',');
    case 'created_at': return r.created_at;
    case 'duration': return runDuration(r, now);
    default:
      if (key.startsWith('p:')) return paramsDone.get(r.run_id)?.[key.slice(2)];
      if (key.startsWith('m:')) return summaryValue(r.run_id, key.slice(2));
      return undefined;
  }
}

let brushed = null; // run ids the parallel view's brushes hold, or null

function displayRows(withBrush = true) {
  let rows = runs;
  if (withBrush && brushed && state.view === 'parallel') rows = rows.filter((r) => brushed.has(r.run_id));
  const q = state.find.trim().toLowerCase();
  if (q) {
    rows = rows.filter((r) => [r.name, r.run_id, r.experiment, r.status, r.description, ...(r.tags ?? [])].some((v) => v && String(v).toLowerCase().includes(q)));
  }
  if (state.sort) {
    const [key, dir] = state.sort.split(':');
    const now = Date.now();
    const sign = dir === 'desc' ? -1 : 1;
    rows = rows.map((r) => ({ r, v: sortValue(r, key, now) }));
    rows.sort((a, b) => {
      // Unknown values sort last either way.
      const ua = a.v === undefined || a.v === null || Number.isNaN(a.v), ub = b.v === undefined || b.v === null || Number.isNaN(b.v);
      if (ua || ub) return ua === ub ? 0 : ua ? 1 : -1;
      if (typeof a.v === 'number' && typeof b.v === 'number') return sign * (a.v - b.v);
      return sign * String(a.v).localeCompare(String(b.v), undefined, { numeric: true });
    }).forEach((x, i, arr) => { arr[i] = x.r; });
  }
  return rows;
}

function paintTable() {
  if (parallel) {
    const list = displayRows(false);
    const ids = list.map((r) => r.run_id).join(',');
    if (ids !== paintTable.sent) {
      paintTable.sent = ids;
      parallel.update(list.map((r) => ({ ...r, params: paramsDone.get(r.run_id) })));
    }
  }
  const [key, dir] = state.sort.split(':');
  table.setColumns(state.pc, state.mc);
  table.setRows(displayRows(), sel, hidden, { key, dir });
  $('#run-count').textContent = `${runs.length} run${runs.length === 1 ? '' : 's'}${sel.size ? `, ${sel.size} selected` : ''}`;
}

// ---- charts ------------------------------------------------------------------

const charts = new ChartsView($('#charts'), {
  get source() { return source; },
  state,
  lib,
  colorOf,
  runOf: (id) => runById.get(id),
  dark,
  describe,
  onZoom(z) {
    state.zoom = z;
    writeURL();
    charts.refresh();
  },
  onError(e, p) { showError(e, `${p.metric} ${contextLabel(p.context)}`); },
  onDrawn: checkReady,
  xLine: (id, name) => xLines.get(`${id}\u0000${name}`) ?? null,
  prepare,
  groupBy,
  groupRun: (id) => ({ ...runById.get(id), params: paramsDone.get(id) }),
  expanded: (g) => state.gx.includes(g),
  toggleGroup(g) {
    state.gx = state.gx.includes(g) ? state.gx.filter((x) => x !== g) : [...state.gx, g];
    writeURL();
    charts.restyle();
  },
});

/** The grouping of the state: null, or {kind, name} for lib/group.js. */
function groupBy() {
  const g = state.group;
  if (!g) return null;
  if (g === 'experiment') return { kind: 'experiment' };
  const i = g.indexOf(':');
  const kind = i < 0 ? g : g.slice(0, i);
  if (kind !== 'tag' && kind !== 'param') return null;
  return { kind, name: i < 0 ? undefined : g.slice(i + 1) };
}

// The x lines of "x by another metric": run id + metric name -> points.
const xLines = new Map();
const xLoading = new Map();
/** Loads what drawing the runs needs beyond their points: x metrics, parameters to group by. */
function prepare(ids) {
  const jobs = [];
  if (state.x.startsWith('m:')) {
    const name = state.x.slice(2);
    for (const id of ids) {
      const k = `${id}\u0000${name}`;
      if (xLines.has(k)) continue;
      if (!xLoading.has(k)) {
        xLoading.set(k, seriesOf(id).then(async (list) => {
          const s = list.find((x) => x.name === name && x.context === '{}') ?? list.find((x) => x.name === name);
          xLines.set(k, s ? (await source.read([s.series_id], { maxPoints: 1000 }))[0] : null);
        }).finally(() => xLoading.delete(k)));
      }
      jobs.push(xLoading.get(k));
    }
  }
  if (groupBy()?.kind === 'param') for (const id of ids) jobs.push(paramsOfRun(id));
  return Promise.all(jobs);
}

function drawnRuns() {
  return (state.sel ?? []).filter((id) => runById.has(id) && !hidden.has(id));
}

let panelsGen = 0;
/** Recomputes the panels from the series of the drawn runs. */
async function updatePanels() {
  const gen = ++panelsGen;
  const ids = drawnRuns();
  const lists = await Promise.all(ids.map((id) => seriesOf(id).catch((e) => { showError(e, `series of ${runById.get(id)?.name ?? id}`); return []; })));
  if (gen !== panelsGen) return;
  // The page's starter may be sending the first panels' reads from the
  // same answers: app.js asks for its panels once it has, and takes them.
  await window.kv0early?.points;
  if (gen !== panelsGen) return;
  // first.js builds the panels, as the page's starter does to predict the first reads.
  const specs = panelSpecs(ids, lists, state.q);
  knownMetrics = [...new Set(lists.flat().map((s) => s.name))].sort();
  fillXOptions();
  fillGroupOptions();
  charts.setPanels(specs);
  $('#panel-count').textContent = `${specs.length} panel${specs.length === 1 ? '' : 's'}`;
  started = true;
  checkReady();
}

function checkReady() {
  if (!started || readyDone) return;
  const ps = charts.order;
  if (ps.some((p) => !p.seen)) return;
  if (ps.some((p) => p.visible && p.series.length && (p.reading || (!p.drawn && !p.error)))) return;
  readyDone = true;
  performance.mark('kv0:ready');
  window.kv0early?.clear();
  resolveReady(true);
}

function selectionChanged() {
  state.sel = [...sel];
  state.hide = [...hidden].filter((id) => sel.has(id));
  writeURL();
  paintTable();
  updatePanels();
  if (state.view === 'compare') renderOther();
}

// ---- controls ------------------------------------------------------------------

let knownMetrics = [];
function fillXOptions() {
  const x = $('#x-axis');
  const want = ['step', 'wall', 'rel', ...knownMetrics.map((m) => `m:${m}`)];
  if (!want.includes(state.x)) want.push(state.x);
  const have = [...x.options].map((o) => o.value);
  if (want.join() !== have.join()) {
    x.innerHTML = want.map((v) => `<option value="${esc(v)}">${esc(v === 'step' ? 'step' : v === 'wall' ? 'wall time' : v === 'rel' ? 'time since start' : 'by ' + v.slice(2))}</option>`).join('');
  }
  x.value = state.x;
}

function bindControls() {
  const q = $('#panel-filter');
  q.value = state.q;
  let qt = 0;
  q.addEventListener('input', () => {
    clearTimeout(qt);
    qt = setTimeout(() => { state.q = q.value; writeURL(); updatePanels(); }, 120);
  });
  const s = $('#smoothing'), sv = $('#smoothing-value');
  s.value = String(state.s);
  sv.textContent = state.s.toFixed(3);
  s.addEventListener('input', () => {
    state.s = Math.min(0.999, Math.max(0, Number(s.value)));
    sv.textContent = state.s.toFixed(3);
    writeURL();
    charts.restyle();
  });
  const x = $('#x-axis');
  fillXOptions();
  x.addEventListener('change', () => { state.x = x.value; state.zoom = null; writeURL(); charts.refresh(); });
  x.value = state.x;
  const y = $('#y-log');
  y.checked = state.y === 'log';
  y.addEventListener('change', () => { state.y = y.checked ? 'log' : 'lin'; writeURL(); charts.restyle(); });
  const rb = $('#robust');
  rb.checked = state.robust;
  rb.addEventListener('change', () => { state.robust = rb.checked; writeURL(); charts.restyle(); });
  const grp = $('#group-by'), band = $('#band');
  grp.addEventListener('change', () => { state.group = grp.value; state.gx = []; writeURL(); fillGroupOptions(); charts.restyle(); });
  band.value = state.band;
  band.addEventListener('change', () => { state.band = band.value; writeURL(); charts.restyle(); });
  fillGroupOptions();
  $('#zoom-reset').addEventListener('click', () => { state.zoom = null; writeURL(); charts.refresh(); });

  const find = $('#search');
  find.value = state.find;
  find.addEventListener('input', () => { state.find = find.value; writeURL(); paintTable(); });

  for (const [id, key] of [['#f-exp', 'exp'], ['#f-status', 'status'], ['#f-archived', 'archived']]) {
    const el = $(id);
    el.value = state[key];
    el.addEventListener('change', () => { state[key] = el.value; writeURL(); reloadRuns(); });
  }
  const tag = $('#f-tag');
  tag.addEventListener('change', () => {
    if (tag.value && !state.tags.includes(tag.value)) { state.tags.push(tag.value); writeURL(); reloadRuns(); }
    tag.value = '';
  });
  const pf = $('#f-param');
  pf.addEventListener('keydown', (e) => {
    if (e.key !== 'Enter' || !pf.value.trim()) return;
    try {
      parseParamFilter(pf.value);
      state.params.push(pf.value.trim());
      pf.value = '';
      pf.setCustomValidity('');
      writeURL();
      reloadRuns();
    } catch (err) {
      pf.setCustomValidity(err.message);
      pf.reportValidity();
    }
  });
  $('#filters').addEventListener('click', (e) => {
    const chip = e.target.closest('[data-chip]');
    if (!chip) return;
    const [kind, i] = chip.dataset.chip.split(':');
    if (kind === 'tag') state.tags.splice(Number(i), 1);
    else state.params.splice(Number(i), 1);
    writeURL();
    reloadRuns();
  });
  // Columns: parameters and summaries.
  $('#add-pc').addEventListener('click', () => {
    const v = $('#pc-key').value.trim();
    if (v && !state.pc.includes(v)) { state.pc.push(v); writeURL(); paintTable(); renderColumnChips(); }
    $('#pc-key').value = '';
  });
  $('#add-mc').addEventListener('click', () => {
    const m = $('#mc-metric').value, agg = $('#mc-agg').value;
    if (!m) return;
    const spec = `${agg}:${m}`;
    if (!state.mc.includes(spec)) { state.mc.push(spec); writeURL(); paintTable(); renderColumnChips(); }
  });
  $('#columns').addEventListener('toggle', fillColumnChoices);
  $('#column-chips').addEventListener('click', (e) => {
    const c = e.target.closest('[data-col]');
    if (!c) return;
    const [kind, ...rest] = c.dataset.col.split(':');
    const v = rest.join(':');
    if (kind === 'p') state.pc = state.pc.filter((x) => x !== v);
    else state.mc = state.mc.filter((x) => x !== v);
    writeURL(); paintTable(); renderColumnChips();
  });
  renderColumnChips();

  document.addEventListener('keydown', (e) => {
    if (e.target.closest('input, select, textarea')) { if (e.key === 'Escape') e.target.blur(); return; }
    if (e.key === '/') { e.preventDefault(); find.focus(); }
    else if (e.key === 'f') { e.preventDefault(); q.focus(); }
    else if (e.key === 'Escape' && state.zoom) { state.zoom = null; writeURL(); charts.refresh(); }
  });
  darkQuery.addEventListener('change', () => { colorCache.clear(); paintTable(); charts.restyle(); });
  document.addEventListener('visibilitychange', () => onVisibility());
}

/** The grouping choices: experiment, each known tag, the parameters of the first drawn run. */
function fillGroupOptions() {
  const grp = $('#group-by');
  const first = drawnRuns()[0];
  const keys = first && paramsDone.get(first) ? Object.keys(paramsDone.get(first)) : [];
  // Off the first chart's path: asked for once the panels on screen are drawn.
  if (first && !paramsDone.has(first) && source) ready.then(() => paramsOfRun(first)).then(fillGroupOptions, () => {});
  const opts = [['', 'no grouping'], ['experiment', 'group by experiment'], ...[...knownTags].sort().map((t) => [`tag:${t}`, `group by tag ${t}`]), ...keys.map((k) => [`param:${k}`, `group by ${k}`])];
  if (state.group && !opts.some(([v]) => v === state.group)) opts.push([state.group, `group by ${state.group}`]);
  const html = opts.map(([v, l]) => `<option value="${esc(v)}">${esc(l)}</option>`).join('');
  if (grp.innerHTML !== html) grp.innerHTML = html;
  grp.value = state.group;
  $('#band').hidden = !state.group;
}

function renderColumnChips() {
  $('#column-chips').innerHTML = [...state.pc.map((k) => `<button class="chip" data-col="p:${esc(k)}" title="remove">${esc(k)} ×</button>`),
    ...state.mc.map((m) => { const s = parseSummary(m); return `<button class="chip" data-col="m:${esc(m)}" title="remove">${esc(s ? `${s.name} ${contextLabel(s.context)} ${s.agg}` : m)} ×</button>`; })].join('');
}

async function fillColumnChoices() {
  // Keys and metrics of the first selected (or listed) run.
  const id = state.sel?.[0] ?? runs[0]?.run_id;
  if (!id) return;
  try {
    const [p, s] = await Promise.all([paramsOfRun(id), seriesOf(id)]);
    $('#pc-keys').innerHTML = Object.keys(p).map((k) => `<option value="${esc(k)}">`).join('');
    $('#mc-metric').innerHTML = s.map((x) => `<option value="${esc(`${x.name}:${x.context}`)}">${esc(`${x.name} ${contextLabel(x.context)}`)}</option>`).join('');
  } catch (e) { showError(e, 'columns'); }
}

function renderFilters() {
  const opt = (v, l = v) => `<option value="${esc(v)}">${esc(l)}</option>`;
  const exp = $('#f-exp');
  exp.innerHTML = opt('', 'any experiment') + [...knownExperiments].sort().map((e) => opt(e)).join('');
  exp.value = state.exp;
  const tag = $('#f-tag');
  tag.innerHTML = opt('', '+ tag') + [...knownTags].sort().filter((t) => !state.tags.includes(t)).map((t) => opt(t)).join('');
  $('#f-status').value = state.status;
  $('#f-archived').value = state.archived;
  $('#filter-chips').innerHTML = [...state.tags.map((t, i) => `<button class="chip" data-chip="tag:${i}" title="remove">tag ${esc(t)} ×</button>`),
    ...state.params.map((t, i) => `<button class="chip" data-chip="param:${i}" title="remove">${esc(t)} ×</button>`)].join('');
}

function runFilter() {
  const f = {};
  if (state.exp) f.experiment = state.exp;
  if (state.status) f.status = state.status;
  if (state.tags.length) f.tags = state.tags;
  if (state.archived) f.archived = state.archived === 'true';
  if (state.params.length) f.params = state.params.map(parseParamFilter);
  return f;
}

function setRuns(list) {
  runs = list;
  runById = new Map(list.map((r) => [r.run_id, r]));
  for (const r of list) {
    if (r.experiment) knownExperiments.add(r.experiment);
    for (const t of r.tags ?? []) knownTags.add(t);
  }
}

async function reloadRuns() {
  try {
    setRuns(await source.runs(runFilter()));
  } catch (e) {
    showError(e, 'run filter');
  }
  renderFilters();
  paintTable();
  updatePanels();
}

// ---- live ----------------------------------------------------------------------

let polling = false, liveTimer = 0, liveState = 'idle', liveError = null;
function liveStatus() {
  const el = $('#live');
  const s = document.hidden ? 'paused' : liveState;
  el.dataset.state = s;
  el.textContent = s === 'live' ? 'live' : s === 'paused' ? 'paused' : s === 'offline' ? 'offline' : '…';
  el.title = s === 'offline' ? `polling failed: ${liveError?.message ?? ''}` : s === 'paused' ? 'polling paused while the tab is hidden' : `polling the repository's versions every ${POLL_MS / 1000} s`;
}

// api mode polls /api/v1/versions (one request); direct mode uses the wasm
// module's repo.watch, whose quiet poll costs three small requests (asking
// its versions() would probe every table's manifests). Either way a change
// goes through applyVersions, one at a time.
async function poll() {
  if (polling || document.hidden || !source || source.watch) return;
  polling = true;
  try {
    await applyVersions(await source.versions());
    liveState = 'live';
  } catch (e) {
    liveState = 'offline';
    liveError = e;
  } finally {
    polling = false;
    liveStatus();
  }
}

let applying = null, pendingVersions = null;
/** Brings the page up to versions v: runs, series lists, new points. */
async function applyVersions(v) {
  if (applying) { pendingVersions = v; return applying; }
  applying = (async () => {
    for (let next = v; next; next = pendingVersions, pendingVersions = null) {
      const prev = lastVersions;
      lastVersions = next;
      if (!prev) continue;
      if (next.runs !== prev.runs || next.params !== prev.params) {
        setRuns(await source.runs(runFilter()));
        if (next.params !== prev.params) { paramsCache.clear(); paramsDone.clear(); }
        renderFilters();
        paintTable();
      }
      if (next.series !== prev.series) {
        const drawn = new Set(drawnRuns());
        for (const id of [...seriesCache.keys()]) { seriesCache.delete(id); if (!drawn.has(id)) seriesDone.delete(id); }
        await updatePanels();
      }
      if (next.metrics !== prev.metrics) await appendPoints();
    }
  })().finally(() => { applying = null; });
  return applying;
}

let stopWatch = null;
function watchDirect() {
  if (stopWatch || document.hidden) return;
  stopWatch = source.watch((change) => {
    applyVersions(change.versions).catch((e) => { liveState = 'offline'; liveError = e; liveStatus(); });
  }, {
    interval: POLL_MS,
    onPoll: () => { liveState = 'live'; liveStatus(); },
    onError: (e) => { liveState = 'offline'; liveError = e; liveStatus(); },
  });
}
function onVisibility() {
  liveStatus();
  if (!source?.watch) { if (!document.hidden) poll(); return; }
  if (document.hidden) { stopWatch?.(); stopWatch = null; } else watchDirect();
}

/** Reads the points past what each drawn panel holds and appends them. */
async function appendPoints() {
  const held = new Map(); // series id -> last step held (full-range panels)
  for (const p of charts.order) {
    if (p.rkey !== 'all') continue;
    for (const [id, d] of p.data) held.set(id, d.steps.length ? d.steps[d.steps.length - 1] : -1);
  }
  const ids = [...held.keys()];
  const stats = ids.length ? await source.stats(ids) : [];
  const grown = new Map(); // from step -> ids
  ids.forEach((id, i) => {
    const s = stats[i];
    if (s && s.last_step > held.get(id)) {
      const from = held.get(id) + 1;
      if (!grown.has(from)) grown.set(from, []);
      grown.get(from).push(id);
    }
  });
  // Summaries of the table follow the statistics.
  ids.forEach((id, i) => {
    for (const list of seriesDone.values()) for (const s of list) if (s.series_id === id && stats[i]) s.stats = stats[i];
  });
  for (const [from, group] of grown) {
    const pts = await source.read(group, { maxPoints: MAX_LIVE, fromStep: from });
    pts.forEach((d) => charts.append(d.series_id, d));
  }
  if (state.mc.length) table.paint(true);
}
const MAX_LIVE = 1000;

function startLive() {
  liveState = 'live';
  liveStatus();
  if (source.watch) { watchDirect(); return; }
  clearInterval(liveTimer);
  liveTimer = setInterval(poll, POLL_MS);
}

// ---- the token prompt -------------------------------------------------------------

function askToken(where, reason) {
  return new Promise((resolve) => {
    const d = $('#token-dialog');
    $('#token-where').textContent = where;
    $('#token-why').textContent = reason === 'wrong' ? 'The token was refused; enter the right one.' : reason === 'signer' ? 'The sign server needs its token (kv0 sign-server --token-file).' : 'The server needs its token (kv0 serve --token-file).';
    const input = $('#token-input');
    input.value = '';
    d.showModal();
    d.addEventListener('close', () => resolve(input.value.trim()), { once: true });
  });
}

// ---- navigation (views) ----------------------------------------------------------

/** Applies a change of state from a view (ctx.navigate) or a control. */
function navigate(change) {
  const { sel: newSel, ...rest } = change;
  Object.assign(state, rest);
  if (newSel) {
    sel.clear();
    for (const id of newSel) sel.add(id);
    selectionChanged();
  }
  writeURL();
  showView();
}

function showView() {
  for (const b of document.querySelectorAll('#tabs [data-view]')) b.setAttribute('aria-selected', String(b.dataset.view === state.view));
  $('#charts-view').hidden = state.view !== 'charts';
  $('#other-view').hidden = state.view === 'charts';
  if (state.view !== 'charts') renderOther();
}

const viewCtx = () => ({ source, colorOf, navigate, dark: dark() });
let parallel = null;

async function renderOther() {
  const el = $('#other-view');
  parallel?.destroy();
  parallel = null;
  paintTable.sent = undefined;
  if (state.view !== 'parallel' && brushed) { brushed = null; paintTable(); }
  el.className = '';
  el.replaceChildren();
  if (!source) return;
  try {
    if (state.view === 'run') {
      const id = state.run || state.sel?.[0];
      if (!id) { el.innerHTML = '<p class="empty">Open a run from the table (click its name, or Enter on its row).</p>'; return; }
      await renderRunPage(el, viewCtx(), id);
    } else if (state.view === 'compare') {
      await renderCompare(el, viewCtx(), (state.sel ?? []).filter((id) => runById.has(id)));
    } else if (state.view === 'parallel') {
      await renderParallelView(el);
    }
  } catch (e) {
    showError(e, `the ${state.view} view`);
  }
}

/** The parallel-coordinates view with its axis choices (pp, pm in the URL). */
async function renderParallelView(el) {
  const first = (state.sel ?? [])[0] ?? runs[0]?.run_id;
  let keys = [], metrics = [];
  if (first) {
    const [p, s] = await Promise.all([paramsOfRun(first).catch(() => ({})), seriesOf(first).catch(() => [])]);
    keys = Object.keys(p);
    metrics = s.map((x) => `${x.name}:${x.context}`);
    if (!state.pp.length) state.pp = keys.filter((k) => typeof p[k] === 'number' || typeof p[k] === 'string' || typeof p[k] === 'boolean').slice(0, 6);
    if (!state.pm && metrics.length) {
      const pick = s.find((x) => /loss/.test(x.name)) ?? s[0];
      state.pm = `last:${pick.name}:${pick.context}`;
    }
    writeURL();
  }
  const bar = document.createElement('div');
  bar.className = 'toolbar';
  const pm = parseSummary(state.pm);
  bar.innerHTML = `<label>parameters <input id="pp-keys" list="pp-list" value="${esc(state.pp.join(','))}" size="50" aria-label="parameter axes, comma separated"></label><datalist id="pp-list">${keys.map((k) => `<option value="${esc(k)}">`).join('')}</datalist>` +
    `<label>metric <select id="pm-metric" aria-label="metric axis"><option value="">none</option>${metrics.map((m) => `<option value="${esc(m)}"${pm && `${pm.name}:${pm.context}` === m ? ' selected' : ''}>${esc(m.replace(/:\{\}$/, ''))}</option>`).join('')}</select></label>` +
    `<select id="pm-agg" aria-label="metric statistic">${['last', 'min', 'max'].map((a) => `<option${pm?.agg === a ? ' selected' : ''}>${a}</option>`).join('')}</select><span class="count" id="brush-count"></span>`;
  const host = document.createElement('div');
  el.append(bar, host);
  const rerender = () => { state.pp = $('#pp-keys').value.split(',').map((x) => x.trim()).filter(Boolean); const m = $('#pm-metric').value; state.pm = m ? `${$('#pm-agg').value}:${m}` : ''; writeURL(); renderOther(); };
  bar.querySelector('#pp-keys').addEventListener('change', rerender);
  bar.querySelector('#pm-metric').addEventListener('change', rerender);
  bar.querySelector('#pm-agg').addEventListener('change', rerender);
  const m = parseSummary(state.pm);
  parallel = renderParallel(host, viewCtx(), {
    runs: displayRows(false).map((r) => ({ ...r, params: paramsDone.get(r.run_id) })),
    params: state.pp,
    metric: m ? { name: m.name, context: m.context, stat: m.agg } : null,
    onBrush(ids) {
      brushed = ids ? new Set(ids) : null;
      const c = $('#brush-count');
      if (c) c.textContent = ids ? `${ids.length} runs in the brushes` : '';
      paintTable();
    },
  });
}

// ---- start -----------------------------------------------------------------------

async function main() {
  bindControls();
  for (const b of document.querySelectorAll('#tabs [data-view]')) b.addEventListener('click', () => navigate({ view: b.dataset.view }));
  performance.mark('kv0:start');
  let filter = null;
  try { filter = runFilter(); } catch { /* a bad param filter: listing the runs below says so */ }
  try {
    source = await openSource(params, {
      token: askToken,
      runs: filter,
      // The series lists of the runs the URL selects go with the first
      // requests (a first visit selects once the runs are listed).
      early(src) {
        source = src;
        for (const id of (state.sel ?? []).filter((x) => !state.hide.includes(x))) seriesOf(id).catch(() => {});
      },
    });
    performance.mark('kv0:source');
  } catch (e) {
    showError(e, 'opening the source');
    $('#source').textContent = 'no source';
    rejectReady(e);
    return;
  }
  $('#source').textContent = `${source.kind === 'api' ? 'API' : 'direct'} · ${source.where}`;
  $('#source').title = source.kind === 'api' ? 'reading through kv0\'s HTTP API' : 'reading the repository with the wasm module';
  try {
    // api mode has its versions from opening; direct mode asks for them
    // after the first draw (they cost a probe of every table).
    lastVersions = source.firstVersions ?? null;
    setRuns(await (source.firstRuns ?? source.runs(runFilter())));
    performance.mark('kv0:runs');
  } catch (e) {
    showError(e, 'listing runs');
    rejectReady(e);
    return;
  }
  if (state.sel === null) {
    // A first visit: the 10 most recently created runs.
    state.sel = newestRuns(runs);
    writeURL();
  }
  for (const id of state.sel) sel.add(id);
  for (const id of state.hide) hidden.add(id);
  showView();
  // The panels (and the reads of those on screen) before the table is
  // painted: in api mode the series lists were asked for with the runs and
  // come with them; the wasm module reads them one run at a time, so in
  // direct mode the table is painted while they come unless they are in by
  // the next task.
  const panels = updatePanels();
  if (source.kind === 'api') await panels.catch(() => {});
  else await Promise.race([panels, new Promise((resolve) => setTimeout(resolve, 0))]);
  renderFilters();
  paintTable();
  if (state.sort) sortNeeds().then(paintTable);
  await panels;
  if (!lastVersions) {
    try { lastVersions = await source.versions(); } catch (e) { liveError = e; }
  }
  startLive();
}

window.kv0dash = {
  ready,
  runs: () => table.rows.map((r) => ({ run_id: r.run_id, name: r.name ?? '', selected: sel.has(r.run_id) })),
  panels: () => (state.view === 'charts' ? charts.order.map((p) => ({ metric: p.metric, context: p.context, drawn: p.drawn })) : []),
  charts: () => (state.view === 'charts' ? charts.order.filter((p) => p.drawn).map((p) => charts.chartOf(p)) : []),
};

main().catch((e) => { showError(e); rejectReady(e); });
