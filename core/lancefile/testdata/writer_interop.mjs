// Reads tables written by kv0's Go writer with lancedb and prints every row
// in kv0's canonical JSON Lines (the twin of core/jsonl).
//
//   node writer_interop.mjs INTEROP_DIR DBDIR TABLE[:col=cast,...] ...
//
// INTEROP_DIR is tests/interop (for node_modules and jsonl.mjs);
// KV0_LANCEDB_DIR, when set, names another folder whose node_modules holds
// the lancedb to read with (lancedb 0.39 for 2.2 files). For each table it
// prints "## TABLE ROWS" and then the rows. When the table name is
// followed by ":col,col=Type,...", exactly those columns are read, the ones
// with a type through arrow_cast (arrow-js cannot decode LargeList). A
// trailing "@FILTER" then prints "## TABLE@ ROWS" and the rows that match
// the filter, which lance reads by decoding only those rows of the columns
// not in the filter.
import { createRequire } from "node:module";
import path from "node:path";
import { pathToFileURL } from "node:url";

const [interop, dbdir, ...tables] = process.argv.slice(2);
const require = createRequire(path.join(process.env.KV0_LANCEDB_DIR || interop, "package.json"));
const lancedb = require("@lancedb/lancedb");
const { encodeTableLines } = await import(pathToFileURL(path.join(interop, "jsonl.mjs")).href);

const db = await lancedb.connect(dbdir);
const out = [];
for (const arg of tables) {
  const [spec, where] = arg.split("@");
  const [name, castSpec] = spec.split(":");
  const t = await db.openTable(name);
  const rows = await t.countRows();
  const query = () => {
    let q = t.query();
    if (castSpec) {
      const cols = castSpec.split(",").map((kv) => kv.split("="));
      q = q.select(Object.fromEntries(cols.map(([n, ty]) => [n, ty ? `arrow_cast(${n}, '${ty}')` : n])));
    }
    return q;
  };
  const table = await query().toArrow();
  out.push(`## ${name} ${rows}\n`);
  for (const line of encodeTableLines(table)) out.push(line);
  if (where !== undefined) {
    const sel = await query().where(where).toArrow();
    out.push(`## ${name}@ ${sel.numRows}\n`);
    for (const line of encodeTableLines(sel)) out.push(line);
  }
}
process.stdout.write(out.join(""));
