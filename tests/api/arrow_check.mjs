// Reads the rows of each dataset named on the command line from kv0's HTTP
// read API twice, as an Arrow IPC stream (format=arrow, decoded by npm
// apache-arrow) and as JSON Lines (format=jsonl), and checks that the Arrow
// table encodes to exactly the JSON Lines (tests/interop/jsonl.mjs holds
// the canonical encoding in JavaScript).
//
//   node tests/api/arrow_check.mjs BASE_URL QUERY PATH...
//
// Prints one line per dataset; exits 1 on the first difference.
const arrow = await import(new URL("../interop/node_modules/apache-arrow/Arrow.node.mjs", import.meta.url));
const { encodeTableLines } = await import(new URL("../interop/jsonl.mjs", import.meta.url));

const [base, query, ...paths] = process.argv.slice(2);
let failed = false;
for (const path of paths) {
  const url = `${base}/api/v1/datasets/${path}/rows?${query}`;
  const ar = await fetch(url + "&format=arrow");
  const jl = await fetch(url + "&format=jsonl");
  if (ar.status !== 200 || jl.status !== 200) {
    console.log(`FAIL ${path}: status ${ar.status} / ${jl.status}: ${await ar.text()}`);
    failed = true;
    continue;
  }
  if (ar.headers.get("content-type") !== "application/vnd.apache.arrow.stream") {
    console.log(`FAIL ${path}: content-type ${ar.headers.get("content-type")}`);
    failed = true;
  }
  const table = arrow.tableFromIPC(new Uint8Array(await ar.arrayBuffer()));
  const want = await jl.text();
  let got = "";
  for (const line of encodeTableLines(table)) got += line;
  if (got !== want) {
    let i = 0;
    while (i < got.length && got[i] === want[i]) i++;
    console.log(`FAIL ${path}: arrow and jsonl differ at byte ${i}:\n arrow: ${got.slice(Math.max(0, i - 80), i + 80)}\n jsonl: ${want.slice(Math.max(0, i - 80), i + 80)}`);
    failed = true;
    continue;
  }
  console.log(`ok ${path}: ${table.numRows} rows, ${table.schema.fields.length} columns, ${table.batches.length} batches`);
}
process.exit(failed ? 1 : 0);
