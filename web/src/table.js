// The runs table: a virtualised grid (only the rows in view are in the DOM,
// so 10,000 runs scroll as smoothly as 10), sortable by any column, with a
// selection box, a hide toggle and a stable colour per run. Parameter and
// summary columns are filled lazily for the rows in view: a summary (last,
// min or max of one metric) comes from the series' statistics, never from
// points.

const ROW = 28;
const OVERSCAN = 8;

const esc = (s) => String(s ?? '').replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' }[c]));

/** "1h 02m", "3m 05s", "12s" for a duration in ms. */
export function formatDuration(ms) {
  if (!Number.isFinite(ms) || ms < 0) return '';
  const s = Math.round(ms / 1000);
  if (s < 60) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m}m ${String(s % 60).padStart(2, '0')}s`;
  const h = Math.floor(m / 60);
  if (h < 48) return `${h}h ${String(m % 60).padStart(2, '0')}m`;
  return `${Math.floor(h / 24)}d ${h % 24}h`;
}

export function runDuration(r, now = Date.now()) {
  const start = Date.parse(r.created_at);
  const end = r.ended_at ? Date.parse(r.ended_at) : r.status === 'running' ? now : Date.parse(r.updated_at);
  return end - start;
}

const fmtNum = (v) => (typeof v === 'number' ? (Number.isInteger(v) ? String(v) : Math.abs(v) >= 1e5 || (Math.abs(v) < 1e-3 && v !== 0) ? v.toExponential(3) : String(+v.toPrecision(5))) : v === undefined ? '' : typeof v === 'object' ? JSON.stringify(v) : String(v));

/** A summary column spec "agg:name:context" → {agg, name, context}. */
export function parseSummary(spec) {
  const m = /^(last|min|max):([^:]+):(.*)$/.exec(spec);
  if (!m) return null;
  return { agg: m[1], name: m[2], context: m[3] || '{}' };
}

export class RunsTable {
  /**
   * el: the container; app: { colorOf(id), paramsOf(id) -> value|undefined,
   * summaryOf(id, spec) -> value|undefined, want(ids) (load lazily),
   * onToggle(id, selected), onHide(id), onOpen(id), onSort(key), onFocusRow }
   */
  constructor(el, app) {
    this.el = el;
    this.app = app;
    this.rows = [];
    this.cols = [];
    this.sel = new Set();
    this.hidden = new Set();
    this.sort = { key: '', dir: 'asc' };
    this.focus = 0;
    el.classList.add('runs-table');
    el.innerHTML = `<div class="rt-head" role="row"></div><div class="rt-body" tabindex="0" role="grid" aria-label="runs"><div class="rt-spacer"></div><div class="rt-rows"></div></div>`;
    this.head = el.querySelector('.rt-head');
    this.body = el.querySelector('.rt-body');
    this.spacer = el.querySelector('.rt-spacer');
    this.rowsEl = el.querySelector('.rt-rows');
    let raf = 0;
    this.body.addEventListener('scroll', () => {
      if (!raf) raf = requestAnimationFrame(() => { raf = 0; this.paint(); });
    }, { passive: true });
    this.head.addEventListener('click', (e) => {
      const h = e.target.closest('[data-sort]');
      if (h) app.onSort(h.dataset.sort);
      const all = e.target.closest('[data-all]');
      if (all) app.onSelectAll(all.checked);
    });
    this.rowsEl.addEventListener('click', (e) => {
      const row = e.target.closest('[data-id]');
      if (!row) return;
      const id = row.dataset.id;
      this.focus = Number(row.dataset.i);
      if (e.target.closest('.rt-check')) app.onToggle(id, !this.sel.has(id));
      else if (e.target.closest('.rt-eye')) app.onHide(id);
      else if (e.target.closest('.rt-name')) app.onOpen(id);
      else app.onToggle(id, !this.sel.has(id));
    });
    this.body.addEventListener('keydown', (e) => this.key(e));
  }

  key(e) {
    const n = this.rows.length;
    if (!n) return;
    let f = this.focus;
    if (e.key === 'ArrowDown' || e.key === 'j') f++;
    else if (e.key === 'ArrowUp' || e.key === 'k') f--;
    else if (e.key === 'PageDown') f += 15;
    else if (e.key === 'PageUp') f -= 15;
    else if (e.key === 'Home') f = 0;
    else if (e.key === 'End') f = n - 1;
    else if (e.key === ' ' || e.key === 'x') { const id = this.rows[f].run_id; this.app.onToggle(id, !this.sel.has(id)); e.preventDefault(); return; }
    else if (e.key === 'Enter') { this.app.onOpen(this.rows[f].run_id); e.preventDefault(); return; }
    else if (e.key === 'h') { this.app.onHide(this.rows[f].run_id); return; }
    else return;
    e.preventDefault();
    this.focus = Math.max(0, Math.min(n - 1, f));
    const top = this.focus * ROW;
    if (top < this.body.scrollTop) this.body.scrollTop = top;
    else if (top + ROW > this.body.scrollTop + this.body.clientHeight) this.body.scrollTop = top + ROW - this.body.clientHeight;
    this.paint();
  }

  /** Sets the columns: [{key, label}] of parameters and summaries after the fixed ones. */
  setColumns(pc, mc) {
    this.cols = [
      { key: 'name', label: 'Name' },
      { key: 'experiment', label: 'Experiment' },
      { key: 'status', label: 'Status' },
      { key: 'tags', label: 'Tags' },
      { key: 'created_at', label: 'Created' },
      { key: 'duration', label: 'Duration' },
      ...pc.map((k) => ({ key: `p:${k}`, label: k, param: k })),
      ...mc.map((s) => { const m = parseSummary(s); return m && { key: `m:${s}`, label: `${m.name}${m.context !== '{}' ? ' ' + m.context : ''} (${m.agg})`, summary: s }; }).filter(Boolean),
    ];
    const tmpl = ['2.2em', '1.4em', '1.6em', 'minmax(10em,2fr)', 'minmax(8em,1.2fr)', '6.5em', 'minmax(6em,1fr)', '11.5em', '5.5em', ...this.cols.slice(6).map(() => 'minmax(6em,1fr)')].join(' ');
    this.el.style.setProperty('--rt-cols', tmpl);
    this.paintHead();
  }

  paintHead() {
    const arrow = (k) => (this.sort.key === k ? (this.sort.dir === 'asc' ? ' ▲' : ' ▼') : '');
    const allSel = this.rows.length > 0 && this.rows.every((r) => this.sel.has(r.run_id));
    this.head.innerHTML = `<label class="rt-c"><input type="checkbox" data-all aria-label="select all shown runs" ${allSel ? 'checked' : ''}></label><span class="rt-c"></span><span class="rt-c"></span>` +
      this.cols.map((c) => `<button class="rt-c rt-h" data-sort="${esc(c.key)}" title="sort by ${esc(c.label)}">${esc(c.label)}${arrow(c.key)}</button>`).join('');
  }

  setRows(rows, sel, hidden, sort) {
    this.rows = rows;
    this.sel = sel;
    this.hidden = hidden;
    this.sort = sort;
    this.focus = Math.min(this.focus, Math.max(0, rows.length - 1));
    this.spacer.style.height = `${rows.length * ROW}px`;
    this.paintHead();
    this.paint();
  }

  cell(r, c, now) {
    switch (c.key) {
      case 'name': return `<span class="rt-c rt-name" title="open ${esc(r.name || r.run_id)}">${esc(r.name || r.run_id.slice(0, 12))}</span>`;
      case 'experiment': return `<span class="rt-c">${esc(r.experiment)}</span>`;
      case 'status': return `<span class="rt-c rt-status s-${esc(r.status)}">${r.status === 'running' ? '<i class="live-dot" aria-hidden="true"></i>' : ''}${esc(r.status)}</span>`;
      case 'tags': return `<span class="rt-c rt-tags">${(r.tags ?? []).map((t) => `<b>${esc(t)}</b>`).join('')}</span>`;
      case 'created_at': return `<span class="rt-c" title="${esc(r.created_at)}">${esc(r.created_at.slice(0, 19).replace('T', ' '))}</span>`;
      case 'duration': return `<span class="rt-c num">${formatDuration(runDuration(r, now))}</span>`;
      default:
        if (c.param) return `<span class="rt-c num">${esc(fmtNum(this.app.paramsOf(r.run_id, c.param)))}</span>`;
        return `<span class="rt-c num">${esc(fmtNum(this.app.summaryOf(r.run_id, c.summary)))}</span>`;
    }
  }

  paint() {
    const h = this.body.clientHeight || 400;
    const top = this.body.scrollTop;
    const start = Math.max(0, Math.floor(top / ROW) - OVERSCAN);
    const end = Math.min(this.rows.length, Math.ceil((top + h) / ROW) + OVERSCAN);
    const now = Date.now();
    let html = '';
    const want = [];
    for (let i = start; i < end; i++) {
      const r = this.rows[i];
      const id = r.run_id;
      const sel = this.sel.has(id);
      const hid = this.hidden.has(id);
      want.push(id);
      html += `<div class="rt-row${sel ? ' sel' : ''}${hid ? ' hid' : ''}${i === this.focus ? ' focus' : ''}" role="row" aria-selected="${sel}" data-id="${esc(id)}" data-i="${i}" style="transform:translateY(${i * ROW}px)">` +
        `<label class="rt-c"><input class="rt-check" type="checkbox" tabindex="-1" aria-label="select ${esc(r.name || id)}" ${sel ? 'checked' : ''}></label>` +
        `<span class="rt-c"><i class="swatch" style="background:${this.app.colorOf(id)}"></i></span>` +
        `<button class="rt-c rt-eye" tabindex="-1" title="${hid ? 'show in charts' : 'hide from charts'}" aria-label="${hid ? 'show' : 'hide'} ${esc(r.name || id)}">${hid ? '◌' : '●'}</button>` +
        this.cols.map((c) => this.cell(r, c, now)).join('') + '</div>';
    }
    this.rowsEl.innerHTML = html;
    if (this.cols.length > 6) this.app.want(want);
  }
}
