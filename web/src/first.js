// What the first requests of api mode are, shared by app.js and the small
// starter inlined in index.html (early.js), which sends them while app.js
// is still downloading: both must build the same URLs for the starter's
// answers to be used.

/** The sessionStorage key of a token for `where` (a signer or API URL). */
export const tokenKey = (where) => `kv0.token:${where}`;

/** Runs a first visit selects. */
export const FIRST_SELECTION = 10;

/** The runs a first visit selects: the FIRST_SELECTION most recently created. */
export function newestRuns(runs) {
  return [...runs].sort((a, b) => (a.created_at < b.created_at ? 1 : a.created_at > b.created_at ? -1 : 0)).slice(0, FIRST_SELECTION).map((r) => r.run_id);
}

/** The API's base URL (ending /api/v1/) the page's parameters name: ?api=URL, else the API beside the page. */
export function apiBase(params, page) {
  let base;
  if (params.get('api')) {
    base = new URL(params.get('api'), page);
    if (!/\/api\/v1\/?$/.test(base.pathname)) base.pathname = base.pathname.replace(/\/?$/, '/api/v1/');
  } else {
    base = new URL('./api/v1/', page);
  }
  if (!base.pathname.endsWith('/')) base.pathname += '/';
  return base.href;
}

/** The URL of an API request: path under base, query [[k, v], ...]. */
export function apiURL(base, path, query) {
  const url = new URL(path, base);
  if (query) for (const [k, v] of query) url.searchParams.append(k, v);
  return url;
}

/** The query of the request for the series lists of runs. */
export const seriesQuery = (ids) => [['runs', ids.join(',')]];

/** The query of the request for the series lists of a first visit's runs (the newest). */
export const newestQuery = [['newest', String(FIRST_SELECTION)]];

/**
 * Where the page finds the wasm module: ?wasm=URL (a folder), else ./wasm/
 * beside the page (kv0 serve serves it at /wasm/, and `make web` copies it
 * into out/web/wasm/ for static hosts).
 */
export function wasmBase(params, pageURL = location.href) {
  const w = params.get('wasm');
  const base = new URL(w || './wasm/', pageURL);
  if (!base.pathname.endsWith('/')) base.pathname += '/';
  return base.href;
}

// ---- the first panels' points ------------------------------------------------
// The starter sends the points requests of the first panels as soon as it
// has the runs and their series lists; app.js builds its requests with the
// same functions, so that the URLs are the same and the starter's answers
// are taken. What decides a URL: the panels (their order and the order of
// their lines), the read options, and how the ids are split into requests.

/** Points per line the panels ask for. */
export const MAX_POINTS = 1000;

/** Series per points request in api mode (the server decodes a request on one goroutine). */
export const READ_CHUNK = 10;

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

/** A context as words ("subset=train"); "" for none. */
export function contextLabel(ctx) {
  if (!ctx || ctx === '{}') return '';
  try {
    return Object.entries(JSON.parse(ctx)).map(([k, v]) => `${k}=${typeof v === 'string' ? v : JSON.stringify(v)}`).join(' ');
  } catch { return ctx; }
}

/**
 * The panels of the drawn runs: ids (in the selection's order) and each
 * run's series list; one panel per (metric, context) matching the panel
 * filter q, sorted by metric then context, its lines in the order of ids.
 */
export function panelSpecs(ids, lists, q) {
  const byKey = new Map();
  ids.forEach((id, i) => {
    for (const s of lists[i]) {
      const key = `${s.name}\u0000${s.context}`;
      if (!byKey.has(key)) byKey.set(key, { metric: s.name, context: s.context, series: [] });
      byKey.get(key).series.push({ run_id: id, series_id: String(s.series_id), stats: s.stats });
    }
  });
  const match = panelMatcher(q);
  return [...byKey.values()]
    .filter((s) => match(`${s.metric} ${contextLabel(s.context)}`) || match(s.metric))
    .sort((a, b) => (a.metric < b.metric ? -1 : a.metric > b.metric ? 1 : a.context < b.context ? -1 : a.context > b.context ? 1 : 0));
}

/** The panels grouped as the page lays them out: [[group, [spec, ...]], ...], groups in order of their first panel. */
export function panelGroups(specs) {
  const groups = new Map();
  for (const s of specs) {
    const g = prefixOf(s.metric);
    if (!groups.has(g)) groups.set(g, []);
    groups.get(g).push(s);
  }
  return [...groups];
}

/** Whether the x axis is a time (the lines need their timestamps). */
export const isTimeX = (x) => x === 'wall' || x === 'rel';

/**
 * The read options of a panel: x the axis, steps the step range of a zoom
 * ([from, to), or null for every step).
 */
export function readOptions(x, steps) {
  // Only what the panel draws: timestamps for a time axis, never epochs.
  const o = { maxPoints: MAX_POINTS, fields: isTimeX(x) ? ['steps', 'values', 'timestamps', 'mins', 'maxs'] : ['steps', 'values', 'mins', 'maxs'] };
  if (steps) { o.fromStep = steps[0]; o.toStep = steps[1]; }
  return o;
}

/** The step range of a zoom [lo, hi] when x is the step. */
export const zoomSteps = (z) => [Math.floor(z[0]), Math.floor(z[1]) + 1];

/**
 * The queries of the points requests reading ids with opts (readOptions):
 * READ_CHUNK series each, in the binary form (format=f64, typed arrays
 * without a JSON parse) unless json is set.
 */
export function pointsQueries(ids, { maxPoints = MAX_POINTS, fromStep, toStep, fields } = {}, json = false) {
  const out = [];
  for (let i = 0; i < ids.length; i += READ_CHUNK) {
    const q = [['ids', ids.slice(i, i + READ_CHUNK).join(',')], ['max_points', String(maxPoints)]];
    if (fromStep !== undefined && fromStep !== null) q.push(['from_step', String(Math.max(0, Math.floor(fromStep)))]);
    if (toStep !== undefined && toStep !== null && Number.isFinite(toStep)) q.push(['to_step', String(Math.ceil(toStep))]);
    if (fields) q.push(['fields', fields.join(',')]);
    if (!json) q.push(['format', 'f64']);
    out.push(q);
  }
  return out;
}

