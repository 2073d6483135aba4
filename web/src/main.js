// kv0's dashboard: the entry point. It opens the source the URL names
// (source.js), lists the runs (table.js), draws the selected runs' metrics
// (charts.js), follows new versions while the tab is visible, and keeps its
// state in the URL (state.js). window.kv0dash is the hook tests use.

import 'uplot/dist/uPlot.min.css';
import './style.css';
import { openSource, describeError, parseParamFilter, sourceError } from './source.js';
import { parseState, stateQuery } from './state.js';
import { RunsTable, parseSummary, runDuration } from './table.js';
import { ChartsView, panelMatcher, contextLabel } from './charts.js';
import * as interim from './interim.js';

const lib = { ...interim };

const $ = (sel) => document.querySelector(sel);
const esc = (s) => String(s ?? '').replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' }[c]));
const POLL_MS = 2000;

const params = new URLSearchParams(location.search);
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

function seriesOf(id) {
  if (!seriesCache.has(id)) {
    const p = source.series(id).then((s) => { seriesDone.set(id, s); return s; });
    p.catch(() => seriesCache.delete(id));
    seriesCache.set(id, p);
  }
  return seriesCache.get(id);
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
  if (!repaint) repaint = requestAnimationFrame(() => { repaint = 0; table.paint(); });
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

function displayRows() {
  let rows = runs;
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
  xLine: () => null,
});

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
  const byKey = new Map();
  ids.forEach((id, i) => {
    for (const s of lists[i]) {
      const key = `${s.name}\u0000${s.context}`;
      if (!byKey.has(key)) byKey.set(key, { metric: s.name, context: s.context, series: [] });
      byKey.get(key).series.push({ run_id: id, series_id: s.series_id, stats: s.stats });
    }
  });
  const match = panelMatcher(state.q);
  const specs = [...byKey.values()]
    .filter((s) => match(`${s.metric} ${contextLabel(s.context)}`) || match(s.metric))
    .sort((a, b) => (a.metric < b.metric ? -1 : a.metric > b.metric ? 1 : a.context < b.context ? -1 : a.context > b.context ? 1 : 0));
  knownMetrics = [...new Set([...byKey.values()].map((s) => s.metric))].sort();
  fillXOptions();
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
  resolveReady(true);
}

function selectionChanged() {
  state.sel = [...sel];
  state.hide = [...hidden].filter((id) => sel.has(id));
  writeURL();
  paintTable();
  updatePanels();
}

// ---- controls ------------------------------------------------------------------

let knownMetrics = [];
function fillXOptions() {
  const x = $('#x-axis');
  const want = ['step', 'wall', 'rel', ...(lib.alignByStep ? knownMetrics.map((m) => `m:${m}`) : [])];
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
  const y = $('#y-log');
  y.checked = state.y === 'log';
  y.addEventListener('change', () => { state.y = y.checked ? 'log' : 'lin'; writeURL(); charts.restyle(); });
  const rb = $('#robust');
  rb.checked = state.robust;
  rb.addEventListener('change', () => { state.robust = rb.checked; writeURL(); charts.restyle(); });
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
  document.addEventListener('visibilitychange', () => { liveStatus(); if (!document.hidden) poll(); });
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

async function poll() {
  if (polling || document.hidden || !source) return;
  polling = true;
  try {
    const v = await source.versions();
    const prev = lastVersions;
    lastVersions = v;
    liveState = 'live';
    if (prev && (v.runs !== prev.runs || v.params !== prev.params)) {
      setRuns(await source.runs(runFilter()));
      for (const id of paramsDone.keys()) paramsCache.delete(id);
      paramsDone.clear();
      renderFilters();
      paintTable();
    }
    if (prev && v.series !== prev.series) {
      for (const id of drawnRuns()) seriesCache.delete(id);
      for (const id of [...seriesDone.keys()]) if (!drawnRuns().includes(id)) { seriesCache.delete(id); seriesDone.delete(id); }
      await updatePanels();
    }
    if (prev && v.metrics !== prev.metrics) await appendPoints();
  } catch (e) {
    liveState = 'offline';
    liveError = e;
  } finally {
    polling = false;
    liveStatus();
  }
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
  if (state.mc.length) table.paint();
}
const MAX_LIVE = 1000;

function startLive() {
  liveState = 'live';
  liveStatus();
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

function navigate(change) {
  Object.assign(state, change);
  writeURL();
  showView();
}

function showView() {
  for (const b of document.querySelectorAll('#tabs [data-view]')) b.setAttribute('aria-selected', String(b.dataset.view === state.view));
  $('#charts-view').hidden = state.view !== 'charts';
  $('#other-view').hidden = state.view === 'charts';
  if (state.view !== 'charts') renderOther();
}

async function renderOther() {
  const el = $('#other-view');
  el.innerHTML = `<p class="empty">The ${esc(state.view)} view is not part of this build yet.</p>`;
}

// ---- start -----------------------------------------------------------------------

async function main() {
  bindControls();
  for (const b of document.querySelectorAll('#tabs [data-view]')) b.addEventListener('click', () => navigate({ view: b.dataset.view }));
  $('#token-form').addEventListener('submit', () => {});
  try {
    source = await openSource(params, { token: askToken });
  } catch (e) {
    showError(e, 'opening the source');
    $('#source').textContent = 'no source';
    rejectReady(e);
    return;
  }
  $('#source').textContent = `${source.kind === 'api' ? 'API' : 'direct'} · ${source.where}`;
  $('#source').title = source.kind === 'api' ? 'reading through kv0\'s HTTP API' : 'reading the repository with the wasm module';
  try {
    lastVersions = await source.versions();
    setRuns(await source.runs(runFilter()));
  } catch (e) {
    showError(e, 'listing runs');
    rejectReady(e);
    return;
  }
  if (state.sel === null) {
    // A first visit: the 10 most recently created runs.
    state.sel = [...runs].sort((a, b) => (a.created_at < b.created_at ? 1 : a.created_at > b.created_at ? -1 : 0)).slice(0, 10).map((r) => r.run_id);
    writeURL();
  }
  for (const id of state.sel) sel.add(id);
  for (const id of state.hide) hidden.add(id);
  renderFilters();
  paintTable();
  if (state.sort) sortNeeds().then(paintTable);
  showView();
  await updatePanels();
  startLive();
}

window.kv0dash = {
  ready,
  runs: () => table.rows.map((r) => ({ run_id: r.run_id, name: r.name ?? '', selected: sel.has(r.run_id) })),
  panels: () => (state.view === 'charts' ? charts.order.map((p) => ({ metric: p.metric, context: p.context, drawn: p.drawn })) : []),
  charts: () => (state.view === 'charts' ? charts.order.filter((p) => p.drawn).map((p) => charts.chartOf(p)) : []),
};

main().catch((e) => { showError(e); rejectReady(e); });
export { sourceError };
