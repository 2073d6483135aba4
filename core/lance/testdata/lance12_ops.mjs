// lance 12's side of core/lance's TestLance12OnKv0Dataset: lancedb 0.39
// (lance 12) reads, appends to, deletes from, updates and compacts a
// dataset kv0 wrote in format 2.2.
//
//   node lance12_ops.mjs INTEROP_DIR LANCEDB_DIR ROOT dump OUT
//       the latest version of ROOT/t.lance as OUT (canonical JSON Lines,
//       the twin of core/jsonl), after checking countRows against the scan
//   node lance12_ops.mjs INTEROP_DIR LANCEDB_DIR ROOT mutate
//       add the first 100 rows again, delete ids divisible by 3, set the
//       label of id 7, then optimize (compaction)
//
// INTEROP_DIR is tests/interop (for jsonl.mjs); LANCEDB_DIR a folder whose
// node_modules holds lancedb 0.39.
import fs from "node:fs";
import path from "node:path";
import { createRequire } from "node:module";
import { pathToFileURL } from "node:url";

const [interop, lancedbDir, root, cmd, out] = process.argv.slice(2);
const require = createRequire(path.join(lancedbDir, "package.json"));
const lancedb = require("@lancedb/lancedb");
const { encodeTableLines } = await import(pathToFileURL(path.join(interop, "jsonl.mjs")).href);

const db = await lancedb.connect(root);
const t = await db.openTable("t");
if (cmd === "dump") {
  const table = await t.query().toArrow();
  let text = "";
  let rows = 0;
  for (const line of encodeTableLines(table)) {
    text += line;
    rows++;
  }
  const count = await t.countRows();
  if (count !== rows) throw new Error(`countRows ${count}, scan ${rows}`);
  fs.writeFileSync(out, text);
} else if (cmd === "mutate") {
  const some = await t.query().limit(100).toArrow();
  await t.add(some);
  await t.delete("id % 3 = 0");
  await t.update({ where: "id = 7", valuesSql: { label: "'updated by lance 12'" } });
  const stats = await t.optimize();
  if (!stats.compaction || stats.compaction.fragmentsRemoved === 0) {
    throw new Error(`optimize compacted nothing: ${JSON.stringify(stats)}`);
  }
} else {
  throw new Error(`unknown command ${cmd}`);
}
