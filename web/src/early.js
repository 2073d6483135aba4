// The starter inlined in index.html (build.mjs): in api mode it sends the
// requests app.js would send first while app.js is still downloading and
// keeps their answers in window.kv0early for app.js to take, once each:
// the versions, the runs, and the series lists of the runs the URL selects
// or, on a first visit, of the newest runs; then, as soon as the runs and
// those lists are in, the points requests of the first panels (first.js
// builds the panels and their URLs for both). Which panels: those the page
// will place on screen, found by laying out empty panels as charts.js does
// and measuring them; app.js reads every panel whose points the starter
// sent, so none goes unused. Anything it cannot tell in advance (a run
// filter, another view, a zoom on a time axis) it leaves to app.js.
// In direct mode it starts loading the wasm module instead.
import { apiBase, apiURL, newestQuery, newestRuns, panelGroups, panelSpecs, pointsQueries, readOptions, seriesQuery, tokenKey, wasmBase, zoomSteps } from './first.js';
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
  const log = { sent: [], taken: [] }; // what it sent and what app.js took (for tests)
  let decided;
  const points = new Promise((res) => { decided = res; });
  const send = (path, query) => {
    const url = apiURL(base, path, query).href;
    if (asked.has(url)) return Promise.reject(new Error('sent by app.js'));
    const p = fetch(url, { headers });
    p.catch(() => {});
    sent.set(url, p);
    log.sent.push(url);
    return p;
  };
  window.kv0early = {
    log,
    /** Resolves once the starter sent the first panels' points requests, or chose not to. */
    points,
    /** The answer of url when the starter sent it with this token, once. */
    take(url, tok) {
      const p = sent.get(url);
      if (!p) asked.add(url);
      if (!p || (tok || null) !== token) return undefined;
      sent.delete(url);
      log.taken.push(url);
      return p;
    },
    /** Whether the starter sent url with this token (and it was not taken). */
    has(url, tok) { return sent.has(url) && (tok || null) === token; },
    clear() { sent.clear(); },
  };
  const st = parseState(params);
  send('versions');
  const hidden = new Set(st.hide);
  const wanted = st.sel ? st.sel.filter((id) => !hidden.has(id)) : null;
  let lists = null;
  if (wanted?.length) lists = send('series', seriesQuery(wanted));
  if (st.exp || st.status || st.tags.length || st.params.length || st.archived) return decided();
  const runs = send('runs');
  // A first visit draws the newest runs: their series lists go now too.
  if (!st.sel) lists = send('series', newestQuery);
  // The points of the first panels: app.js reads a panel's lines as
  // charts.js asks (no zoom, or a zoom of steps), in the charts view.
  if (!lists || st.view !== 'charts' || (st.zoom && st.x !== 'step')) return decided();
  // The bodies are read from copies: app.js takes the answers themselves.
  const body = (p) => p.then((r) => (r.ok ? r.clone().json() : Promise.reject(new Error(`HTTP ${r.status}`))));
  Promise.all([body(runs), body(lists)]).then(([listed, answer]) => {
    // The drawn runs as main.js finds them: the selection (or the newest
    // runs) that the listing holds, not hidden; each one's series list
    // (none for a run the answer has an error for).
    const have = new Set(listed.map((r) => r.run_id));
    let els;
    if (wanted) {
      els = wanted.map((id, i) => [id, answer[i]]).filter(([id]) => have.has(id));
    } else {
      const byRun = new Map(answer.map((el) => [el.run, el]));
      els = newestRuns(listed).map((id) => [id, byRun.get(id)]);
      if (els.some(([, el]) => !el)) return; // app.js asks for other lists
    }
    const specs = panelSpecs(els.map(([id]) => id), els.map(([, el]) => (el.error ? [] : el.series ?? [])), st.q);
    const opts = readOptions(st.x, st.zoom ? zoomSteps(st.zoom) : null);
    const read = (s) => { for (const q of pointsQueries(s.series.map((x) => x.series_id), opts)) send('series/points', q).catch(() => {}); };
    // The first panel at once (the page reads it wherever it lands), the
    // others once the layout says which fit.
    performance.mark('kv0:early-points');
    if (specs.length) read(specs[0]);
    specs.slice(1, onScreen(panelGroups(specs))).forEach(read);
  }).catch(() => { /* app.js asks and reports */ }).finally(decided);
})();

/**
 * How many panels of groups ([[group, specs]], in the page's order) the
 * page will find on screen when it places them (charts.js setPanels: the
 * top at most 200 px below the window): empty panels laid out in #charts
 * with the page's style as charts.js lays them out, measured, and removed
 * before anything is painted (index.html gives #runs its class, so the
 * runs table's box is in place before app.js fills it). 1 when the
 * document or its style is not there yet (the first panel is read
 * wherever it lands), 0 when the page already placed its panels.
 */
function onScreen(groups) {
  // app.js waits for the starter before it places its panels: no waiting here.
  const charts = document.getElementById('charts');
  if (!charts || !document.querySelector('link[rel="stylesheet"]')?.sheet) return 1;
  if (charts.firstChild) return 0;
  const panel = '<article class="panel"><header><h3>x</h3><span class="tools"><button>CSV</button></span></header><div class="plot"></div><div class="legend"></div></article>';
  charts.innerHTML = groups.map(([, ss]) => `<section class="panel-group"><h2><button class="group-toggle">x</button> <span class="count">${ss.length}</span></h2><div class="panel-grid">${panel.repeat(ss.length)}</div></section>`).join('');
  const bottom = innerHeight + 200;
  let n = 0;
  for (const el of charts.querySelectorAll('.panel')) {
    const r = el.getBoundingClientRect();
    if (!(r.width > 0 && r.top <= bottom && r.bottom >= -200)) break;
    n++;
  }
  charts.replaceChildren();
  return n;
}
