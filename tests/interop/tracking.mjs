// tracking.mjs: lancedb's side of the tracking interop test (tracking_test.go),
// against the lancedb KV0_LANCEDB names (lancedb.mjs).
//
//   node tracking.mjs dump REPO OUT
//   node tracking.mjs compact REPO
//
// compact has lancedb optimize every table of the repository (compaction,
// which remaps the series_id index, and index optimization).
//
// dump opens every table of a kv0 tracking repository with lancedb and writes:
//   OUT/<table>.jsonl           every row of runs, params, series, metrics
//                               and records/<table>, in kv0's canonical JSON
//                               Lines (jsonl.mjs), in lancedb's scan order
//   OUT/view.json               the repository as the tracking API shows it,
//                               computed here from lancedb's rows with the
//                               merge rules of core/tracking (runs per field,
//                               params and records newest seq wins, points
//                               newest row per step), the metric points read
//                               through a filtered query on series_id
//   OUT/index.json              metrics' listIndices, indexStats and the
//                               plan of a series_id filter
import fs from "node:fs";
import path from "node:path";
import { lancedb } from "./lancedb.mjs";
import { encodeTableLines, encodeFloat64 } from "./jsonl.mjs";

const MARK = "__kv0_wal__/";
const FIELDS = ["name", "experiment", "description", "tags", "status", "archived", "created_at", "updated_at", "ended_at", "kind", "target"];
const ALL = (1 << FIELDS.length) - 1;
const DELETED = 2 ** 31;
// A row with this bit in fields carries the run's heartbeat in updated_at
// (core/tracking's FieldHeartbeat); ALL leaves it out, as readers that
// predate heartbeats do.
const HEARTBEAT = 1 << FIELDS.length;

const bigJSON = (v) => JSON.stringify(v, (k, x) => (typeof x === "bigint" ? x.toString() : x), 1);

// rowsOf returns, for every row of an Arrow table, the parsed canonical line
// and the raw seq (BigInt, exact) when the table has one.
function rowsOf(table) {
  const lines = [...encodeTableLines(table)];
  const seq = table.getChild("seq");
  return lines.map((l, i) => ({ line: l, row: JSON.parse(l), seq: seq ? seq.get(i) : 0n }));
}

async function dumpTable(db, name, file) {
  const t = await db.openTable(name);
  const table = await t.query().toArrow();
  const rows = rowsOf(table);
  const count = await t.countRows();
  if (count !== rows.length) throw new Error(`${name}: countRows ${count}, scan ${rows.length}`);
  fs.writeFileSync(file, rows.map((r) => r.line).join(""));
  return { t, rows };
}

function mergeRuns(rows) {
  const runs = new Map();
  for (const { row, seq } of rows) {
    if (row.run_id.startsWith(MARK)) continue;
    let a = runs.get(row.run_id);
    if (!a) runs.set(row.run_id, (a = { seqs: {}, info: {}, deleted: false, rows: 0 }));
    if (row.fields === DELETED) {
      a.deleted = true;
      continue;
    }
    const mask = row.fields === null ? ALL : row.fields & ALL;
    a.rows++;
    if (row.fields !== null && row.fields & HEARTBEAT && !("heartbeat_at" in a.seqs && seq < a.seqs.heartbeat_at)) {
      a.seqs.heartbeat_at = seq;
      a.info.heartbeat_at = row.updated_at;
    }
    FIELDS.forEach((f, i) => {
      if (!(mask & (1 << i))) return;
      if (f in a.seqs && seq < a.seqs[f]) return;
      a.seqs[f] = seq;
      a.info[f] = row[f];
    });
  }
  const out = {};
  for (const [id, a] of runs) {
    if (a.deleted || a.rows === 0) continue;
    const r = { run_id: id };
    for (const f of FIELDS) {
      let v = a.info[f];
      if (f === "tags") v = v ?? [];
      else if (f === "archived") v = v ?? false;
      else v = v ?? "";
      r[f] = v;
    }
    r.heartbeat_at = a.info.heartbeat_at ?? "";
    out[id] = r;
  }
  return out;
}

function mergeParams(rows, live) {
  const out = {};
  const seqs = {};
  for (const { row, seq } of rows) {
    if (!live[row.run_id]) continue;
    const k = row.run_id + "\u0000" + row.key;
    if (k in seqs && seq < seqs[k]) continue;
    seqs[k] = seq;
    const num = row.num === null ? null : encodeFloat64(typeof row.num === "string" ? Number(row.num) : row.num);
    (out[row.run_id] ??= {})[row.key] = { value: row.value, num, text: row.text, flag: row.flag };
  }
  return out;
}

async function dump(repo, out) {
  fs.mkdirSync(path.join(out, "records"), { recursive: true });
  const db = await lancedb.connect(repo);
  const runs = await dumpTable(db, "runs", path.join(out, "runs.jsonl"));
  const params = await dumpTable(db, "params", path.join(out, "params.jsonl"));
  const series = await dumpTable(db, "series", path.join(out, "series.jsonl"));
  const metrics = await dumpTable(db, "metrics", path.join(out, "metrics.jsonl"));

  const view = { runs: mergeRuns(runs.rows) };
  view.params = mergeParams(params.rows, view.runs);
  // Series (ids as BigInt: JSON numbers would lose digits), earliest row
  // of each id.
  view.series = {};
  view.points = {};
  const seriesIds = [];
  {
    const tbl = await series.t.query().toArrow();
    const [sid, rid, name, cx] = ["series_id", "run_id", "name", "context"].map((c) => tbl.getChild(c));
    for (let i = 0; i < tbl.numRows; i++) {
      if (!view.runs[rid.get(i)]) continue;
      const k = String(sid.get(i));
      if (k in view.series) continue;
      view.series[k] = { run_id: rid.get(i), name: name.get(i), context: cx.get(i) };
      seriesIds.push(sid.get(i));
    }
  }
  // Points: a filtered query per series (lance answers it from the BTree
  // index for the fragments it covers); the newest row (highest row id)
  // of each step wins, as in the Go reader.
  for (const sid of [...new Set(seriesIds)]) {
    const tbl = await metrics.t.query().where(`series_id = arrow_cast('${sid}', 'UInt64')`).withRowId().toArrow();
    const rows = rowsOf(tbl);
    const rowid = tbl.getChild("_rowid");
    const pts = rows.map((r, i) => ({ ...r.row, rowid: rowid.get(i) }));
    pts.sort((a, b) => (a.step !== b.step ? a.step - b.step : a.rowid < b.rowid ? -1 : a.rowid > b.rowid ? 1 : 0));
    const keep = pts.filter((p, i) => i + 1 === pts.length || pts[i + 1].step !== p.step);
    view.points[String(sid)] = {
      steps: keep.map((p) => p.step),
      epochs: keep.map((p) => p.epoch),
      timestamps: keep.map((p) => p.timestamp),
      values: keep.map((p) => encodeFloat64(typeof p.value === "string" ? Number(p.value) : p.value)),
    };
  }
  {
    const tbl = await metrics.t.query().where("series_id = 0").toArrow();
    view.stats_rows = tbl.numRows;
  }

  // Records: one lancedb table per records table.
  view.records = {};
  const recDir = path.join(repo, "records");
  if (fs.existsSync(recDir)) {
    const rdb = await lancedb.connect(recDir);
    for (const name of (await rdb.tableNames()).sort()) {
      const { rows } = await dumpTable(rdb, name, path.join(out, "records", `${name}.jsonl`));
      const newest = new Map();
      for (const { row, seq } of rows) {
        const k = (row.run_id ?? "") + "\u0000" + row.item_id;
        const old = newest.get(k);
        if (!old || seq >= old.seq) newest.set(k, { row, seq });
      }
      const list = [];
      for (const { row } of newest.values()) {
        if (row.data === null || (row.run_id && !view.runs[row.run_id])) continue;
        list.push({ run_id: row.run_id ?? "", item_id: row.item_id, data: row.data });
      }
      list.sort((a, b) => (a.run_id < b.run_id ? -1 : a.run_id > b.run_id ? 1 : a.item_id < b.item_id ? -1 : a.item_id > b.item_id ? 1 : 0));
      view.records[name] = list;
    }
  }
  fs.writeFileSync(path.join(out, "view.json"), bigJSON(view));

  const indices = await metrics.t.listIndices();
  const index = { indices, stats: null, plan: "" };
  const named = indices.find((i) => i.name === "series_id_idx");
  if (named) index.stats = await metrics.t.indexStats("series_id_idx");
  if (seriesIds.length) index.plan = await metrics.t.query().where(`series_id = arrow_cast('${seriesIds[0]}', 'UInt64')`).explainPlan();
  fs.writeFileSync(path.join(out, "index.json"), bigJSON(index));
}

async function compact(repo) {
  const tables = [];
  const db = await lancedb.connect(repo);
  for (const name of await db.tableNames()) tables.push(await db.openTable(name));
  const recDir = path.join(repo, "records");
  if (fs.existsSync(recDir)) {
    const rdb = await lancedb.connect(recDir);
    for (const name of await rdb.tableNames()) tables.push(await rdb.openTable(name));
  }
  for (const t of tables) await t.optimize();
}

const [cmd, ...args] = process.argv.slice(2);
const fns = { dump, compact };
if (!fns[cmd]) {
  console.error(`unknown command ${cmd}`);
  process.exit(2);
}
await fns[cmd](...args);
