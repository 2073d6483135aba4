// Compare: the parameters of the selected runs side by side, the ones
// that differ first.

import { h, fmtValue, errorText, renderGuard, limiter } from './dom.js';
import { flattenParams, naturalCompare } from './run.js';

// stableJSON is JSON with object keys sorted, so equal values compare equal
// whatever order their keys were written in.
function stableJSON(v) {
  if (v === undefined) return '\u0000absent';
  if (Array.isArray(v)) return `[${v.map(stableJSON).join(',')}]`;
  if (v !== null && typeof v === 'object') {
    return `{${Object.keys(v).sort().map((k) => `${JSON.stringify(k)}:${stableJSON(v[k])}`).join(',')}}`;
  }
  if (typeof v === 'number' && !Number.isFinite(v)) return String(v);
  return JSON.stringify(v);
}

/**
 * compareModel lines up the parameters of several runs: one row per
 * dotted key any run has (flattenParams), with each run's value in the
 * order given (undefined where a run lacks the key). A row differs when
 * its values are not all equal (a missing value differs from any value;
 * objects compare by content, whatever their key order). Rows that differ
 * come first, each group in natural key order.
 *
 * @param {{run_id: string, params: object}[]} paramTrees
 * @returns {{key: string, values: unknown[], differs: boolean}[]}
 */
export function compareModel(paramTrees) {
  const maps = paramTrees.map((t) => new Map(flattenParams(t.params ?? {}).map((r) => [r.key, r.value])));
  const keys = new Set();
  for (const m of maps) for (const k of m.keys()) keys.add(k);
  const rows = [...keys].map((key) => {
    const values = maps.map((m) => m.get(key));
    const texts = new Set(values.map(stableJSON));
    return { key, values, differs: texts.size > 1 };
  });
  return rows.sort((a, b) => (a.differs === b.differs ? naturalCompare(a.key, b.key) : a.differs ? -1 : 1));
}

/**
 * renderCompare fills el with the parameters of runIds side by side (at
 * most a few dozen runs are readable; every one given is shown). A run
 * that cannot be read gets a column saying why. Controls: only the
 * parameters that differ, a filter by key. A later call on the same el
 * supersedes an earlier one still reading.
 *
 * @param {HTMLElement} el
 * @param {{source: object, colorOf: (id: string) => string, navigate: (change: object) => void, dark: boolean}} ctx
 * @param {string[]} runIds
 */
export async function renderCompare(el, ctx, runIds) {
  const current = renderGuard(el);
  el.classList.add('kv0v', 'kv0v-compare');
  if (!runIds || runIds.length === 0) {
    el.replaceChildren(h('p', { class: 'kv0v-empty' }, 'Select runs in the table to compare their parameters.'));
    return;
  }
  el.replaceChildren(h('p', { class: 'kv0v-status', role: 'status' }, `reading the parameters of ${runIds.length} runs…`));
  const q = limiter(8);
  const settle = (p) => p.then((ok) => ({ ok }), (err) => ({ err }));
  const got = await Promise.all(runIds.map((id) => Promise.all([settle(q(() => ctx.source.run(id))), settle(q(() => ctx.source.params(id)))])));
  if (!current()) return;
  const cols = runIds.map((id, i) => {
    const [run, params] = got[i];
    return { id, run: run.ok, params: params.ok, err: run.err ?? params.err };
  });
  const rows = compareModel(cols.map((c) => ({ run_id: c.id, params: c.params ?? {} })));
  const nDiff = rows.filter((r) => r.differs).length;

  const head = h('tr', null,
    h('th', { scope: 'col', class: 'kv0v-key' }, 'parameter'),
    cols.map((c) => h('th', { scope: 'col' },
      h('span', { class: 'kv0v-swatch', style: { background: ctx.colorOf(c.id) }, 'aria-hidden': 'true' }),
      h('button', { type: 'button', class: 'kv0v-link', title: c.id, onclick: () => ctx.navigate({ view: 'run', run: c.id }) }, c.run?.name || c.id),
      c.err ? h('div', { class: 'kv0v-error' }, errorText(c.err)) : null)));
  const body = h('tbody', null, rows.map((r) => {
    const first = stableJSON(r.values[0]);
    return h('tr', { class: r.differs ? 'kv0v-diff' : null, 'data-key': r.key, 'data-differs': String(r.differs) },
      h('th', { scope: 'row', class: 'kv0v-key' }, r.key),
      r.values.map((v, i) => h('td', {
        class: [v === undefined ? 'kv0v-absent' : '', typeof v === 'number' ? 'kv0v-num' : '', r.differs && i > 0 && stableJSON(v) !== first ? 'kv0v-changed' : ''].filter(Boolean).join(' ') || null,
      }, v === undefined ? '—' : fmtValue(v))));
  }));
  let onlyDiff = false;
  let query = '';
  const apply = () => {
    for (const tr of body.rows) {
      tr.hidden = (onlyDiff && tr.dataset.differs !== 'true') || (query !== '' && !tr.dataset.key.toLowerCase().includes(query));
    }
  };
  const controls = h('div', { class: 'kv0v-controls' },
    h('label', null, h('input', { type: 'checkbox', onchange: (ev) => { onlyDiff = ev.target.checked; apply(); } }), ' only the parameters that differ'),
    h('input', { type: 'search', class: 'kv0v-filter', placeholder: 'filter parameters', 'aria-label': 'filter parameters', oninput: (ev) => { query = ev.target.value.trim().toLowerCase(); apply(); } }),
    h('span', { class: 'kv0v-muted' }, `${rows.length} parameters, ${nDiff} differ`));
  el.replaceChildren(
    controls,
    rows.length === 0
      ? h('p', { class: 'kv0v-empty' }, 'These runs have no parameters.')
      : h('div', { class: 'kv0v-scroll' }, h('table', { class: 'kv0v-table kv0v-compare-table' }, h('thead', null, head), body)),
  );
}
