// check.mjs: lancedb's side of the Go → lance interop test (write_test.go),
// against the lancedb KV0_LANCEDB names (lancedb.mjs).
//
//   node check.mjs dump ROOT OUT       every version (and tag) of ROOT/t.lance as
//                                      OUT/v<N>.jsonl, versions.json, tags.json
//   node check.mjs mutate ROOT         lancedb appends, deletes, updates and optimizes
//   node check.mjs createv1 ROOT FMT   a small table with V1 manifest names, data
//                                      files of format FMT (2.0, 2.1, 2.2)
import fs from "node:fs";
import path from "node:path";
import { lancedb, arrow } from "./lancedb.mjs";
import { encodeTableLines } from "./jsonl.mjs";

async function dump(root, out) {
  fs.mkdirSync(out, { recursive: true });
  const db = await lancedb.connect(root);
  const t = await db.openTable("t");
  const versions = (await t.listVersions()).map((v) => Number(v.version)).sort((a, b) => a - b);
  const list = [];
  for (const v of versions) {
    await t.checkout(v);
    const table = await t.query().toArrow();
    let text = "";
    let rows = 0;
    for (const line of encodeTableLines(table)) {
      text += line;
      rows++;
    }
    const count = await t.countRows();
    if (count !== rows) throw new Error(`version ${v}: countRows ${count}, scan ${rows}`);
    fs.writeFileSync(path.join(out, `v${v}.jsonl`), text);
    list.push({ version: v, rows });
  }
  await t.checkoutLatest();
  const tags = {};
  for (const [name, info] of Object.entries(await (await t.tags()).list())) {
    await t.checkout(name);
    tags[name] = { version: Number(info.version), rows: await t.countRows() };
  }
  await t.checkoutLatest();
  fs.writeFileSync(path.join(out, "versions.json"), JSON.stringify(list) + "\n");
  fs.writeFileSync(path.join(out, "tags.json"), JSON.stringify(tags) + "\n");
}

async function mutate(root) {
  const db = await lancedb.connect(root);
  const t = await db.openTable("t");
  const some = await t.query().limit(100).toArrow();
  await t.add(some);
  await t.delete("id % 3 = 0");
  await t.update({ where: "id % 5 = 1", values: { label: "lancedb" } });
  await t.optimize();
}

async function createv1(root, format) {
  const db = await lancedb.connect(root);
  const schema = new arrow.Schema([
    new arrow.Field("id", new arrow.Int64(), false),
    new arrow.Field("label", new arrow.Utf8(), true),
  ]);
  const ids = [];
  const labels = [];
  for (let i = 0; i < 50; i++) {
    ids.push(BigInt(i));
    labels.push(i % 7 === 0 ? null : `row-${i}`);
  }
  const table = arrow.makeTable({ id: arrow.vectorFromArray(ids, new arrow.Int64()), label: arrow.vectorFromArray(labels, new arrow.Utf8()) });
  const fixed = new arrow.Table(schema, table.batches.map((b) => new arrow.RecordBatch(schema, b.data)));
  await db.createTable("t", fixed, { storageOptions: { new_table_enable_v2_manifest_paths: "false", new_table_data_storage_version: format } });
}

const [cmd, ...args] = process.argv.slice(2);
const fns = { dump, mutate, createv1 };
if (!fns[cmd]) {
  console.error(`unknown command ${cmd}`);
  process.exit(2);
}
await fns[cmd](...args);
