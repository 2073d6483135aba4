// kv0's edge worker: the JavaScript half of the glue (edge/glue is the Go
// half; docs/edge.md tells how it differs from syumai/workers' stock glue).
//
// One Go instance per isolate: started on the first request, kept running,
// handed every request after. Go never calls an I/O function itself: each
// request gets a gate, a queue of operations (fetch, R2 get/head/list,
// stream reads) that this file performs inside that request's context, as
// Cloudflare's runtime ties every I/O object to the request that made it.
// Nothing is kept in the Cache API: no answer of the API is immutable (a
// cleanup or purge may remove any version, docs/http-api.md), and answers
// about the latest versions are kept in Go (edge/answers.go), revalidated by
// ETag.

import "./wasm_exec.js";
import wasm from "./kv0edge.wasm";

let instance; // Promise of the running Go program {go, binding}, once started

function startGo(env) {
  if (instance) return instance;
  const started = new Promise((resolve, reject) => {
    const go = new Go();
    go.exit = (code) => (go.exitCode = code);
    const binding = { ready: () => resolve({ go, binding }) };
    const inst = new WebAssembly.Instance(wasm, go.importObject);
    // syumai/workers' wasm_exec.js makes this object the Go side's
    // globalThis.context (its env is read once: vars and bindings are the
    // same for every request of an isolate).
    go.run(inst, { env, ctx: undefined, binding }).then(
      () => reject(new Error(`the Go program exited (exit code ${go.exitCode})`)),
      reject,
    );
  });
  instance = started;
  started.catch(() => {
    if (instance === started) instance = undefined;
  });
  return started;
}

// The running program, started anew when the last one has exited (a
// crash answers its requests with an error; the next request works).
async function running(env) {
  const r = await startGo(env);
  if (!r.go.exited) return r.binding;
  instance = undefined;
  return (await startGo(env)).binding;
}

const SMALL = 64 << 10; // bodies up to this size are read whole in JavaScript

// An origin that stops answering must not hold a request forever (a fetch
// has no deadline of its own): its headers, a small body, and each chunk of
// a streamed one must come within this long (ms; the KV0_ORIGIN_TIMEOUT_MS
// var sets another), or the read fails (the API then answers 502).
const ORIGIN_TIMEOUT = 30_000;

// within resolves as p does, or rejects naming what when ms pass first.
function within(p, ms, what) {
  let t;
  const late = new Promise((_, reject) => {
    t = setTimeout(() => reject(new Error(`${what}: no answer in ${ms / 1000} s`)), ms);
  });
  return Promise.race([p, late]).finally(() => clearTimeout(t));
}

// fetchOnce is one GET of the origin, under signal (which also bounds a
// small body read whole).
async function fetchOnce(url, headers, signal) {
  const r = await fetch(url, { method: "GET", headers, redirect: "follow", signal });
  const h = [];
  r.headers.forEach((v, k) => h.push(k, v));
  // A small body (a manifest, a hint, a page) comes back whole with the
  // answer: one hop into Go instead of one per chunk.
  const n = Number(r.headers.get("content-length"));
  if (r.body && !r.headers.has("content-encoding") && Number.isInteger(n) && n <= SMALL) {
    return { status: r.status, headers: h, bytes: new Uint8Array(await r.arrayBuffer()), reader: null };
  }
  return { status: r.status, headers: h, reader: r.body ? r.body.getReader() : null };
}

// The operations Go asks a gate for. Results are plain values, a reader
// or null; a thrown error becomes the Go call's error.
function operations(env) {
  const limit = Number(env.KV0_ORIGIN_TIMEOUT_MS) > 0 ? Number(env.KV0_ORIGIN_TIMEOUT_MS) : ORIGIN_TIMEOUT;
  return {
    async fetch(url, headers) {
      const ac = new AbortController();
      const t = setTimeout(() => ac.abort(new Error(`${url}: no answer in ${limit / 1000} s`)), limit);
      try {
        return await fetchOnce(url, headers, ac.signal);
      } finally {
        clearTimeout(t); // a streamed body goes on: read() bounds each chunk
      }
    },
    async read(reader) {
      const { done, value } = await within(reader.read(), limit, "reading a body");
      return done ? null : value;
    },
    async cancel(reader) {
      await reader.cancel();
      return null;
    },
    async r2get(key, offset, length) {
      const o = await env.KV0_BUCKET.get(key, { range: { offset, length } });
      if (o === null) return null;
      if (length <= SMALL) return { size: o.size, bytes: new Uint8Array(await o.arrayBuffer()), reader: null };
      return { size: o.size, reader: o.body.getReader() };
    },
    async r2head(key) {
      const o = await env.KV0_BUCKET.head(key);
      return o === null ? null : o.size;
    },
    async r2list(prefix, startAfter, cursor, limit) {
      const opts = { limit };
      if (prefix) opts.prefix = prefix;
      if (cursor) opts.cursor = cursor;
      else if (startAfter) opts.startAfter = startAfter;
      const r = await env.KV0_BUCKET.list(opts);
      const objects = [];
      for (const o of r.objects) objects.push(o.key, o.size);
      return { objects, cursor: r.truncated ? r.cursor : null };
    },
  };
}

// A gate runs operations in the request that created it: submit may be
// called from any context (Go runs when some request's event resumes it);
// the loop below wakes through a promise of this request, so it and the
// operations run here. ctx.waitUntil keeps the request alive while an
// operation it started runs, even after its answer is sent.
function newGate(env, ctx) {
  const ops = operations(env);
  const queue = [];
  let wake = null;
  let open = true;
  let finished;
  ctx.waitUntil(new Promise((r) => (finished = r)));
  // The request may wait on Go while Go runs on another request's events;
  // a pending timer of its own tells the runtime it has not hung.
  const alive = setInterval(() => {}, 5000);
  (async () => {
    for (;;) {
      while (queue.length) {
        const [op, args, cb] = queue.shift();
        let p;
        try {
          p = ops[op](...args);
        } catch (e) {
          p = Promise.reject(e);
        }
        ctx.waitUntil(
          p.then(
            (v) => cb(null, v === undefined ? null : v),
            (e) => cb(String((e && e.message) || e), null),
          ),
        );
      }
      if (!open) break;
      await new Promise((r) => (wake = r));
      wake = null;
    }
    clearInterval(alive);
    finished();
  })();
  return {
    submit(op, args, cb) {
      queue.push([op, args, cb]);
      if (wake) wake();
    },
    close() {
      open = false;
      if (wake) wake();
    },
  };
}

const te = new TextEncoder();

function errorResponse(status, code, message) {
  const body = te.encode(JSON.stringify({ error: { code, message } }) + "\n");
  return new Response(body, {
    status,
    headers: { "content-type": "application/json", "cache-control": "no-store", "access-control-allow-origin": "*" },
  });
}

// The Response of Go's answer, built in this request's context.
function toResponse(status, flat, kind, body) {
  const headers = new Headers();
  for (let i = 0; i + 1 < flat.length; i += 2) headers.append(flat[i], flat[i + 1]);
  if (kind === 0) return new Response(null, { status, headers });
  if (kind === 1) return new Response(body, { status, headers });
  const stream = new ReadableStream({
    pull(c) {
      return new Promise((resolve, reject) =>
        body.next((err, chunk) => (err ? reject(new Error(err)) : resolve(chunk))),
      ).then(
        (chunk) => {
          if (chunk === null) c.close();
          else c.enqueue(chunk);
        },
        (e) => c.error(e),
      );
    },
    cancel() {
      body.cancel();
    },
  });
  const n = Number(headers.get("content-length"));
  if (Number.isInteger(n) && n > 0 && typeof FixedLengthStream === "function") {
    const fixed = new FixedLengthStream(n);
    stream.pipeTo(fixed.writable).catch(() => {});
    return new Response(fixed.readable, { status, headers });
  }
  return new Response(stream, { status, headers });
}

async function handle(request, env, ctx) {
  const go = await running(env);
  const gate = newGate(env, ctx);
  const headers = [];
  request.headers.forEach((v, k) => headers.push(k, v));
  const [status, flat, kind, body] = await new Promise((resolve) =>
    go.handle(request.method, request.url, headers, gate, (...a) => resolve(a)),
  );
  return toResponse(status, flat, kind, body);
}

export default {
  async fetch(request, env, ctx) {
    try {
      return await handle(request, env, ctx);
    } catch (e) {
      console.error("kv0 edge:", e && e.stack ? e.stack : e);
      return errorResponse(500, "Internal", "the worker failed: " + String((e && e.message) || e));
    }
  },
};
