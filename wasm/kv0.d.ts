// TypeScript declarations of kv0.mjs, kv0's WebAssembly reader.

/** Where a dataset or repository lives. */
export type Location =
  /** Static mode: any server or CDN answering Range requests (no listing). */
  | string
  /** Signed mode: presigned URLs from `kv0 sign-server`. */
  | { signer: { url: string; token: string }; key?: string };

/** The codes of rejected calls. */
export type ErrorCode = 'NotFound' | 'Forbidden' | 'Network' | 'Corrupt' | 'Unsupported' | 'Invalid' | 'Closed';

/** The Error every call rejects with: `code` says what went wrong; the message names the URL and the file. */
export interface Kv0Error extends Error {
  name: 'Kv0Error';
  code: ErrorCode;
}

export const codes: readonly ErrorCode[];

export interface VersionOptions {
  /** Read this version (versions start at 1). Excludes `tag`. */
  version?: number;
  /** Read the version this tag names. */
  tag?: string;
}

export interface RowsOptions extends VersionOptions {
  /** Columns to return, in this order (default: all). */
  columns?: string[];
  /** The most rows to return. */
  limit?: number;
  /** A filter in kv0's expression language, as `kv0 lance cat --where`. */
  where?: string;
}

/** What `kv0 lance info --json` prints. */
export interface DatasetInfo {
  path: string;
  version: number;
  timestamp: string;
  data_format: string;
  rows: number;
  schema: { name: string; type: string; nullable: boolean }[];
  fragments: {
    id: number;
    physical_rows: number;
    deleted_rows: number;
    files: { path: string; size: number; version: string }[];
    deletion_file?: string;
  }[];
}

/** One element of what `kv0 lance log --json` prints. */
export interface LogEntry {
  version: number;
  timestamp: string;
  operation: string;
  rows_added: number;
  rows_removed: number;
  fragments_added: number;
  fragments_removed: number;
  predicate: string;
  tags: string[];
  rows: number;
}

export interface Lance {
  /** Exactly the bytes `kv0 lance cat LOCATION ...` prints (JSON Lines). */
  cat(location: Location, options?: RowsOptions): Promise<string>;
  /** The value `kv0 lance info --json` prints. */
  info(location: Location, options?: VersionOptions): Promise<DatasetInfo>;
  /** The value `kv0 lance log --json` prints, oldest version first. */
  log(location: Location): Promise<LogEntry[]>;
  /** The rows of `cat` as an Arrow IPC stream (apache-arrow's tableFromIPC reads it). */
  scan(location: Location, options?: RowsOptions): Promise<Uint8Array>;
}

/** A run as `kv0 runs --json` prints it. */
export interface Run {
  run_id: string;
  name?: string;
  experiment?: string;
  description?: string;
  tags: string[];
  status: string;
  archived: boolean;
  created_at: string;
  updated_at: string;
  /** The last heartbeat of the writer (a live run's moves every few seconds). */
  heartbeat_at?: string;
  ended_at?: string;
  kind?: string;
  target?: string;
}

export interface ParamFilter {
  /** A dotted parameter key, e.g. "optimizer.lr". */
  key: string;
  op: '=' | '!=' | '<' | '<=' | '>' | '>=';
  value: number | string | boolean;
}

export interface RunFilter {
  experiment?: string;
  status?: string;
  /** Tags every selected run carries. */
  tags?: string[];
  archived?: boolean;
  params?: ParamFilter[];
}

/** A value JSON cannot hold, as kv0's JSON writes it. */
export type NonFinite = 'NaN' | 'Infinity' | '-Infinity';

/** Statistics of a series, as in `kv0 series --json`. */
export interface SeriesStats {
  /** A 64-bit id as a decimal string. */
  series_id: string;
  count: number;
  first_step: number;
  last_step: number;
  /** The value at the last step (NaN or ±Infinity as a string). */
  last_value: number | NonFinite;
  /** The smallest finite value; "Infinity" when the series has none. */
  min: number | NonFinite;
  min_step: number;
  /** The largest finite value; "-Infinity" when the series has none. */
  max: number | NonFinite;
  max_step: number;
  non_finite: number;
  last_timestamp: string;
}

/** A series of a run, as `kv0 series --json` prints it (ids as decimal strings). */
export interface SeriesInfo {
  series_id: string;
  run_id: string;
  name: string;
  /** JSON object with sorted keys, "{}" for none. */
  context: string;
  created_at: string;
  stats?: SeriesStats;
}

export interface ReadOptions {
  /**
   * Downsample each series to at most this many points (first, last, each bucket's extremes): 0 reads every
   * point, 1 only the last; 2 and 3 reject `Invalid` (no room for a bucket's extremes).
   */
  maxPoints?: number;
  /** Steps in [from, to). */
  steps?: [number, number];
  /** Timestamps in [fromMs, toMs), milliseconds since the epoch. */
  time?: [number, number];
}

export interface Series {
  seriesId: string;
  steps: Float64Array;
  values: Float64Array;
  /** Milliseconds since the epoch, with the microseconds as a fraction. */
  timestamps: Float64Array;
  /** NaN where a point has no epoch. */
  epochs: Float64Array;
  /** When downsampled: each bucket's minimum. */
  mins?: Float64Array;
  /** When downsampled: each bucket's maximum. */
  maxs?: Float64Array;
}

export interface Versions {
  runs: number;
  params: number;
  series: number;
  metrics: number;
  records?: Record<string, number>;
}

export interface Change {
  versions: Versions;
  /** Runs that are new or whose state changed. */
  runs: string[];
  /** Series that are new or gained points. */
  series: string[];
}

/** One record of a records table (repo.records; /api/v1/records/{table}). */
export interface TrackedRecord {
  table: string;
  /** Absent for a record of no run. */
  run_id?: string;
  item_id: string;
  /** The JSON the writer stored. */
  data: unknown;
  /** The write's 64-bit sequence number, as a decimal string. */
  seq: string;
  /** RFC 3339. */
  created_at: string;
}

export interface RecordsOptions {
  /** Only this run's records (a run id). */
  run?: string;
}

export interface WatchOptions {
  /**
   * Milliseconds from the start of one poll to the start of the next (default 2000); polls run one at
   * a time, so one that takes longer is followed at once.
   */
  interval?: number;
  /** Called after every poll (the first only records the state), e.g. for a "live" indicator. */
  onPoll?: (poll: { changed: boolean }) => void;
  /** Called with a poll's error; watching goes on. */
  onError?: (err: Kv0Error) => void;
}

export interface Repo {
  /** The objects `kv0 runs --json` prints, oldest first. */
  runs(filter?: RunFilter): Promise<Run[]>;
  /** `kv0 run REPO ID --json` (an id or a unique name). */
  run(id: string): Promise<Run>;
  /** `kv0 params REPO ID --json`: each parameter's value by its dotted key. */
  params(id: string): Promise<Record<string, unknown>>;
  /** `kv0 series REPO ID --json`. */
  series(runId: string): Promise<SeriesInfo[]>;
  /** Points of the series, one Series per id in the order given. */
  read(seriesIds: string[], options?: ReadOptions): Promise<Series[]>;
  /** Statistics per id in the order given (null for a series without points). */
  stats(seriesIds: string[]): Promise<(SeriesStats | null)[]>;
  /** The newest committed versions of the tables. */
  versions(): Promise<Versions>;
  /**
   * The names of the records tables, sorted. Rejects with Unsupported on a
   * static host (it cannot list); a signed location lists.
   */
  recordTables(): Promise<string[]>;
  /** The table's live records (of one run with `run`), ordered by run and item id. */
  records(table: string, options?: RecordsOptions): Promise<TrackedRecord[]>;
  /** Polls for new versions; returns the function that stops watching. */
  watch(onChange: (change: Change) => void, options?: WatchOptions): () => void;
  close(): Promise<void>;
}

export interface Kv0 {
  lance: Lance;
  /** Opens a tracking repository. */
  openRepo(location: Location, options?: OpenRepoOptions): Promise<Repo>;
}

export interface OpenRepoOptions {
  /**
   * Milliseconds for which the handle reads a table version it confirmed as
   * the newest without asking the server again (default 0: every call
   * checks). A burst of calls then costs one freshness check per table, and
   * a read may miss commits of the last `versionTTL`; `watch` always asks,
   * and reads after a change it reports see the change.
   */
  versionTTL?: number;
  /**
   * Start opening the tables' data files (at most 64 per table) in the
   * background, for a page that goes on to show runs, series and charts:
   * its calls then start from them instead of from a chain of requests.
   */
  prefetch?: boolean;
}

export interface LoadOptions {
  /** URL of kv0.wasm (default: beside kv0.mjs). */
  wasmURL?: string | URL;
  /** URL of wasm_exec.js (default: beside kv0.mjs). */
  wasmExecURL?: string | URL;
  /**
   * In a browser page: run the module in a dedicated Web Worker (same API), so decoding never blocks the page.
   * Default: true in a page whose origin serves kv0.mjs (falling back to the page's thread when the Worker
   * cannot start), false elsewhere (Node, workers, a module from another origin).
   */
  worker?: boolean;
  /** Environment variables of the Go program (for tests). */
  env?: Record<string, string>;
}

export function load(options?: LoadOptions): Promise<Kv0>;

export interface PreloadOptions {
  /**
   * The datasets to preload, as paths under the location ('' for the location itself, a Lance dataset).
   * Default: the four tables of a tracking repository (runs.lance, params.lance, series.lance, metrics.lance).
   */
  datasets?: string[];
  /**
   * Also fetch the footers (last 64 KiB, and the rest of the metadata when it starts earlier) of the data files
   * the latest manifest of each dataset lists, for datasets of at most 64 fragments: what
   * `openRepo(loc, { prefetch: true })` opens. Default false.
   */
  files?: boolean;
  /** Milliseconds after its arrival during which a preloaded answer may be used (default 5000; 0: never). */
  maxAge?: number;
}

/**
 * Fetches, before the module is loaded (it needs no Go code), what opening `location` reads first: each dataset's
 * version hint, then the manifests of the version it names and of the next one (V2 names, then V1 names when
 * neither is there), and with `files` the data files' footers. The module's requests for those URLs and ranges
 * (in a Worker too, when `load()` starts one) are then answered from memory, each once, within `maxAge`; a failed
 * or refused preload, or an answer already taken or expired, leaves the request to the network, and errors keep
 * their codes and messages. Static locations only: a signed location preloads nothing. Resolves, never rejects,
 * with the number of answers kept.
 */
export function preload(location: Location, options?: PreloadOptions): Promise<number>;
