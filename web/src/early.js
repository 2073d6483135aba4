// The starter inlined in index.html (build.mjs): in api mode it sends the
// requests app.js would send first (the versions, the runs, and the series
// lists of the runs the URL selects or, on a first visit, of the newest
// runs) while app.js is still downloading, and
// keeps their answers in window.kv0early for app.js to take, once each.
// Anything it cannot tell in advance (a run filter) it leaves to app.js.
// In direct mode it starts loading the wasm module instead.
import { apiBase, apiURL, newestQuery, seriesQuery, tokenKey, wasmBase } from './first.js';
import { parseState } from './state.js';

(() => {
  const params = new URLSearchParams(location.search);
  if (params.get('repo') || params.get('signer')) {
    // Direct mode: the wasm module (kv0.mjs, then kv0.wasm compiled on
    // this thread while its Worker starts) loads while app.js downloads.
    const url = new URL('kv0.mjs', wasmBase(params, location.href)).href;
    const imported = import(url);
    const loaded = imported.then((m) => {
      const started = m.load({ worker: true });
      // While kv0.wasm compiles and the Go program starts, the tables'
      // version hints, latest manifests and data files' footers come
      // (static mode: what openRepo and its prefetch read first); the
      // module's requests for them are then answered from memory, once
      // each. A module without preload, or a failed preload, leaves them
      // to the network.
      const repo = params.get('repo');
      if (repo && typeof m.preload === 'function') {
        m.preload(new URL(repo, location.href).href.replace(/\/+$/, ''), { files: true }).catch(() => {});
      }
      return started;
    });
    loaded.catch(() => {}); // app.js reports it
    let taken = false;
    window.kv0early = {
      takeModule(u) {
        if (u !== url || taken) return undefined;
        taken = true;
        return { imported, loaded };
      },
      take() { return undefined; },
      has() { return false; },
      clear() {},
    };
    return;
  }
  const base = apiBase(params, location.href);
  let token = null;
  try { token = sessionStorage.getItem(tokenKey(base)) || null; } catch { /* no storage */ }
  const headers = token ? { Authorization: `Bearer ${token}` } : {};
  const sent = new Map(); // URL -> Promise<Response>
  const asked = new Set(); // URLs app.js asked for before the starter sent them
  const send = (path, query) => {
    const url = apiURL(base, path, query).href;
    if (asked.has(url)) return Promise.reject(new Error('sent by app.js'));
    const p = fetch(url, { headers });
    p.catch(() => {});
    sent.set(url, p);
    return p;
  };
  window.kv0early = {
    /** The answer of url when the starter sent it with this token, once. */
    take(url, tok) {
      const p = sent.get(url);
      if (!p) asked.add(url);
      if (!p || (tok || null) !== token) return undefined;
      sent.delete(url);
      return p;
    },
    /** Whether the starter sent url with this token (and it was not taken). */
    has(url, tok) { return sent.has(url) && (tok || null) === token; },
    clear() { sent.clear(); },
  };
  const st = parseState(params);
  send('versions');
  const hidden = new Set(st.hide);
  if (st.sel) {
    const ids = st.sel.filter((id) => !hidden.has(id));
    if (ids.length) send('series', seriesQuery(ids));
  }
  if (st.exp || st.status || st.tags.length || st.params.length || st.archived) return;
  send('runs');
  // A first visit draws the newest runs: their series lists go now too.
  if (!st.sel) send('series', newestQuery);
})();
