// lancedb.mjs: the lancedb install the interop scripts use.
//
// KV0_LANCEDB names a folder, relative to this one, whose node_modules holds
// @lancedb/lancedb and apache-arrow: "." (the default) is lancedb 0.31.0
// (lance 8, package-lock.json here), "lance12" is lancedb 0.39.0 (lance 12,
// lance12/package-lock.json). Both packages are loaded from that folder
// alone, never from a parent's node_modules, so a missing install fails
// instead of quietly testing the other lance.
//
//   lancedb      the module (connect, ...)
//   arrow        apache-arrow's CommonJS build, the one lancedb hands tables of
//   lancedbVersion, lanceMajor   "0.39.0" and 12, say
import fs from "node:fs";
import path from "node:path";
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const dir = path.resolve(here, process.env.KV0_LANCEDB || ".");
const modules = path.join(dir, "node_modules");
const require = createRequire(path.join(dir, "package.json"));

function load(name) {
  const file = require.resolve(name);
  if (!file.startsWith(modules + path.sep)) {
    throw new Error(`${name} resolves to ${file}, outside ${modules}: run npm ci in ${dir}`);
  }
  return require(name);
}

export const lancedb = load("@lancedb/lancedb");
export const arrow = load("apache-arrow");
export const lancedbVersion = JSON.parse(fs.readFileSync(path.join(modules, "@lancedb", "lancedb", "package.json"), "utf8")).version;

// LANCE_OF maps the pinned lancedb releases to the lance they bundle.
const LANCE_OF = { "0.31.0": 8, "0.39.0": 12 };
export const lanceMajor = LANCE_OF[lancedbVersion];
if (!lanceMajor) throw new Error(`lancedb ${lancedbVersion} in ${dir} is not one of the pinned releases ${Object.keys(LANCE_OF)}`);
