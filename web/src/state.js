// The dashboard's shareable state, kept in the URL's query string so a link
// (or a reload) opens the same view. Source parameters (api, repo, signer,
// key, wasm) are kept as given; a token never is.
//
//   sel=ID,ID     selected runs (absent: a first visit, the 10 newest)
//   hide=ID,ID    selected runs not drawn
//   q=TEXT        panel filter (a regex when it parses as one, else a substring)
//   s=0.6         smoothing weight, 0–0.999
//   x=step|wall|rel|m:NAME   x axis (m: another metric of the run)
//   y=log         log y axis;  robust=1  ignore the 5 % tails for the y range
//   zoom=LO,HI    the visible x range
//   view=charts|parallel|compare|run   run=ID  (the run page)
//   group=experiment|tag:T|param:K     band=std
//   find=TEXT     the table's search box
//   exp=, status=, tag= (repeatable), param= (repeatable), archived=  run filter
//   sort=COL:asc|desc  pc=KEY,KEY  mc=METRIC:agg,...  table columns

export const SOURCE_KEYS = ['api', 'repo', 'signer', 'key', 'wasm'];

/** Default state; the URL holds only what differs from it. */
export function defaults() {
  return {
    sel: null, hide: [], q: '', s: 0, x: 'step', y: 'lin', robust: false, zoom: null,
    view: 'charts', run: '', group: '', band: 'minmax', find: '',
    exp: '', status: '', tags: [], params: [], archived: '',
    sort: '', pc: [], mc: [], pm: '',
  };
}

const list = (v) => (v ? v.split(',').filter(Boolean) : []);

/** Reads the state from URLSearchParams. */
export function parseState(p) {
  const st = defaults();
  if (p.has('sel')) st.sel = list(p.get('sel'));
  st.hide = list(p.get('hide'));
  st.q = p.get('q') ?? '';
  const s = Number(p.get('s'));
  st.s = Number.isFinite(s) ? Math.min(0.999, Math.max(0, s)) : 0;
  st.x = p.get('x') || 'step';
  st.y = p.get('y') === 'log' ? 'log' : 'lin';
  st.robust = p.get('robust') === '1';
  const z = list(p.get('zoom')).map(Number);
  st.zoom = z.length === 2 && z.every(Number.isFinite) && z[0] < z[1] ? z : null;
  st.view = ['charts', 'parallel', 'compare', 'run'].includes(p.get('view')) ? p.get('view') : 'charts';
  st.run = p.get('run') ?? '';
  st.group = p.get('group') ?? '';
  st.band = p.get('band') === 'std' ? 'std' : 'minmax';
  st.find = p.get('find') ?? '';
  st.exp = p.get('exp') ?? '';
  st.status = p.get('status') ?? '';
  st.tags = p.getAll('tag');
  st.params = p.getAll('param');
  st.archived = p.get('archived') ?? '';
  st.sort = p.get('sort') ?? '';
  st.pc = list(p.get('pc'));
  st.mc = list(p.get('mc'));
  st.pm = p.get('pm') ?? '';
  return st;
}

/** Writes the state (and the source parameters of `from`) as a query string. */
export function stateQuery(st, from) {
  const p = new URLSearchParams();
  for (const k of SOURCE_KEYS) if (from.get(k)) p.set(k, from.get(k));
  const d = defaults();
  if (st.sel) p.set('sel', st.sel.join(','));
  if (st.hide.length) p.set('hide', st.hide.join(','));
  if (st.q) p.set('q', st.q);
  if (st.s) p.set('s', String(st.s));
  if (st.x !== d.x) p.set('x', st.x);
  if (st.y !== d.y) p.set('y', st.y);
  if (st.robust) p.set('robust', '1');
  if (st.zoom) p.set('zoom', st.zoom.map((v) => +v.toPrecision(12)).join(','));
  if (st.view !== d.view) p.set('view', st.view);
  if (st.run) p.set('run', st.run);
  if (st.group) p.set('group', st.group);
  if (st.band !== d.band) p.set('band', st.band);
  if (st.find) p.set('find', st.find);
  if (st.exp) p.set('exp', st.exp);
  if (st.status) p.set('status', st.status);
  for (const t of st.tags) p.append('tag', t);
  for (const t of st.params) p.append('param', t);
  if (st.archived) p.set('archived', st.archived);
  if (st.sort) p.set('sort', st.sort);
  if (st.pc.length) p.set('pc', st.pc.join(','));
  if (st.mc.length) p.set('mc', st.mc.join(','));
  if (st.pm) p.set('pm', st.pm);
  return p.toString().replace(/%2C/g, ',').replace(/%3A/g, ':').replace(/%2F/g, '/');
}
