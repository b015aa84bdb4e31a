// The reference figure of `benchfleet bench query --duckdb`: the same
// filtered query in DuckDB, over the same index part files, in the same run.
// It selects the doc column (the result document) of the matching rows, as
// benchfleet's index query returns the documents; benchfleet additionally
// decodes them. Input (environment): BF_GLOB, BF_WHERE (an SQL condition
// built by the Go side with quoted literals), BF_REPEAT. Output: one JSON
// line {"rows": N, "runs_ms": [...]}. BF_DUCKDB_DIR is where
// scripts/install-duckdb.sh installed @duckdb/node-api.
import { createRequire } from 'node:module';

const require = createRequire(process.env.BF_DUCKDB_DIR + '/');
const { DuckDBInstance } = require('@duckdb/node-api');

const glob = process.env.BF_GLOB;
const where = process.env.BF_WHERE || 'true';
const repeat = Number(process.env.BF_REPEAT || '3');
const db = await DuckDBInstance.create(':memory:');
const c = await db.connect();
const sql = `SELECT doc FROM read_parquet('${glob.replaceAll("'", "''")}', hive_partitioning = true) WHERE ${where}`;
const runs = [];
let rows = 0;
for (let i = 0; i < repeat; i++) {
	const t0 = process.hrtime.bigint();
	const r = await c.runAndReadAll(sql);
	rows = r.currentRowCount;
	runs.push(Number(process.hrtime.bigint() - t0) / 1e6);
}
console.log(JSON.stringify({ rows, runs_ms: runs }));
