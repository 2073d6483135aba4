// The run page: a run's description, tags, target, parameter tree, every
// series with its statistics, and the records tables that name the run.

import { h, fmtValue, errorText, renderGuard, limiter, statNumber } from './dom.js';

// ---------------------------------------------------------------- models

function isPlainObject(v) {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

// naturalCompare orders keys with their digit runs as numbers (layer2
// before layer10), deterministically (no locale).
export function naturalCompare(a, b) {
  const re = /(\d+)|(\D+)/g;
  const xa = a.match(re) ?? [];
  const xb = b.match(re) ?? [];
  for (let i = 0; i < Math.min(xa.length, xb.length); i++) {
    const p = xa[i];
    const q = xb[i];
    if (p === q) continue;
    const dp = /^\d/.test(p);
    const dq = /^\d/.test(q);
    if (dp && dq) {
      const d = Number(p) - Number(q);
      if (d !== 0) return d;
      return p.length - q.length; // 02 after 2
    }
    return p < q ? -1 : 1;
  }
  return xa.length - xb.length;
}

/**
 * flattenParams turns a run's parameters into sorted rows of dotted keys:
 * the object params(id) returns ({"optimizer.lr": 0.01}, values that may
 * themselves be objects) or a nested tree ({optimizer: {lr: 0.01}}) both
 * give [{key: 'optimizer.lr', value: 0.01}]. Objects are walked into;
 * arrays, scalars and empty objects are values. When two spellings name
 * one key, the first in the object's order stays. depth is the number of
 * dots (for indenting a tree).
 *
 * @param {object} params
 * @returns {{key: string, value: unknown, depth: number}[]}
 */
export function flattenParams(params) {
  const out = [];
  const seen = new Set();
  const walk = (obj, prefix) => {
    for (const [k, v] of Object.entries(obj)) {
      const key = prefix + k;
      if (isPlainObject(v) && Object.keys(v).length > 0) walk(v, key + '.');
      else if (!seen.has(key)) {
        seen.add(key);
        out.push({ key, value: v, depth: key.split('.').length - 1 });
      }
    }
  };
  if (isPlainObject(params)) walk(params, '');
  return out.sort((a, b) => naturalCompare(a.key, b.key));
}

/**
 * recordsModel lays records out as a table: when every record's data is
 * an object, one column per key (in first-seen order, at most 16; the
 * rest in a last "…" column as JSON), else one "data" column of JSON.
 *
 * @param {{item_id: string, data: unknown, created_at: string}[]} records
 * @returns {{columns: string[], rows: {item_id: string, created_at: string, cells: string[]}[]}}
 */
export function recordsModel(records) {
  const objects = records.length > 0 && records.every((r) => isPlainObject(r.data));
  if (!objects) {
    return { columns: ['data'], rows: records.map((r) => ({ item_id: r.item_id, created_at: r.created_at, cells: [JSON.stringify(r.data)] })) };
  }
  const keys = [];
  const seen = new Set();
  for (const r of records) for (const k of Object.keys(r.data)) if (!seen.has(k)) seen.add(k), keys.push(k);
  const shown = keys.slice(0, 16);
  const more = keys.length > 16;
  const columns = more ? [...shown, '…'] : shown;
  const rows = records.map((r) => {
    const cells = shown.map((k) => (Object.hasOwn(r.data, k) ? fmtValue(r.data[k]) : ''));
    if (more) {
      const rest = Object.fromEntries(Object.entries(r.data).filter(([k]) => !shown.includes(k)));
      cells.push(Object.keys(rest).length ? JSON.stringify(rest) : '');
    }
    return { item_id: r.item_id, created_at: r.created_at, cells };
  });
  return { columns, rows };
}

// ---------------------------------------------------------------- the view

function when(t) {
  if (!t) return '';
  const d = new Date(t);
  return Number.isNaN(d.getTime()) ? String(t) : d.toISOString().replace('T', ' ').replace(/\.\d+Z$/, 'Z').replace(/Z$/, ' UTC');
}

function duration(a, b) {
  const ms = new Date(b).getTime() - new Date(a).getTime();
  if (!Number.isFinite(ms) || ms < 0) return '';
  const s = Math.round(ms / 1000);
  if (s < 60) return `${s} s`;
  if (s < 3600) return `${Math.floor(s / 60)} min ${s % 60} s`;
  return `${Math.floor(s / 3600)} h ${Math.floor((s % 3600) / 60)} min`;
}

function section(title, ...body) {
  const id = `kv0v-${title.toLowerCase().replace(/[^a-z0-9]+/g, '-')}`;
  return h('section', { class: 'kv0v-section', 'aria-labelledby': id }, h('h3', { id }, title), ...body);
}

function note(text, cls = 'kv0v-empty') {
  return h('p', { class: cls }, text);
}

function filterBox(label, rowsOf) {
  // A text filter over a table's rows (by their data-key).
  return h('input', {
    type: 'search',
    class: 'kv0v-filter',
    placeholder: label,
    'aria-label': label,
    oninput: (ev) => {
      const q = ev.target.value.trim().toLowerCase();
      for (const tr of rowsOf()) tr.hidden = q !== '' && !tr.dataset.key.toLowerCase().includes(q);
    },
  });
}

function paramsTable(params) {
  const rows = flattenParams(params);
  if (rows.length === 0) return note('No parameters.');
  const body = h(
    'tbody',
    null,
    rows.map((r) => {
      const dot = r.key.lastIndexOf('.');
      return h(
        'tr',
        { 'data-key': r.key },
        h('th', { scope: 'row', class: 'kv0v-key', style: { paddingLeft: `${6 + 12 * r.depth}px` } },
          dot >= 0 ? h('span', { class: 'kv0v-muted' }, r.key.slice(0, dot + 1)) : null, dot >= 0 ? r.key.slice(dot + 1) : r.key),
        h('td', { class: typeof r.value === 'number' ? 'kv0v-num' : null }, fmtValue(r.value)),
      );
    }),
  );
  return h('div', null,
    rows.length > 12 ? filterBox('filter parameters', () => body.rows) : null,
    h('table', { class: 'kv0v-table' }, h('thead', null, h('tr', null, h('th', { scope: 'col' }, 'parameter'), h('th', { scope: 'col' }, 'value'))), body));
}

function seriesTable(series) {
  if (series.length === 0) return note('No series.');
  const cols = ['name', 'context', 'points', 'first step', 'last step', 'last value', 'min', 'min step', 'max', 'max step', 'non-finite', 'last point'];
  const sorted = [...series].sort((a, b) => naturalCompare(a.name, b.name) || naturalCompare(a.context, b.context));
  const body = h(
    'tbody',
    null,
    sorted.map((s) => {
      const st = s.stats;
      const n = (v) => h('td', { class: 'kv0v-num' }, v === undefined ? '' : fmtValue(v));
      return h(
        'tr',
        { 'data-key': `${s.name} ${s.context}` },
        h('th', { scope: 'row', class: 'kv0v-key' }, s.name),
        h('td', { class: 'kv0v-mono' }, s.context === '{}' ? '' : s.context),
        st ? [n(st.count), n(st.first_step), n(st.last_step), n(statNumber(st.last_value)), n(statNumber(st.min)), n(st.min_step), n(statNumber(st.max)), n(st.max_step), n(st.non_finite), h('td', null, when(st.last_timestamp))]
          : h('td', { colspan: cols.length - 2, class: 'kv0v-muted' }, 'no points'),
      );
    }),
  );
  return h('div', { class: 'kv0v-scroll' },
    series.length > 12 ? filterBox('filter series', () => body.rows) : null,
    h('table', { class: 'kv0v-table' }, h('thead', null, h('tr', null, cols.map((c) => h('th', { scope: 'col' }, c)))), body));
}

function recordsTable(table, records) {
  const m = recordsModel(records);
  return h('details', { class: 'kv0v-records', open: true },
    h('summary', null, `${table} `, h('span', { class: 'kv0v-muted' }, `(${records.length} record${records.length === 1 ? '' : 's'})`)),
    h('div', { class: 'kv0v-scroll' },
      h('table', { class: 'kv0v-table' },
        h('thead', null, h('tr', null, h('th', { scope: 'col' }, 'item'), m.columns.map((c) => h('th', { scope: 'col' }, c)), h('th', { scope: 'col' }, 'written'))),
        h('tbody', null, m.rows.map((r) => h('tr', null,
          h('th', { scope: 'row', class: 'kv0v-key' }, r.item_id),
          r.cells.map((c) => h('td', { title: c.length > 80 ? c : null }, c.length > 80 ? c.slice(0, 79) + '…' : c)),
          h('td', null, when(r.created_at))))))));
}

/**
 * renderRunPage fills el with the page of one run (an id, or a name only
 * one run has, as source.run takes it). It rejects when the run cannot be
 * read (the page then says so in el too); a part that fails alone (the
 * records tables of a static host, which cannot be listed) is a note in
 * its section. A later call on the same el supersedes an earlier one
 * still reading.
 *
 * @param {HTMLElement} el
 * @param {{source: object, colorOf: (id: string) => string, navigate: (change: object) => void, dark: boolean}} ctx
 * @param {string} runId
 */
export async function renderRunPage(el, ctx, runId) {
  const current = renderGuard(el);
  el.classList.add('kv0v', 'kv0v-run');
  el.replaceChildren(h('p', { class: 'kv0v-status', role: 'status' }, `reading run ${runId}…`));
  const src = ctx.source;
  const settle = (p) => p.then((ok) => ({ ok }), (err) => ({ err }));
  const [run, params, series, tables] = await Promise.all([src.run(runId), src.params(runId), src.series(runId), src.recordTables()].map((p) => settle(Promise.resolve().then(() => p))));
  if (!current()) return;
  if (run.err) {
    el.replaceChildren(h('div', { class: 'kv0v-error', role: 'alert' }, `The run ${runId} could not be read: ${errorText(run.err)}`));
    throw run.err;
  }
  const r = run.ok;
  const id = r.run_id;
  // The records tables that name the run.
  let records = [];
  let recordsNote = null;
  if (tables.err) {
    recordsNote = tables.err.code === 'Unsupported'
      ? `The records tables cannot be listed here: ${tables.err.message}`
      : `The records tables could not be listed: ${errorText(tables.err)}`;
  } else {
    const q = limiter(4);
    records = await Promise.all(tables.ok.map((t) => settle(q(() => src.records(t, { run: id }))).then((x) => ({ table: t, ...x }))));
    if (!current()) return;
  }

  const status = r.status || 'unknown';
  const head = h('header', { class: 'kv0v-run-head' },
    h('span', { class: 'kv0v-swatch', style: { background: ctx.colorOf(id) }, 'aria-hidden': 'true' }),
    h('h2', null, r.name || id),
    h('span', { class: `kv0v-chip kv0v-status-${status}` }, status + (r.archived ? ' · archived' : '')),
    h('button', { type: 'button', class: 'kv0v-back', onclick: () => ctx.navigate({ view: 'charts' }) }, 'back to the charts'));
  const facts = [
    ['id', h('code', null, id)],
    r.experiment ? ['experiment', r.experiment] : null,
    r.kind ? ['kind', r.kind] : null,
    ['created', when(r.created_at)],
    r.ended_at ? ['ended', `${when(r.ended_at)} (${duration(r.created_at, r.ended_at)})`] : ['updated', when(r.updated_at)],
    r.heartbeat_at ? ['heartbeat', when(r.heartbeat_at)] : null,
  ].filter(Boolean);
  const dl = h('dl', { class: 'kv0v-facts' }, facts.map(([k, v]) => [h('dt', null, k), h('dd', null, v)]));

  let target = null;
  if (r.target) {
    let text = r.target;
    try {
      text = JSON.stringify(JSON.parse(r.target), null, 2);
    } catch {
      // Not JSON: shown as written.
    }
    target = section('Target', h('pre', { class: 'kv0v-pre' }, text));
  }

  const recordSections = [];
  for (const x of records) {
    if (x.err) recordSections.push(note(`${x.table}: ${errorText(x.err)}`, 'kv0v-error'));
    else if (x.ok.length > 0) recordSections.push(recordsTable(x.table, x.ok));
  }
  const recordsBody = recordsNote
    ? note(recordsNote)
    : recordSections.length
      ? recordSections
      : note(tables.ok.length ? `None of the ${tables.ok.length} records tables names this run.` : 'The repository has no records tables.');

  const parts = [
    head,
    dl,
    r.description ? h('p', { class: 'kv0v-desc' }, r.description) : null,
    r.tags && r.tags.length ? h('ul', { class: 'kv0v-tags', 'aria-label': 'tags' }, r.tags.map((t) => h('li', { class: 'kv0v-chip' }, t))) : null,
    target,
    section('Parameters', params.err ? note(`The parameters could not be read: ${errorText(params.err)}`, 'kv0v-error') : paramsTable(params.ok)),
    section('Series', series.err ? note(`The series could not be read: ${errorText(series.err)}`, 'kv0v-error') : seriesTable(series.ok)),
    section('Records', recordsBody),
  ];
  el.replaceChildren(...parts.filter(Boolean));
}
