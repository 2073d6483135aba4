// lancedb_s3.mjs: lancedb 0.31's side of the S3 interop test
// (lancedb_test.go). The S3 server's address and credentials come from the
// environment (KV0_S3_ENDPOINT, KV0_S3_ACCESS_KEY, KV0_S3_SECRET_KEY).
//
//   node lancedb_s3.mjs read URI OUT    dump table t at URI as JSON lines into OUT
//   node lancedb_s3.mjs write URI       create table t at URI (id int64, x float64)
import fs from "node:fs";
import { createRequire } from "node:module";
import { encodeTableLines } from "../interop/jsonl.mjs";

// lancedb and apache-arrow are installed beside the interop suite.
const require = createRequire(new URL("../interop/package.json", import.meta.url));
const lancedb = require("@lancedb/lancedb");
const arrow = require("apache-arrow");

const storageOptions = {
  aws_endpoint: process.env.KV0_S3_ENDPOINT,
  aws_access_key_id: process.env.KV0_S3_ACCESS_KEY,
  aws_secret_access_key: process.env.KV0_S3_SECRET_KEY,
  aws_region: "us-east-1",
  allow_http: "true",
  aws_virtual_hosted_style_request: "false",
};

const [cmd, uri, out] = process.argv.slice(2);
// az:// locations are Azurite's (KV0_AZ_ACCOUNT, KV0_AZ_KEY; its address in
// AZURITE_BLOB_STORAGE_URL, where lance's object store looks for it).
const azureOptions = {
  azure_storage_account_name: process.env.KV0_AZ_ACCOUNT,
  azure_storage_account_key: process.env.KV0_AZ_KEY,
  azure_storage_use_emulator: "true",
  allow_http: "true",
};
const db = await lancedb.connect(uri, { storageOptions: uri.startsWith("az://") ? azureOptions : storageOptions });
if (cmd === "read") {
  const t = await db.openTable("t");
  const table = await t.query().toArrow();
  let text = "";
  for (const line of encodeTableLines(table)) text += line;
  fs.writeFileSync(out, text);
} else if (cmd === "write") {
  const n = 1000;
  const id = new BigInt64Array(n);
  const x = new Float64Array(n);
  for (let i = 0; i < n; i++) {
    id[i] = BigInt(i) * 3n;
    x[i] = i / 7;
  }
  const table = arrow.tableFromArrays({ id, x });
  const t = await db.createTable("t", table);
  await t.add(arrow.tableFromArrays({ id: new BigInt64Array([-1n]), x: new Float64Array([0.5]) }));
} else {
  throw new Error(`unknown command ${cmd}`);
}
