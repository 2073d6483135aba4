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
