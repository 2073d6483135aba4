// The dashboard's data sources: one interface over kv0's HTTP API (api mode)
// and the WebAssembly reader (direct mode). Both answer the shapes of
// docs/http-api.md (the CLI's --json, 64-bit ids as decimal strings), with
// one normalisation: the arrays of read() are Float64Arrays, non-finite
// values as NaN/±Infinity and a missing epoch as NaN, and the numbers of
// stats() are numbers (the API's "NaN"/"Infinity" strings become numbers).
//
//   const src = await openSource(new URLSearchParams(location.search));
//   const runs = await src.runs({ experiment: 'resnet' });
//
// Every failure is an Error with a `code` (NotFound, Forbidden, Network,
// Corrupt, Unsupported, Invalid, Closed, and Unauthorized for the API's
// 401) and a message naming the URL; describeError() turns it into words
// that say what to fix.

import { FIRST_SELECTION, apiBase, apiURL, newestQuery, pointsQueries, seriesQuery, tokenKey, wasmBase } from './first.js';

export { wasmBase };

export { tokenKey };

/** An Error with a code, as the wasm module rejects with. */
export function sourceError(code, message, extra = {}) {
  const e = new Error(message);
  e.name = 'Kv0Error';
  e.code = code;
  Object.assign(e, extra);
  return e;
}

const codeOfStatus = { 400: 'Invalid', 401: 'Unauthorized', 403: 'Forbidden', 404: 'NotFound', 422: 'Corrupt', 501: 'Unsupported', 502: 'Network' };

function num(v) {
  if (typeof v === 'number') return v;
  if (v === null || v === undefined) return NaN;
  if (v === 'NaN') return NaN;
  if (v === 'Infinity') return Infinity;
  if (v === '-Infinity') return -Infinity;
  return Number(v);
}

function f64(a) {
  if (!a) return undefined;
  if (a instanceof Float64Array) return a;
  const out = new Float64Array(a.length);
  for (let i = 0; i < a.length; i++) out[i] = num(a[i]);
  return out;
}

const statNumbers = ['last_value', 'min', 'max'];
function normStats(s) {
  if (!s) return null;
  const o = { ...s };
  for (const k of statNumbers) if (k in o) o[k] = num(o[k]);
  return o;
}

function normPoints(p) {
  const o = {
    series_id: String(p.series_id ?? p.seriesId),
    steps: f64(p.steps),
    values: f64(p.values),
    timestamps: f64(p.timestamps),
    epochs: f64(p.epochs),
  };
  if (p.mins) o.mins = f64(p.mins);
  if (p.maxs) o.maxs = f64(p.maxs);
  return o;
}

function normSeries(list) {
  return list.map((s) => (s.stats ? { ...s, series_id: String(s.series_id), stats: normStats(s.stats) } : { ...s, series_id: String(s.series_id) }));
}

/** A parameter comparison as the API's `param=` text: optimizer.lr<0.01, note="a<b". */
export function paramText({ key, op, value }) {
  const v = typeof value === 'string' ? JSON.stringify(value) : String(value);
  return `${key}${op}${v}`;
}

/**
 * Parses "optimizer.lr<0.01" (the CLI's --param) into {key, op, value}:
 * a JSON number is a number, true/false a boolean, a quoted text a string,
 * any other text the text as written.
 */
export function parseParamFilter(text) {
  const m = /^\s*([^<>=!\s]+)\s*(==|!=|<=|>=|=|<|>)\s*(.*?)\s*$/.exec(text);
  if (!m) throw sourceError('Invalid', `param: "${text}" is not KEY OP VALUE (OP one of = != < <= > >=)`);
  const op = m[2] === '==' ? '=' : m[2];
  let value = m[3];
  if (value === '') throw sourceError('Invalid', `param: "${text}" has no value`);
  if (/^-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?$/.test(value)) value = Number(value);
  else if (value === 'true' || value === 'false') value = value === 'true';
  else if (/^".*"$/.test(value)) value = JSON.parse(value);
  return { key: m[1], op, value };
}

// ---- api mode -------------------------------------------------------------

/** The JSON of an answer, or a Network error naming url when it was cut short or is not JSON. */
async function jsonOf(res, url) {
  try {
    return await res.json();
  } catch (e) {
    throw sourceError('Network', `${url.origin}${url.pathname}: the answer was cut short or is not JSON (${e.message})`, { notJSON: true, malformed: true, url: String(url) });
  }
}

/** The Content-Type of the API's binary points answer (format=f64, docs/http-api.md). */
const POINTS_F64 = 'application/vnd.kv0.points+f64';

/**
 * The series of a binary points answer (format=f64, docs/http-api.md):
 * [{ series_id, <field>: Float64Array, ... }], the arrays views of buf.
 * Throws a RangeError or SyntaxError when buf is not such an answer.
 */
export function pointsFromF64(buf) {
  const h = new DataView(buf).getUint32(0, true);
  const heads = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(new Uint8Array(buf, 4, h)));
  if (!Array.isArray(heads)) throw new SyntaxError('the header is not a list');
  let off = 4 + h + ((8 - ((4 + h) % 8)) % 8);
  const out = heads.map((hd, i) => {
    const fields = hd?.fields;
    if (typeof hd?.series_id !== 'string' || !Number.isSafeInteger(hd.n) || hd.n < 0 || !Array.isArray(fields) ||
      !fields.every((f) => POINT_FIELDS.has(f)) || new Set(fields).size !== fields.length) {
      throw new SyntaxError(`series ${i} of the header is not {series_id, n, fields}`);
    }
    const o = { series_id: hd.series_id };
    for (const f of fields) {
      if (off + 8 * hd.n > buf.byteLength) throw new RangeError(`series ${i}'s ${f} ends at byte ${off + 8 * hd.n} of ${buf.byteLength}`);
      o[f] = new Float64Array(buf, off, hd.n);
      off += 8 * hd.n;
    }
    return o;
  });
  if (off !== buf.byteLength) throw new RangeError(`${buf.byteLength - off} bytes after the arrays`);
  return out;
}
const POINT_FIELDS = new Set(['steps', 'values', 'timestamps', 'epochs', 'mins', 'maxs']);

/** Runs per request of their series lists in api mode (the server's bound). */
const SERIES_CHUNK = 1000;

class APISource {
  constructor(base, token) {
    this.kind = 'api';
    this.where = base; // ends with /api/v1/
    this.token = token;
    this.requests = 0;
  }

  async get(path, query) {
    const { res, url } = await this.fetchOK(path, query);
    return jsonOf(res, url);
  }

  /** A points request's series: the binary answer (format=f64) decoded, or the JSON one's. */
  async getPoints(query) {
    const { res, url } = await this.fetchOK('series/points', query);
    if (res.headers.get('content-type') !== POINTS_F64) return jsonOf(res, url);
    try {
      return pointsFromF64(await res.arrayBuffer());
    } catch (e) {
      throw sourceError('Network', `${url.origin}${url.pathname}: the answer was cut short or is not a binary points answer (${e.message})`, { malformed: true, url: String(url) });
    }
  }

  /** The answer of a request, once its status says it succeeded (else the error it names). */
  async fetchOK(path, query) {
    const url = apiURL(this.where, path, query);
    const headers = {};
    if (this.token) headers.Authorization = `Bearer ${this.token}`;
    let res;
    // The page's starter (early.js) may have sent this request already.
    const early = globalThis.kv0early?.take(url.href, this.token);
    this.requests++;
    try {
      res = await (early ?? fetch(url, { headers }));
    } catch (e) {
      throw sourceError('Network', `${url.origin}${url.pathname}: no answer (${e.message}): the server is down, the address is wrong, or it sends no CORS headers for this page's origin`, { url: String(url) });
    }
    if (!res.ok) {
      let body = null;
      try { body = await res.json(); } catch { /* not JSON */ }
      const code = body?.error?.code ?? codeOfStatus[res.status] ?? (res.status >= 500 ? 'Network' : 'Invalid');
      const msg = body?.error?.message ?? `HTTP ${res.status}`;
      throw sourceError(code === 'StoreFailed' ? 'Network' : code, `${url.origin}${url.pathname}: ${res.status}: ${msg}`, { status: res.status, url: String(url) });
    }
    return { res, url };
  }

  runs(filter = {}) {
    const q = [];
    if (filter.experiment) q.push(['experiment', filter.experiment]);
    if (filter.status) q.push(['status', filter.status]);
    for (const t of filter.tags ?? []) q.push(['tag', t]);
    if (filter.archived !== undefined && filter.archived !== null) q.push(['archived', String(filter.archived)]);
    for (const p of filter.params ?? []) q.push(['param', paramText(p)]);
    return this.get('runs', q);
  }
  run(id) { return this.get(`runs/${encodeURIComponent(id)}`); }
  params(id) { return this.get(`runs/${encodeURIComponent(id)}/params`); }
  async series(runId) { return normSeries(await this.get(`runs/${encodeURIComponent(runId)}/series`)); }
  /**
   * The series lists of many runs in one request per SERIES_CHUNK runs
   * (`/api/v1/series?runs=`): one element per id, in order, the run's
   * list or, for a run the server does not find, an Error with its code.
   */
  async seriesOfRuns(ids) {
    // The page's starter asked for the newest runs' lists on a first
    // visit: they serve when they hold these runs.
    if (ids.length <= FIRST_SELECTION && globalThis.kv0early?.has(apiURL(this.where, 'series', newestQuery).href, this.token)) {
      try {
        const byRun = new Map((await this.get('series', newestQuery)).map((el) => [el.run, el]));
        if (ids.every((id) => byRun.has(id))) return ids.map((id) => this.seriesElement(byRun.get(id)));
      } catch { /* asked for below */ }
    }
    const chunks = [];
    for (let i = 0; i < ids.length; i += SERIES_CHUNK) chunks.push(ids.slice(i, i + SERIES_CHUNK));
    const answers = await Promise.all(chunks.map((part) => this.get('series', seriesQuery(part))));
    return answers.flat().map((el) => this.seriesElement(el));
  }
  /** An element of /api/v1/series: the run's list, or its error as an Error. */
  seriesElement(el) {
    if (!el.error) return normSeries(el.series ?? []);
    const where = new URL('series', this.where);
    return sourceError(el.error.code ?? 'Invalid', `${where.origin}${where.pathname}: run ${el.run}: ${el.error.message}`, { url: String(where) });
  }
  async read(ids, opts = {}) {
    if (ids.length === 0) return [];
    // Requests of at most READ_CHUNK series (first.js, shared with the
    // page's starter, which may have sent them), in parallel: the server
    // decodes each request on one goroutine, so a panel of many lines uses
    // every core.
    let answers;
    try {
      answers = await Promise.all(pointsQueries(ids, opts, this.jsonPoints).map((q) => this.getPoints(q)));
    } catch (e) {
      // A server of before the binary form refuses the parameter: ask it
      // for JSON from then on.
      if (this.jsonPoints || e.code !== 'Invalid' || !/format/.test(e.message)) throw e;
      this.jsonPoints = true;
      answers = await Promise.all(pointsQueries(ids, opts, true).map((q) => this.getPoints(q)));
    }
    return answers.flat().map(normPoints);
  }
  /** Whether the page's starter sent the points requests of read(ids, opts) (and they were not taken). */
  prefetched(ids, opts = {}) {
    const early = globalThis.kv0early;
    return !!early && ids.length > 0 && pointsQueries(ids, opts, this.jsonPoints).every((q) => early.has(apiURL(this.where, 'series/points', q).href, this.token));
  }
  async stats(ids) {
    if (ids.length === 0) return [];
    const out = [];
    for (let i = 0; i < ids.length; i += 1000) out.push(...(await this.get('stats', [['ids', ids.slice(i, i + 1000).join(',')]])).map(normStats));
    return out;
  }
  versions() { return this.get('versions'); }
  async recordTables() { return this.get('records'); }
  async records(table, { run } = {}) { return this.get(`records/${encodeURIComponent(table)}`, run ? [['run', run]] : []); }
  close() {}
}

// ---- direct mode ----------------------------------------------------------

class DirectSource {
  constructor(repo, where) {
    this.kind = 'direct';
    this.where = where;
    this.repo = repo;
  }
  runs(filter = {}) {
    const f = {};
    if (filter.experiment) f.experiment = filter.experiment;
    if (filter.status) f.status = filter.status;
    if (filter.tags?.length) f.tags = filter.tags;
    if (filter.archived !== undefined && filter.archived !== null) f.archived = filter.archived;
    if (filter.params?.length) f.params = filter.params;
    return this.repo.runs(f);
  }
  run(id) { return this.repo.run(id); }
  params(id) { return this.repo.params(id); }
  async series(runId) { return normSeries(await this.repo.series(runId)); }
  read(ids, { maxPoints = 1000, fromStep, toStep } = {}) {
    if (ids.length === 0) return Promise.resolve([]);
    const o = {};
    if (maxPoints) o.maxPoints = maxPoints;
    const hasFrom = fromStep !== undefined && fromStep !== null;
    const hasTo = toStep !== undefined && toStep !== null && Number.isFinite(toStep);
    if (hasFrom || hasTo) {
      o.steps = [hasFrom ? Math.max(0, Math.floor(fromStep)) : 0, hasTo ? Math.ceil(toStep) : Number.MAX_SAFE_INTEGER];
      o.steps[1] = Math.max(o.steps[0], o.steps[1]); // the module refuses a range that ends before it starts
    }
    // Reads with the same options asked in one task (the panels coming on
    // screen, one after another) go to the module as one call, which
    // fetches each data file's share once instead of once per panel: over
    // HTTP/1.1's six connections per host that is fewer waves.
    const key = JSON.stringify(o);
    this.batches ??= new Map();
    let b = this.batches.get(key);
    if (!b) {
      b = { parts: [] };
      this.batches.set(key, b);
      queueMicrotask(() => this.flushRead(key, o));
    }
    return new Promise((resolve, reject) => b.parts.push({ ids, resolve, reject }));
  }
  async flushRead(key, o) {
    const { parts } = this.batches.get(key);
    this.batches.delete(key);
    const all = [...new Set(parts.flatMap((p) => p.ids))];
    try {
      const got = new Map();
      try {
        (await this.repo.read(all, o)).forEach((d, i) => got.set(all[i], d));
      } catch (e) {
        if (e?.code !== 'NotFound' || all.length === 1) throw e;
        // A series of the batch is gone (its run deleted meanwhile): the
        // others are read alone, and the gone one shows no points.
        const none = new Float64Array(0);
        await Promise.all(all.map(async (id) => {
          try {
            got.set(id, (await this.repo.read([id], o))[0]);
          } catch (err) {
            if (err?.code !== 'NotFound') throw err;
            got.set(id, { seriesId: id, steps: none, values: none, timestamps: none, epochs: none });
          }
        }));
      }
      const handed = new Set(); // a series two panels asked for: each gets its own arrays
      const own = (d) => Object.fromEntries(Object.entries(d).map(([k, v]) => [k, ArrayBuffer.isView(v) ? v.slice() : v]));
      for (const p of parts) {
        p.resolve(p.ids.map((id) => {
          const d = normPoints(got.get(id));
          if (!handed.has(id)) { handed.add(id); return d; }
          return own(d);
        }));
      }
    } catch (e) {
      for (const p of parts) p.reject(e);
    }
  }
  async stats(ids) { return ids.length ? (await this.repo.stats(ids)).map(normStats) : []; }
  versions() { return this.repo.versions(); }
  async recordTables() {
    if (!this.repo.recordTables) throw sourceError('Unsupported', 'this build of the wasm module reads no records tables');
    return this.repo.recordTables();
  }
  async records(table, opts = {}) {
    if (!this.repo.records) throw sourceError('Unsupported', 'this build of the wasm module reads no records tables');
    return this.repo.records(table, opts);
  }
  watch(onChange, opts) { return this.repo.watch(onChange, opts); }
  close() { return this.repo.close(); }
}

let modulePromise = null;
/** Loads the wasm module from `base` (a folder URL holding kv0.mjs, kv0.wasm, wasm_exec.js). */
export function loadModule(base) {
  if (!modulePromise) {
    const url = new URL('kv0.mjs', base).href;
    // The starter (early.js) may have begun loading it while app.js came.
    const early = globalThis.kv0early?.takeModule?.(url);
    modulePromise = (early?.imported ?? import(/* @vite-ignore */ url)).catch((e) => {
      modulePromise = null;
      throw sourceError('Network', `${url}: the wasm module did not load (${e.message}): build it with make wasm, or point ?wasm= at the folder holding kv0.mjs`);
    }).then((m) => early?.loaded ?? m.load({ worker: true }));
  }
  return modulePromise;
}


/**
 * Opens the source the URL names:
 *   ?api=https://host/      kv0 serve or the edge worker (…/api/v1/ is appended unless given)
 *   ?repo=https://host/repo the wasm module in static mode
 *   ?signer=https://sign&key=prefix/repo  the wasm module in signed mode; the token comes from
 *                           opts.token(where) (asked for and kept in sessionStorage by the page)
 *   none                    the API beside the page (served by kv0 serve or the worker)
 * opts.token(where, reason) -> Promise<string> asks for a token (api 401, signer).
 * In api mode, opts.runs (a run filter) lists the runs in the same round trip
 * as the probe (src.firstRuns, a promise), and opts.early(src) is called once
 * the probe is sent, so that requests that need no answer of it go with it.
 */
export async function openSource(params, opts = {}) {
  const page = opts.pageURL ?? location.href;
  const askToken = opts.token ?? (async () => { throw sourceError('Unauthorized', 'a token is needed'); });
  if (params.get('repo') || params.get('signer')) {
    const kv0 = await loadModule(wasmBase(params, page));
    let location, where;
    if (params.get('signer')) {
      const signer = new URL(params.get('signer'), page).href;
      const key = params.get('key') ?? '';
      where = `${signer} ${key}`;
      let token = sessionStorage.getItem(tokenKey(signer));
      if (!token) {
        token = await askToken(signer, 'signer');
        sessionStorage.setItem(tokenKey(signer), token);
      }
      location = { signer: { url: signer, token }, key };
    } else {
      location = where = new URL(params.get('repo'), page).href.replace(/\/+$/, '');
    }
    try {
      // openRepo reads the tables' latest manifests: a wrong URL, a
      // refused signature or corrupt data fail here. The page's calls come
      // in bursts (runs, their series, the points of every panel): with a
      // version TTL they cost one freshness check per table, not one per
      // call; the live view's watch always asks, and the reads after a
      // change it reports see the change. Prefetching opens the tables'
      // files while the page asks for the runs.
      const repo = await kv0.openRepo(location, { versionTTL: 1000, prefetch: true });
      return new DirectSource(repo, where);
    } catch (e) {
      if (params.get('signer') && e.code === 'Forbidden') sessionStorage.removeItem(tokenKey(new URL(params.get('signer'), page).href));
      throw e;
    }
  }
  const where = apiBase(params, page);
  const src = new APISource(where, sessionStorage.getItem(tokenKey(where)) || undefined);
  for (let attempt = 0; ; attempt++) {
    // The versions answer doubles as the probe that an API is there; the
    // runs (opts.runs, a filter) are asked for in the same round trip, and
    // opts.early(src) may start other requests before either answers.
    const versions = src.versions();
    if (opts.runs) {
      src.firstRuns = src.runs(opts.runs);
      src.firstRuns.catch(() => {});
    }
    opts.early?.(src);
    try {
      src.firstVersions = await versions;
      return src;
    } catch (e) {
      src.firstRuns = undefined;
      if (e.code === 'Unauthorized' && attempt < 3) {
        sessionStorage.removeItem(tokenKey(where));
        src.token = await askToken(where, src.token ? 'wrong' : 'api');
        sessionStorage.setItem(tokenKey(where), src.token);
        continue;
      }
      // No API beside the page: a 404, or a static host answering its page for every path.
      if (!params.get('api') && (e.code === 'NotFound' || e.code === 'Invalid' || e.code === 'MethodNotAllowed' || e.notJSON)) {
        throw sourceError('NoSource', `no data source: this page is not served by kv0 serve (${where} answered ${e.notJSON ? 'with something that is not JSON' : e.status ?? e.code}). Add ?api=URL of kv0 serve or the edge worker, ?repo=URL of a repository on a static host or bucket, or ?signer=URL&key=PREFIX of a kv0 sign-server`);
      }
      throw e;
    }
  }
}

/** Words that say what went wrong and what to fix, for an error of a source. */
export function describeError(e, src) {
  const m = e?.message ?? String(e);
  switch (e?.code) {
    case 'Network':
      // An answer came, but not whole or not of its kind.
      if (e.malformed) return { title: 'An answer arrived broken', fix: `${m}. The connection dropped mid-answer or something between the page and the server changed it (a proxy or CDN cutting or rewriting bodies): reload, and if it stays, check what sits in front of the server.` };
      return { title: 'The data could not be reached', fix: `${m}. Check that the server is running and the address is right; when the data is on another origin, its server or bucket must send CORS headers (Access-Control-Allow-Origin for this page's origin, exposing Content-Range and ETag; see docs/object-stores.md).` };
    case 'Forbidden':
      return { title: 'Access was refused (403)', fix: `${m}. A presigned URL may have expired: reload to get fresh signatures from the signer; otherwise check the bucket's policy or the signer's token.` };
    case 'Unauthorized':
      return { title: 'A token is needed (401)', fix: `${m}. Enter the server's token (kv0 serve --token-file); it is kept in this tab's sessionStorage only.` };
    case 'NotFound':
      return { title: 'Not found (404)', fix: `${m}. Check that the URL points at the repository's folder (the one holding runs.lance, series.lance and metrics.lance), and that the run or series still exists.` };
    case 'Corrupt':
      return { title: 'The repository holds corrupt data', fix: `${m}. The named file does not decode: restore it from a copy or re-run the writer; other runs may still read.` };
    case 'Unsupported':
      return { title: 'Unsupported data', fix: `${m}. This kv0 does not read that format; upgrade kv0 or rewrite the dataset (kv0 optimize).` };
    case 'Invalid':
      return { title: 'A bad argument', fix: `${m}. Fix the filter or the URL parameter named.` };
    case 'NoSource':
      return { title: 'No data source', fix: m };
    case 'Closed':
      return { title: 'The repository handle was closed', fix: `${m}. Reload the page.` };
    default:
      return { title: 'Something failed', fix: m };
  }
}
