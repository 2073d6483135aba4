// Small DOM helpers shared by the views (no dependencies).

/**
 * h creates an element: h('td', {class: 'x', title: 't', onclick: fn}, 'text', child).
 * Attributes named on* become listeners; null/undefined/false attributes
 * and children are skipped; strings become text nodes (never HTML).
 */
export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  if (attrs) {
    for (const [k, v] of Object.entries(attrs)) {
      if (v === null || v === undefined || v === false) continue;
      if (k.startsWith('on') && typeof v === 'function') el.addEventListener(k.slice(2), v);
      else if (k === 'style' && typeof v === 'object') Object.assign(el.style, v);
      else el.setAttribute(k, v === true ? '' : String(v));
    }
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    if (Array.isArray(c)) append(el, c);
    else el.append(typeof c === 'string' || typeof c === 'number' ? document.createTextNode(String(c)) : c);
  }
}

/** svg creates an SVG element with attributes. */
export function svg(tag, attrs, ...children) {
  const el = document.createElementNS('http://www.w3.org/2000/svg', tag);
  if (attrs) for (const [k, v] of Object.entries(attrs)) if (v !== null && v !== undefined && v !== false) el.setAttribute(k, String(v));
  for (const c of children) if (c !== null && c !== undefined && c !== false) el.append(typeof c === 'string' ? document.createTextNode(c) : c);
  return el;
}

/**
 * fmtValue renders a parameter or statistic for a cell: numbers with up to
 * 6 significant digits (integers whole), strings as they are, other
 * values as JSON; undefined as '' (absent).
 */
export function fmtValue(v) {
  if (v === undefined) return '';
  if (typeof v === 'number') {
    if (Number.isNaN(v)) return 'NaN';
    if (!Number.isFinite(v)) return v > 0 ? 'Infinity' : '-Infinity';
    if (Number.isInteger(v) && Math.abs(v) < 1e15) return String(v);
    const a = Math.abs(v);
    if (a !== 0 && (a < 1e-4 || a >= 1e15)) return v.toExponential(4).replace(/\.?0+e/, 'e').replace('e+', 'e');
    return String(Number(v.toPrecision(6)));
  }
  if (typeof v === 'string') return v;
  return JSON.stringify(v);
}

/** errorText is a failure in words: its code and message. */
export function errorText(e) {
  if (!e) return 'unknown error';
  return e.code ? `${e.code}: ${e.message}` : String(e.message ?? e);
}

/**
 * renderGuard returns a function telling whether the render that called it
 * is still the newest on el (a second render of the same element, started
 * while the first waits for data, makes the first stop drawing).
 */
const generations = new WeakMap();
export function renderGuard(el) {
  const g = (generations.get(el) ?? 0) + 1;
  generations.set(el, g);
  return () => generations.get(el) === g;
}

/**
 * limiter returns run(fn), which calls fn with at most n calls in flight
 * (the others wait their turn) and returns its Promise.
 */
export function limiter(n) {
  let active = 0;
  const queue = [];
  const pump = () => {
    while (active < n && queue.length) {
      const { fn, resolve, reject } = queue.shift();
      active++;
      Promise.resolve()
        .then(fn)
        .then(resolve, reject)
        .finally(() => {
          active--;
          pump();
        });
    }
  };
  return (fn) =>
    new Promise((resolve, reject) => {
      queue.push({ fn, resolve, reject });
      pump();
    });
}

/**
 * paramAt finds a parameter by dotted key in the object params(id)
 * returns (dotted keys: {"optimizer.lr": 0.01}) or in a nested tree
 * ({optimizer: {lr: 0.01}}); undefined when absent.
 */
export function paramAt(params, key) {
  if (!params || typeof params !== 'object') return undefined;
  if (Object.hasOwn(params, key)) return params[key];
  const parts = key.split('.');
  for (let i = parts.length - 1; i >= 1; i--) {
    const head = parts.slice(0, i).join('.');
    if (Object.hasOwn(params, head)) {
      const v = paramAt(params[head], parts.slice(i).join('.'));
      if (v !== undefined) return v;
    }
  }
  return undefined;
}

/** statNumber reads a statistic that may be a number or "NaN"/"Infinity" text. */
export function statNumber(v) {
  if (typeof v === 'number') return v;
  if (v === 'NaN') return NaN;
  if (v === 'Infinity') return Infinity;
  if (v === '-Infinity') return -Infinity;
  return v === null || v === undefined ? undefined : Number(v);
}
