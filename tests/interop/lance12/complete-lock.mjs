// complete-lock.mjs: completes package-lock.json after `npm install` on a
// machine whose registry serves only some of lancedb's native packages.
//
//   npm install --no-audit --no-fund && node complete-lock.mjs
//
// lancedb lists one optional package per platform
// (@lancedb/lancedb-<os>-<cpu>[-<abi>]); npm install leaves out of the lock
// the ones it cannot fetch, and npm ci then refuses the lock as out of sync
// with package.json. This adds an entry for each missing one with the
// os, cpu and libc its name gives, so npm ci skips it on other platforms;
// on its own platform npm ci fetches it by name and version.
import fs from "node:fs";

const file = new URL("package-lock.json", import.meta.url);
const lock = JSON.parse(fs.readFileSync(file, "utf8"));
const main = lock.packages["node_modules/@lancedb/lancedb"];
if (!main) throw new Error("package-lock.json has no @lancedb/lancedb: run npm install first");
const CPU = { x64: "x64", arm64: "arm64" };
const LIBC = { gnu: "glibc", musl: "musl" };
let added = 0;
for (const [name, version] of Object.entries(main.optionalDependencies ?? {})) {
  const m = /^@lancedb\/lancedb-(darwin|linux|win32)-(x64|arm64)(?:-(gnu|musl|msvc))?$/.exec(name);
  const key = `node_modules/${name}`;
  if (!m || lock.packages[key]) continue;
  const entry = { version, cpu: [CPU[m[2]]] };
  if (LIBC[m[3]]) entry.libc = [LIBC[m[3]]];
  Object.assign(entry, { license: main.license, optional: true, os: [m[1]] });
  lock.packages[key] = entry;
  added++;
  console.error(`added ${name}@${version} (${entry.os} ${entry.cpu}${entry.libc ? " " + entry.libc : ""})`);
}
// npm writes packages in key order; keep that so later installs diff cleanly.
lock.packages = Object.fromEntries(Object.entries(lock.packages).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
fs.writeFileSync(file, JSON.stringify(lock, null, 2) + "\n");
console.error(`${added} entries added`);
