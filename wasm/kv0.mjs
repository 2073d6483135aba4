// kv0.mjs: kv0's reader of Lance datasets and tracking repositories, as one
// ES module for browsers and Node >= 20. It loads kv0.wasm (a Go program)
// and wraps its functions; see README.md and kv0.d.ts for the API.

const here = import.meta.url;
let instances = 0;

/** Error codes a rejected call carries in `err.code`. */
export const codes = Object.freeze(['NotFound', 'Forbidden', 'Network', 'Corrupt', 'Unsupported', 'Invalid', 'Closed']);

// nodeModule imports one of Node's own modules, which only code running in
// Node asks for. Its name is built at run time, so that a bundler leaves
// the import alone: one bundling for browsers would otherwise fail to
// resolve node:fs and node:vm (magic comments tell webpack and Vite the
// same).
function nodeModule(name) {
  const spec = 'node:' + name;
  return import(/* webpackIgnore: true */ /* @vite-ignore */ spec);
}

async function loadGoRuntime(wasmExecURL) {
  if (globalThis.Go) return globalThis.Go;
  if (typeof process !== 'undefined' && process.versions && process.versions.node && !globalThis.document) {
    // Node: wasm_exec.js is a classic script that sets globalThis.Go.
    const { readFile } = await nodeModule('fs/promises');
    const { fileURLToPath } = await nodeModule('url');
    const vm = await nodeModule('vm');
    const src = await readFile(fileURLToPath(wasmExecURL), 'utf8');
    vm.runInThisContext(src, { filename: fileURLToPath(wasmExecURL) });
  } else {
    // A page or a worker: evaluate the script text in global scope (module
    // workers cannot importScripts).
    const res = await fetch(wasmExecURL);
    if (!res.ok) throw codeError('NotFound', `${String(wasmExecURL).split('?')[0]}: HTTP ${res.status} loading wasm_exec.js`);
    (0, eval)(await res.text());
  }
  if (!globalThis.Go) throw codeError('Corrupt', 'wasm_exec.js did not define Go');
  return globalThis.Go;
}

function codeError(code, message) {
  const e = new Error(message);
  e.name = 'Kv0Error';
  e.code = code;
  return e;
}

// compileModule fetches and compiles kv0.wasm (streaming where the server
// sends application/wasm). It needs no Go runtime, so it runs while
// wasm_exec.js loads, or on the page while a Worker starts.
async function compileModule(wasmURL) {
  const res = fetch(wasmURL);
  if (WebAssembly.compileStreaming) {
    try {
      return await WebAssembly.compileStreaming(res);
    } catch (err) {
      // A server that sends another Content-Type than application/wasm.
      if (!(err instanceof TypeError)) throw err;
    }
  }
  const r = await res;
  if (!r.ok) throw codeError('NotFound', `${String(wasmURL).split('?')[0]}: HTTP ${r.status}`);
  return WebAssembly.compile(await r.arrayBuffer());
}

async function instantiate(go, wasmURL) {
  const isNode = typeof process !== 'undefined' && process.versions && process.versions.node && !globalThis.document;
  if (isNode && new URL(wasmURL).protocol === 'file:') {
    const { readFile } = await nodeModule('fs/promises');
    const { fileURLToPath } = await nodeModule('url');
    const bytes = await readFile(fileURLToPath(wasmURL));
    return (await WebAssembly.instantiate(bytes, go.importObject)).instance;
  }
  const res = fetch(wasmURL);
  if (WebAssembly.instantiateStreaming) {
    try {
      return (await WebAssembly.instantiateStreaming(res, go.importObject)).instance;
    } catch (err) {
      // A server that sends another Content-Type than application/wasm.
      if (!(err instanceof TypeError)) throw err;
    }
  }
  const r = await res;
  if (!r.ok) throw codeError('NotFound', `${String(wasmURL).split('?')[0]}: HTTP ${r.status}`);
  return (await WebAssembly.instantiate(await r.arrayBuffer(), go.importObject)).instance;
}

// fetchRange is the module's HTTP GET (wasm/fetch.go): one Promise that
// settles with [status, headers as "name\nvalue\n" pairs, the body as a
// Uint8Array, null] once the whole body is there, so Go is resumed once
// per request rather than for the headers and again for the body. It
// never rejects: a failed fetch settles with [0, '', null, its error's
// text], a body cut short with [status, headers, null, the error's text].
// A request a preload (below) holds the bytes of is answered from memory.
async function fetchRange(url, headers, signal) {
  const early = takePreload(url, headers);
  if (early) {
    const a = await settleOrAbort(early.answer, signal);
    if (a === aborted) return [0, '', null, 'AbortError: the request was aborted'];
    const served = a && Date.now() < early.until ? servePreload(a, headers) : null;
    if (served) return served;
    // Not usable for this request (failed, expired, another range): the
    // network answers, as without a preload.
  }
  try {
    return await fetchCounted(url, { method: 'GET', headers, signal }, async (r) => {
      let h = '';
      for (const [k, v] of r.headers) h += `${k}\n${v.replaceAll('\n', ' ')}\n`;
      try {
        return [r.status, h, new Uint8Array(await r.arrayBuffer()), null];
      } catch (err) {
        return [r.status, h, null, errorText(err)];
      }
    });
  } catch (err) {
    return [0, '', null, errorText(err)];
  }
}

// The module's requests in flight, by URL.
const inFlight = new Map();

// fetchCounted is fetch(url, init) followed by read(response), counted in
// flight for url until read is done. A browser's HTTP cache lets one
// request of a URL at a time use its entry (Chromium's cache lock): a
// second range request of a file waits until the first has its whole
// answer, so the reads a scan, a split read or two calls send together
// would go one after another. A request whose URL already has one in
// flight therefore bypasses the cache (cache: 'no-store': the Pragma and
// Cache-Control headers the browser then adds are its own and need no
// preflight); the first uses it as usual, and a later request may still be
// answered from it.
async function fetchCounted(url, init, read) {
  const key = normURL(url) ?? url;
  const busy = inFlight.get(key) ?? 0;
  inFlight.set(key, busy + 1);
  try {
    return await read(await fetch(url, busy ? { ...init, cache: 'no-store' } : init));
  } finally {
    const left = inFlight.get(key) - 1;
    if (left === 0) inFlight.delete(key);
    else inFlight.set(key, left);
  }
}

// Preloads (preload() below): answers fetched before the Go program asks
// for them, kept by normalized URL, each with the range it asked for. An
// entry is one-shot: the first request of its URL whose range it asked
// for takes it, whether or not its answer can serve that request, so an
// answer (a missing next version above all) is never reused as a later
// proof. It also expires maxAge ms after its answer arrived, and is
// dropped then.
const preloads = new Map(); // href -> [{ id, from, to, answer: Promise<kept | null>, until, timer }]
let preloadIDs = 0;
const aborted = Symbol('aborted');
// The tail the Go side asks for first when it reads a hint or a manifest
// whose size it does not know yet (core/lance manifestTail, httpstore's
// ReadTail), and of a data file it opens (core/lancefile tailRead): the
// preload asks for the same bytes.
const firstRead = 64 << 10;
const tables = ['runs.lance', 'params.lance', 'series.lance', 'metrics.lance'];
// At most this many fragments' data files are preloaded per dataset: the
// bound under which openRepo's prefetch opens a table's files
// (core/tracking warmFragments).
const warmFragments = 64;
// A preload's request is abandoned after this many ms.
const preloadTimeout = 10000;

function normURL(url) {
  try {
    const u = new URL(url);
    u.hash = '';
    return u.href;
  } catch {
    return null;
  }
}

// rangeOf reads "bytes=A-B" as [A, B]; anything else (none, open-ended,
// a suffix) is null.
function rangeOf(headers) {
  const names = Object.keys(headers ?? {});
  const k = names.find((n) => n.toLowerCase() === 'range');
  const m = k && /^bytes=(\d+)-(\d+)$/.exec(String(headers[k]));
  return m ? [Number(m[1]), Number(m[2])] : null;
}

// dropEntry removes e from the list of key.
function dropEntry(key, e) {
  clearTimeout(e.timer);
  const list = preloads.get(key);
  const i = list ? list.indexOf(e) : -1;
  if (i < 0) return false;
  list.splice(i, 1);
  if (list.length === 0) preloads.delete(key);
  return true;
}

// takePreload removes and returns the entry of url that asked for the
// range the request asks for (or a wider one), or the only entry when the
// request's range is not of the form "bytes=A-B".
function takePreload(url, headers) {
  if (preloads.size === 0) return null;
  const key = normURL(url);
  const list = key && preloads.get(key);
  if (!list) return null;
  const want = rangeOf(headers);
  const e = want ? list.find((x) => x.from <= want[0] && want[1] <= x.to) : list.length === 1 ? list[0] : null;
  if (!e) return null;
  dropEntry(key, e);
  return e;
}

// expireAt arms the entry's expiry at until (ms since the epoch): after it
// the entry is neither used nor kept.
function expireAt(key, e, until) {
  e.until = until;
  clearTimeout(e.timer);
  e.timer = setTimeout(() => dropEntry(key, e), Math.max(0, until - Date.now()));
  e.timer?.unref?.(); // Node: a kept answer never holds the process open
}

function settleOrAbort(p, signal) {
  if (!signal) return p;
  if (signal.aborted) return Promise.resolve(aborted);
  return new Promise((resolve) => {
    const onAbort = () => resolve(aborted);
    signal.addEventListener('abort', onAbort, { once: true });
    p.then((v) => { signal.removeEventListener('abort', onAbort); resolve(v); });
  });
}

// addEntry files an entry under key (and hands it to the Worker that takes
// preloads, if one started).
function addEntry(key, e) {
  const list = preloads.get(key);
  if (list) list.push(e);
  else preloads.set(key, [e]);
  forwardTo?.(key, e);
}

// preloadGet fetches bytes [from, to] of url, the range the Go side will
// ask for, and keeps the answer when it can stand in for one: a 200, a 206
// with its Content-Range, a 404 or 410. Anything else (a 403, a 5xx, a
// failure) is not kept, and the Go side's own request meets it. next(kept
// or null) runs before the answer settles, so that the entries it makes
// for what the Go side asks next exist before the Go side has this answer
// (in a Worker: their messages go first).
function preloadGet(url, from, to, maxAge, next) {
  const key = normURL(url);
  if (!key) return Promise.resolve(null);
  const had = preloads.get(key)?.find((x) => x.from === from && x.to === to);
  if (had) return had.answer;
  const then = (a) => {
    try { next?.(a); } catch { /* a preload step that fails leaves the rest to the network */ }
    return a;
  };
  const e = { id: ++preloadIDs, from, to, answer: null, until: Infinity, timer: null };
  e.answer = (async () => {
    // A preload that hangs gives up, so that a request waiting on it
    // goes to the network instead.
    const ac = new AbortController();
    const timer = setTimeout(() => ac.abort(), preloadTimeout);
    timer?.unref?.();
    try {
      const [r, body] = await fetchCounted(url, { method: 'GET', headers: { Range: `bytes=${from}-${to}` }, signal: ac.signal },
        async (res) => [res, new Uint8Array(await res.arrayBuffer())]);
      const headers = [...r.headers].map(([k, v]) => [k, v.replaceAll('\n', ' ')]);
      clearTimeout(timer);
      let start = 0, total = body.length;
      if (r.status === 206) {
        const m = /^bytes (\d+)-(\d+)\/(\d+)$/.exec(r.headers.get('content-range') ?? '');
        if (!m || Number(m[2]) - Number(m[1]) + 1 !== body.length) throw new Error('unusable Content-Range');
        start = Number(m[1]);
        total = Number(m[3]);
      } else if (r.status !== 200 && r.status !== 404 && r.status !== 410) {
        throw new Error(`HTTP ${r.status}`);
      }
      e.until = Date.now() + maxAge;
      if (preloads.get(key)?.includes(e)) expireAt(key, e, e.until);
      return then({ status: r.status, headers, body, start, total });
    } catch {
      clearTimeout(timer);
      dropEntry(key, e);
      return then(null);
    }
  })();
  addEntry(key, e);
  return e.answer;
}

// servePreload answers a request (its headers as the Go side sent them)
// from a kept answer, in fetchRange's form, or returns null when it
// cannot: another header than Range, a range outside the kept bytes, a
// whole body asked for and only part kept. A 404 or 410 answers any range.
function servePreload(a, headers) {
  const names = Object.keys(headers ?? {});
  if (names.some((k) => k.toLowerCase() !== 'range')) return null;
  const text = (list) => list.map(([k, v]) => `${k}\n${v}\n`).join('');
  if (a.status === 404 || a.status === 410) return [a.status, text(a.headers), a.body, null];
  const range = names.length ? String(headers[names[0]]) : null;
  const T = a.total;
  const kept = a.headers.filter(([k]) => !['content-length', 'content-range', 'content-encoding'].includes(k.toLowerCase()));
  if (range === null) {
    if (a.start !== 0 || a.body.length !== T) return null;
    return [200, text([...kept, ['content-length', String(T)]]), a.body, null];
  }
  let from, to;
  let m = /^bytes=(\d+)-(\d*)$/.exec(range);
  if (m) {
    from = Number(m[1]);
    to = m[2] === '' ? T - 1 : Math.min(Number(m[2]), T - 1);
  } else if ((m = /^bytes=-(\d+)$/.exec(range)) && Number(m[1]) > 0) {
    from = Math.max(0, T - Number(m[1]));
    to = T - 1;
  } else {
    return null;
  }
  if (!Number.isSafeInteger(from) || from >= T || from < a.start || to >= a.start + a.body.length) return null;
  const whole = from === a.start && to === a.start + a.body.length - 1;
  const body = whole ? a.body : a.body.slice(from - a.start, to + 1 - a.start);
  return [206, text([...kept, ['content-range', `bytes ${from}-${to}/${T}`], ['content-length', String(to - from + 1)]]), body, null];
}

// v2Name is the V2 file name of manifest v (core/lance naming.go).
function v2Name(v) {
  return `${(2n ** 64n - 1n - BigInt(v)).toString().padStart(20, '0')}.manifest`;
}

// protoFields calls f(field, wire type, value) for each field of the
// protobuf message b: a Number for varints (null past 2^53), a Uint8Array
// for length-delimited fields. It returns false on malformed input.
function protoFields(b, f) {
  let i = 0;
  const varint = () => {
    let v = 0, mul = 1;
    for (let k = 0; k < 10; k++) {
      if (i >= b.length) throw new Error('short varint');
      const x = b[i++];
      v += (x & 0x7f) * mul;
      mul *= 128;
      if (x < 0x80) return v;
    }
    throw new Error('long varint');
  };
  try {
    while (i < b.length) {
      const tag = varint();
      const field = Math.floor(tag / 8), wire = tag % 8;
      if (wire === 0) {
        const v = varint();
        f(field, wire, Number.isSafeInteger(v) ? v : null);
      } else if (wire === 2) {
        const n = varint();
        if (i + n > b.length) return false;
        f(field, wire, b.subarray(i, i + n));
        i += n;
      } else if (wire === 1) i += 8;
      else if (wire === 5) i += 4;
      else return false;
    }
    return i === b.length;
  } catch {
    return false;
  }
}

// manifestFiles lists the data files ({ path, size }) of the manifest in a
// kept answer: [] when it has more than warmFragments fragments, null when
// the answer does not hold the whole manifest section or it does not parse.
// Files under another base path, or of unknown size, are left out.
function manifestFiles(a) {
  if (!a || (a.status !== 200 && a.status !== 206) || a.start + a.body.length !== a.total || a.body.length < 20) return null;
  const b = a.body, n = b.length;
  if (String.fromCharCode(...b.subarray(n - 4)) !== 'LANC') return null;
  const dv = new DataView(b.buffer, b.byteOffset, n);
  const pos = Number(dv.getBigUint64(n - 16, true)) - a.start;
  if (pos < 0 || pos + 4 > n - 16) return null;
  const len = dv.getUint32(pos, true);
  if (pos + 4 + len !== n - 16) return null;
  const files = [];
  let fragments = 0, bad = false;
  const fine = (r) => { if (!r) bad = true; };
  fine(protoFields(b.subarray(pos + 4, pos + 4 + len), (field, wire, v) => {
    if (field !== 2 || wire !== 2) return;
    fragments++;
    fine(protoFields(v, (ff, fw, fv) => {
      if (ff !== 2 || fw !== 2) return;
      const df = { path: null, size: 0, base: false };
      fine(protoFields(fv, (k, w, x) => {
        if (k === 1 && w === 2) df.path = new TextDecoder().decode(x);
        else if (k === 6 && w === 0) df.size = x ?? 0;
        else if (k === 7) df.base = true;
      }));
      if (df.path && df.size > 0 && !df.base) files.push({ path: df.path, size: df.size });
    }));
  }));
  if (bad) return null;
  return fragments > warmFragments ? [] : files;
}

// preloadFile fetches what opening a data file of size bytes reads (core/
// lancefile Open): its last 64 KiB, then the rest of its metadata when that
// starts earlier (the footer's first field). got(answer) runs for each.
function preloadFile(url, size, maxAge, got) {
  const n = Math.min(size, firstRead);
  got(preloadGet(url, size - n, size - 1, maxAge, (tail) => {
    if (!tail || tail.status !== 206 || tail.start !== size - n || tail.total !== size || size < 40) return;
    const b = tail.body;
    if (String.fromCharCode(...b.subarray(b.length - 4)) !== 'LANC') return;
    const meta = Number(new DataView(b.buffer, b.byteOffset, b.length).getBigUint64(b.length - 40, true));
    if (meta < size - n && size - n - meta <= maxPreloadBytes) got(preloadGet(url, meta, size - n - 1, maxAge));
  }));
}
// maxPreloadBytes bounds one preloaded range of a data file's metadata.
const maxPreloadBytes = 4 << 20;

// preloadDataset fetches what opening the dataset at root (a URL, no
// trailing slash) reads first on a static server: the version hint, then
// the manifests of the version it names and of the next one (under V2
// names, then V1 names when neither is there), and with files the data
// files' footers. Each step starts as the answer it depends on arrives
// (preloadGet's next); got(answer) runs for every preload started.
function preloadDataset(root, suffix, maxAge, files, got) {
  const at = (key) => `${root}/${key.split('/').map(encodeURIComponent).join('/')}${suffix}`;
  const get = (key, next) => got(preloadGet(at(key), 0, firstRead - 1, maxAge, next));
  // pair preloads manifests a and b (version v and v + 1); done(cur, next)
  // runs when both are in, before the second settles.
  const pair = (a, b, done) => {
    const seen = [];
    const one = (i) => (ans) => { seen[i] = ans; if (0 in seen && 1 in seen) done(seen[0], seen[1]); };
    get(`_versions/${a}`, one(0));
    get(`_versions/${b}`, one(1));
  };
  // A next version there means the Go side climbs: what it opens is not
  // this manifest's files.
  const opened = (cur, next) => {
    if (!files || next?.status !== 404) return;
    for (const f of manifestFiles(cur) ?? []) preloadFile(at(`data/${f.path}`), f.size, maxAge, got);
  };
  get('_versions/latest_version_hint.json', (hint) => {
    if (!hint || (hint.status !== 200 && hint.status !== 206) || hint.start !== 0 || hint.body.length !== hint.total) return;
    let v;
    try { v = JSON.parse(new TextDecoder().decode(hint.body)).version; } catch { return; }
    if (!Number.isSafeInteger(v) || v < 1) return;
    pair(v2Name(v), v2Name(v + 1), (cur, next) => {
      if (cur?.status === 404 && next?.status === 404) pair(`${v}.manifest`, `${v + 1}.manifest`, opened);
      else opened(cur, next);
    });
  });
}

/**
 * Starts fetching what opening location will read first, before the module
 * is loaded (it needs no Go code): for each dataset (default: the four
 * tables of a tracking repository; opts.datasets: paths under location,
 * '' for location itself) its version hint, then the manifests of the
 * version the hint names and of the next one; with opts.files, also the
 * footers of the latest version's data files (of datasets of at most 64
 * fragments: what openRepo's prefetch opens). The module's requests for
 * those bytes are then answered from memory, each once, within opts.maxAge
 * ms (default 5000) of the answer's arrival; anything else goes to the
 * network. Static (http(s) URL) locations only: a signed location preloads
 * nothing. Resolves, never rejects, with the number of answers kept.
 */
export async function preload(location, opts = {}) {
  if (typeof location !== 'string') return 0;
  const maxAge = Number.isFinite(opts.maxAge) && opts.maxAge >= 0 ? opts.maxAge : 5000;
  let u;
  try { u = new URL(location); } catch { return 0; }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') return 0;
  // The URLs httpstore builds: the base's path without its last '/', the
  // key, the base's query.
  const root = u.origin + u.pathname.replace(/\/$/, '');
  const sets = Array.isArray(opts.datasets) ? opts.datasets.map(String) : tables;
  const started = [];
  const got = (p) => { started.push(p); return p; };
  for (const d of sets) {
    const path = d.replace(/^\/+|\/+$/g, '');
    try { preloadDataset(path ? `${root}/${path}` : root, u.search, maxAge, !!opts.files, got); } catch { /* nothing more for it */ }
  }
  let kept = 0;
  // Each answer may start more preloads (before it settles): wait until
  // every one started has settled.
  for (let i = 0; i < started.length; i++) if (await started[i]) kept++;
  return kept;
}

// forwardPreloads moves the page's kept and pending preloads to a Worker
// (post, a postMessage to it), and those started later too.
function forwardPreloads(post) {
  const send = (key, e) => {
    dropEntry(key, e);
    post({ id: 0, fn: '__preload', args: [key, e.id, e.from, e.to] });
    e.answer.then((a) => post({ id: 0, fn: '__preloaded', args: [key, e.id, a, a ? e.until : 0] }));
  };
  for (const [key, list] of [...preloads]) for (const e of [...list]) send(key, e);
  forwardTo = send;
}
let forwardTo = null; // the Worker that takes preloads, once one started

// errorText is an error's name and message, and its cause's message (a
// fetch TypeError's reason) when it has one.
function errorText(err) {
  let msg = err && typeof err === 'object' ? `${err.name}: ${err.message}` : String(err);
  if (err?.cause?.message) msg += ` (${err.cause.message})`;
  return msg;
}

// json is the JSON of a call's options (undefined for none). JSON would
// turn NaN and ±Infinity into null and fails on a BigInt or a cycle with a
// TypeError: each of those is an Invalid naming the option instead. With
// known, an object's keys must be among them.
function json(v, what = 'options', known = null) {
  if (v === undefined || v === null) return undefined;
  if (known) {
    if (typeof v !== 'object' || Array.isArray(v)) throw codeError('Invalid', `${what}: want an object of options, not ${typeof v}`);
    for (const k of Object.keys(v)) {
      if (!known.includes(k)) throw codeError('Invalid', `${what}: unknown option ${JSON.stringify(k)} (known: ${known.join(', ')})`);
    }
  }
  try {
    return JSON.stringify(v, (k, x) => {
      if (typeof x === 'number' && !Number.isFinite(x)) throw codeError('Invalid', `${what}: ${k || 'a value'} is ${x}, not a finite number`);
      if (typeof x === 'bigint') throw codeError('Invalid', `${what}: ${k || 'a value'} is a BigInt (series ids are decimal strings)`);
      return x;
    });
  } catch (err) {
    if (err.code) throw err;
    throw codeError('Invalid', `${what}: ${err.message}`);
  }
}

// checkRange reads a read's steps or time option: [from, to], two finite
// numbers, from <= to (the range is half-open).
function checkRange(what, r) {
  if (r === undefined || r === null) return;
  if (!Array.isArray(r) || r.length !== 2 || !r.every((x) => typeof x === 'number' && Number.isFinite(x)) || r[0] > r[1]) {
    throw codeError('Invalid', `read: ${what} must be [from, to], two finite numbers with from <= to`);
  }
}

// idArg checks a run id (or name) or a table name.
function idArg(what, id) {
  if (typeof id !== 'string' || id === '') throw codeError('Invalid', `${what} must be a non-empty string, not ${id === '' ? 'an empty one' : typeof id}`);
  return id;
}

// A location crosses into Go as a string: the URL, or the JSON of the
// signed form. Reading the caller's object here keeps its getters out of Go.
function checkLocation(location) {
  if (typeof location === 'string') {
    // The signed form crosses as JSON, so a string that looks like it is
    // refused rather than read as one.
    if (location.trimStart().startsWith('{')) throw codeError('Invalid', 'location: a string must be an http(s) URL; give the signed form as an object');
    return location;
  }
  if (location && typeof location === 'object') {
    const s = location.signer;
    const signer = s && typeof s === 'object' ? { url: s.url, token: s.token } : s;
    if (!signer || typeof signer.url !== 'string' || typeof signer.token !== 'string') {
      throw codeError('Invalid', 'location: signer must be { url: string, token: string }');
    }
    if (location.key !== undefined && typeof location.key !== 'string') throw codeError('Invalid', 'location: key must be a string');
    return JSON.stringify({ signer, key: location.key });
  }
  throw codeError('Invalid', 'location must be an http(s) URL or { signer: { url, token }, key }');
}

/**
 * Loads kv0.wasm and starts it. Options: wasmURL (default: kv0.wasm beside
 * this module), wasmExecURL (default: wasm_exec.js beside it), env (the Go
 * program's environment; the test suites use it), worker (in a browser
 * page: run the module in a dedicated Web Worker, so decoding never blocks
 * the page; the API is the same). In a page whose origin serves this module
 * the worker is the default; worker: false keeps the module on the page's
 * thread, and a Worker that cannot start (another origin, a CSP) falls back
 * to it unless worker: true was asked for.
 */
export async function load(options = {}) {
  if (options === null || typeof options !== 'object') throw codeError('Invalid', 'load: options must be an object');
  for (const k of Object.keys(options)) {
    if (!['wasmURL', 'wasmExecURL', 'worker', 'env'].includes(k)) throw codeError('Invalid', `load: unknown option ${JSON.stringify(k)} (known: wasmURL, wasmExecURL, worker, env)`);
  }
  try {
    return await loadIn(options);
  } catch (err) {
    if (err && codes.includes(err.code)) throw err;
    // A file that is not there, a fetch with no answer, bytes that are not
    // a module: each with its code.
    const code = err?.code === 'ENOENT' ? 'NotFound'
      : err instanceof WebAssembly.CompileError || err instanceof WebAssembly.LinkError ? 'Corrupt'
        : err instanceof TypeError ? 'Network' : 'Corrupt';
    const e = codeError(code, `load: ${errorText(err)}`);
    e.cause = err;
    throw e;
  }
}

async function loadIn(options) {
  const page = typeof Worker === 'function' && typeof window !== 'undefined';
  const want = options.worker ?? (page && sameOrigin(here));
  if (want && page) {
    try {
      return wrap(await startWorker(options));
    } catch (err) {
      if (options.worker) throw err;
    }
  }
  return wrap(await start(options));
}

// sameOrigin reports whether url shares the page's origin (a module Worker
// must).
function sameOrigin(url) {
  try {
    return new URL(url).origin === globalThis.location?.origin;
  } catch {
    return false;
  }
}

// start runs kv0.wasm in this thread and returns call(fn, ...args), which
// invokes one of the Go program's functions and returns its Promise.
async function start(options) {
  const wasmURL = new URL(options.wasmURL ?? 'kv0.wasm', here).href;
  const wasmExecURL = new URL(options.wasmExecURL ?? 'wasm_exec.js', here).href;
  // The module compiles while the Go runtime loads (a page's Worker gets
  // both from the page: options.module, options.wasmExecSource).
  const isNodeFile = typeof process !== 'undefined' && process.versions?.node && !globalThis.document && new URL(wasmURL).protocol === 'file:';
  const compiled = options.module ? Promise.resolve(options.module) : isNodeFile ? null : compileModule(wasmURL);
  compiled?.catch(() => {}); // reported below, once the runtime is in
  if (options.wasmExecSource && !globalThis.Go) (0, eval)(options.wasmExecSource);
  const Go = await loadGoRuntime(wasmExecURL);
  const go = new Go();
  const hold = isNode() ? holdTimers(go) : (p) => p;
  const name = `__kv0_ready_${Date.now().toString(36)}_${instances++}`;
  let instance = null;
  const ready = new Promise((resolve) => {
    const f = (api) => resolve(api);
    // Helpers the Go side uses when present (wasm/fetch.go).
    f.kv0Glue = {
      fetchRange,
      // A copy of the module's memory [p, p + n) as a new Uint8Array.
      slice: (p, n) => new Uint8Array(instance.exports.mem.buffer.slice(p, p + n)),
    };
    globalThis[name] = f;
  });
  go.argv = ['kv0', name];
  if (options.env) go.env = { ...options.env };
  instance = compiled ? await WebAssembly.instantiate(await compiled, go.importObject) : await instantiate(go, wasmURL);
  let exited = false;
  const running = go.run(instance).finally(() => { exited = true; });
  const api = await hold(Promise.race([ready, running.then(() => { throw codeError('Closed', 'kv0.wasm exited during start-up'); })]));
  const call = (fn, ...args) => {
    if (exited) return Promise.reject(codeError('Closed', 'kv0.wasm has exited'));
    try {
      return hold(api[fn](...args));
    } catch (err) {
      return Promise.reject(err);
    }
  };
  return call;
}

function isNode() {
  return typeof process !== 'undefined' && Boolean(process.versions?.node) && !globalThis.document;
}

// holdTimers makes the Go runtime's timers keep Node running only while a
// call is under way, and returns hold(promise), which marks a call under
// way until it settles. The runtime schedules a JavaScript timeout for its
// next timer whenever all its goroutines wait, and leaves it scheduled
// when that Go timer is stopped (a request's 60 s deadline, once the
// request is done): a script whose last call had ended would otherwise
// stay alive until it fired. A call still waiting on a Go timer (the
// backoff before a retry) keeps Node running, as it should. With another
// wasm_exec.js than the Go toolchain's, timers are left as they are.
function holdTimers(go) {
  const gojs = go.importObject?.gojs;
  const schedule = gojs?.['runtime.scheduleTimeoutEvent'];
  if (typeof schedule !== 'function' || !(go._scheduledTimeouts instanceof Map)) return (p) => p;
  let busy = 0;
  const mark = () => {
    for (const t of go._scheduledTimeouts.values()) {
      if (busy) t?.ref?.();
      else t?.unref?.();
    }
  };
  gojs['runtime.scheduleTimeoutEvent'] = (sp) => {
    schedule(sp);
    mark();
  };
  return (p) => {
    if (busy++ === 0) mark();
    const done = () => { if (--busy === 0) mark(); };
    Promise.resolve(p).then(done, done);
    return p;
  };
}

// startWorker starts a module Worker running this file, which runs
// kv0.wasm (see the end of the file), and returns a call that forwards to
// it. Results and errors come back by message; byte arrays are moved, not
// copied.
async function startWorker(options) {
  const abs = (u, d) => new URL(u ?? d, here).href;
  const urls = { wasmURL: abs(options.wasmURL, 'kv0.wasm'), wasmExecURL: abs(options.wasmExecURL, 'wasm_exec.js') };
  // The page fetches and compiles kv0.wasm and fetches wasm_exec.js while
  // the Worker starts, and hands both over: the Worker's own requests
  // would only begin once its script is in. A failure here leaves them to
  // the Worker, which reports it.
  const early = {
    module: compileModule(urls.wasmURL).catch(() => null),
    exec: fetch(urls.wasmExecURL).then((r) => (r.ok ? r.text() : null)).catch(() => null),
  };
  const worker = new Worker(here, { type: 'module', name: 'kv0-worker' });
  const pending = new Map();
  let next = 1;
  let failed = null;
  worker.onmessage = ({ data }) => {
    const p = pending.get(data.id);
    if (!p) return;
    pending.delete(data.id);
    if ('err' in data) p.reject(codeError(data.err.code, data.err.message));
    else p.resolve(data.ok);
  };
  worker.onerror = (ev) => {
    failed = codeError('Closed', `kv0 worker failed: ${ev.message ?? 'error'}`);
    for (const p of pending.values()) p.reject(failed);
    pending.clear();
  };
  const call = (fn, ...args) => {
    if (failed) return Promise.reject(failed);
    return new Promise((resolve, reject) => {
      const id = next++;
      pending.set(id, { resolve, reject });
      worker.postMessage({ id, fn, args });
    });
  };
  try {
    const [module, wasmExecSource] = await Promise.all([early.module, early.exec]);
    try {
      await call('__start', { ...urls, env: options.env, module, wasmExecSource });
    } catch (err) {
      if (err?.name !== 'DataCloneError') throw err;
      await call('__start', { ...urls, env: options.env }); // a Module that cannot be posted: the Worker fetches its own
    }
  } catch (err) {
    worker.terminate();
    throw err;
  }
  // The Worker's requests come from here on: preloads made on the page go
  // to it (a copy each; the page keeps none).
  forwardPreloads((msg) => { if (!failed) worker.postMessage(msg); });
  return call;
}

// wrap builds the API over call.
function wrap(call) {
  // Every wrapper is async, so a bad argument rejects rather than throws.
  const rows = ['version', 'tag', 'columns', 'limit', 'where'];
  const lance = Object.freeze({
    cat: async (location, opts) => call('cat', checkLocation(location), json(opts, 'cat', rows)),
    info: async (location, opts) => JSON.parse(await call('info', checkLocation(location), json(opts, 'info', ['version', 'tag']))),
    log: async (location, opts) => {
      json(opts, 'log', []); // no options: it lists every version
      return JSON.parse(await call('log', checkLocation(location)));
    },
    scan: async (location, opts) => call('scan', checkLocation(location), json(opts, 'scan', rows)),
  });

  async function openRepo(location, opts) {
    const h = await call('openRepo', checkLocation(location), json(opts, 'openRepo', ['versionTTL', 'prefetch']));
    const rc = async (method, arg) => JSON.parse(await call('repoCall', h, method, arg));
    const ids = (seriesIds) => {
      if (!Array.isArray(seriesIds)) throw codeError('Invalid', 'series ids must be an array of decimal strings');
      return json(seriesIds, 'series ids');
    };
    const watchers = new Set();
    return Object.freeze({
      runs: async (filter) => rc('runs', json(filter, 'runs', ['experiment', 'status', 'tags', 'archived', 'params'])),
      run: async (id) => rc('run', idArg('run id', id)),
      params: async (id) => rc('params', idArg('run id', id)),
      series: async (runId) => rc('series', idArg('run id', runId)),
      stats: async (seriesIds) => rc('stats', ids(seriesIds)),
      versions: () => rc('versions'),
      recordTables: () => rc('recordTables'),
      records: async (table, opts) => JSON.parse(await call('repoCall', h, 'records', idArg('records table', table), json(opts, 'records', ['run']))),
      async read(seriesIds, opts) {
        const o = json(opts, 'read', ['maxPoints', 'steps', 'time']);
        if (opts) {
          if (opts.maxPoints !== undefined && opts.maxPoints !== null && !(Number.isSafeInteger(opts.maxPoints) && opts.maxPoints >= 0)) {
            throw codeError('Invalid', `read: maxPoints must be a non-negative integer, not ${opts.maxPoints}`);
          }
          checkRange('steps', opts.steps);
          checkRange('time', opts.time);
        }
        const { meta, data } = await call('repoRead', h, ids(seriesIds), o);
        const out = [];
        let off = data.byteOffset;
        const view = (n) => { const a = new Float64Array(data.buffer, off, n); off += 8 * n; return a; };
        for (const m of JSON.parse(meta)) {
          const s = { seriesId: m.seriesId, steps: view(m.n), values: view(m.n), timestamps: view(m.n), epochs: view(m.n) };
          if (m.minmax) { s.mins = view(m.n); s.maxs = view(m.n); }
          out.push(s);
        }
        return out;
      },
      watch(onChange, opts = {}) {
        // watch returns at once, so a bad argument throws (with its code).
        if (typeof onChange !== 'function') throw codeError('Invalid', 'watch: onChange must be a function');
        if (opts === null || typeof opts !== 'object') throw codeError('Invalid', 'watch: options must be an object');
        for (const k of Object.keys(opts)) {
          if (!['interval', 'onPoll', 'onError'].includes(k)) throw codeError('Invalid', `watch: unknown option ${JSON.stringify(k)} (known: interval, onPoll, onError)`);
        }
        for (const k of ['onPoll', 'onError']) {
          if (opts[k] !== undefined && typeof opts[k] !== 'function') throw codeError('Invalid', `watch: ${k} must be a function`);
        }
        const interval = opts.interval ?? 2000;
        if (typeof interval !== 'number' || !Number.isFinite(interval) || interval <= 0) {
          throw codeError('Invalid', `watch: interval must be a positive number of milliseconds, not ${String(opts.interval)}`);
        }
        let stopped = false;
        let timer = null;
        let id = 0; // the Go side's number of this watch, once started
        const w = {
          stop: () => {
            if (stopped) return;
            stopped = true;
            if (timer !== null) clearTimeout(timer);
            watchers.delete(w);
            if (id) call('repoPoll', h, -id).catch(() => {});
          },
        };
        watchers.add(w);
        // Polls start every interval (counted from the start of the last
        // one, so a poll's own round trips do not stretch the cadence), one
        // at a time: a poll that takes longer is followed at once.
        let began = 0;
        const schedule = () => { if (!stopped) timer = setTimeout(tick, Math.max(0, began + interval - performance.now())); };
        const report = (err) => { if (opts.onError && !stopped) opts.onError(err); };
        const tick = async () => {
          timer = null;
          if (stopped) return;
          began = performance.now();
          let r = null;
          try {
            r = id ? await call('repoPoll', h, id) : null;
            if (!id) id = await call('repoPoll', h, 0);
          } catch (err) {
            if (err && err.code === 'Closed') { w.stop(); return; }
            report(err);
            schedule();
            return;
          }
          if (stopped) return;
          // A throwing callback is reported, and watching goes on.
          try { if (r !== null) onChange(JSON.parse(r)); } catch (err) { report(err); }
          try { if (opts.onPoll) opts.onPoll({ changed: r !== null }); } catch (err) { report(err); }
          schedule();
        };
        tick(); // the first poll only records the state watching starts from
        return w.stop;
      },
      async close() {
        for (const w of [...watchers]) w.stop();
        await call('repoClose', h);
      },
    });
  }

  return Object.freeze({ lance, openRepo });
}

// The worker side of load()'s Worker mode: this file, started as a module
// Worker named kv0-worker, runs kv0.wasm and answers the page's calls.
if (typeof WorkerGlobalScope !== 'undefined' && globalThis instanceof WorkerGlobalScope && globalThis.name === 'kv0-worker') {
  let callGo = null;
  const waiting = new Map(); // preload id -> { key, entry } a __preloaded message settles
  globalThis.onmessage = async ({ data: { id, fn, args } }) => {
    if (fn === '__preload') {
      // A preload of the page, on its way: a request of its URL and range
      // waits for it.
      const [key, pid, from, to] = args;
      const e = { id: pid, from, to, answer: null, until: Infinity, timer: null };
      e.answer = new Promise((resolve) => { e.resolve = resolve; });
      addEntry(key, e);
      waiting.set(pid, { key, e });
      return;
    }
    if (fn === '__preloaded') {
      const [key, pid, a, until] = args;
      const w = waiting.get(pid);
      if (!w) return;
      waiting.delete(pid);
      if (!a) dropEntry(key, w.e);
      else if (preloads.get(key)?.includes(w.e)) expireAt(key, w.e, until);
      w.e.until = a ? until : 0;
      w.e.resolve(a);
      return;
    }
    try {
      let ok;
      if (fn === '__start') {
        callGo = await start(args[0]);
        ok = true;
      } else {
        ok = await callGo(fn, ...args);
      }
      const transfer = [];
      if (ok instanceof Uint8Array) transfer.push(ok.buffer);
      else if (ok && ok.data instanceof Uint8Array) transfer.push(ok.data.buffer);
      globalThis.postMessage({ id, ok }, transfer);
    } catch (e) {
      globalThis.postMessage({ id, err: { code: e?.code ?? 'Corrupt', message: String(e?.message ?? e) } });
    }
  };
}
