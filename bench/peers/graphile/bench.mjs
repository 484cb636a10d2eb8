// graphile-worker's side of `make bench`, driven by bench/peer_graphile.py. Each command prints
// one JSON object on its last stdout line (as the Python adapters do); its logs go to stderr.
//
//   node bench.mjs migrate  --url URL
//   node bench.mjs enqueue  --url URL --n N [--bulk]          addJob one at a time, or addJobs
//                                                             1,000 a call
//   node bench.mjs worker   --url URL [--concurrency C] [--local-queue S] [--batch-delay D]
//                           [--pool P] [--continuous]          runOnce (drains, then exits), or
//                                                             run until SIGTERM (pickup)
//
// The worker options left out stay at graphile-worker's own defaults (WorkerPreset). Its job
// is a no-op that notes the moment the first job started and, when the environment names
// BENCH_STAMP_FILE and the payload carries `i`, appends `<i> <epoch seconds>` there, the
// format bench/common.py reads.
import { appendFileSync } from "node:fs";
import { performance } from "node:perf_hooks";
import { parseArgs } from "node:util";

import { Logger, makeWorkerUtils, run, runMigrations, runOnce } from "graphile-worker";

const BULK_CHUNK = 1000;

const now = () => (performance.timeOrigin + performance.now()) / 1000;

// Errors only, on stderr: stdout carries the answer.
const logger = new Logger(() => (level, message) => {
  if (level === "error") console.error(`[graphile-worker] ${message}`);
});

const { positionals, values: opts } = parseArgs({
  allowPositionals: true,
  options: {
    url: { type: "string" },
    n: { type: "string", default: "1000" },
    bulk: { type: "boolean", default: false },
    concurrency: { type: "string" },
    "local-queue": { type: "string" },
    "batch-delay": { type: "string" },
    pool: { type: "string" },
    continuous: { type: "boolean", default: false },
  },
});

function workerPreset() {
  const worker = { connectionString: opts.url, logger };
  if (opts.concurrency) worker.concurrentJobs = Number(opts.concurrency);
  if (opts.pool) worker.maxPoolSize = Number(opts.pool);
  if (opts["local-queue"]) worker.localQueue = { size: Number(opts["local-queue"]) };
  if (opts["batch-delay"]) {
    worker.completeJobBatchDelay = Number(opts["batch-delay"]);
    worker.failJobBatchDelay = Number(opts["batch-delay"]);
  }
  return { worker };
}

function emit(result) {
  process.stdout.write("\n" + JSON.stringify(result) + "\n");
}

async function enqueue() {
  const n = Number(opts.n);
  const utils = await makeWorkerUtils({ connectionString: opts.url, logger });
  try {
    const t0 = performance.now();
    if (opts.bulk) {
      for (let start = 0; start < n; start += BULK_CHUNK) {
        const k = Math.min(BULK_CHUNK, n - start);
        await utils.addJobs(Array.from({ length: k }, () => ({ identifier: "noop", payload: {} })));
      }
    } else {
      for (let i = 0; i < n; i++) await utils.addJob("noop", {});
    }
    emit({ rate: n / ((performance.now() - t0) / 1000) });
  } finally {
    await utils.release();
  }
}

async function worker() {
  const stampFile = process.env.BENCH_STAMP_FILE;
  let first = null;
  const taskList = {
    noop: async (payload) => {
      if (first === null) first = now();
      if (stampFile && payload && payload.i !== undefined) {
        appendFileSync(stampFile, `${payload.i} ${now()}\n`);
      }
    },
  };
  const options = { preset: workerPreset(), taskList, noHandleSignals: opts.continuous };
  if (!opts.continuous) {
    await runOnce(options);
    emit({ first, done: now() });
    return;
  }
  const runner = await run(options);
  const stop = () => runner.stop();
  process.once("SIGTERM", stop);
  process.once("SIGINT", stop);
  await runner.promise;
  emit({ first, done: now() });
}

const commands = {
  migrate: () => runMigrations({ connectionString: opts.url, logger }),
  enqueue,
  worker,
};
const command = commands[positionals[0]];
if (!command) {
  console.error(`usage: node bench.mjs ${Object.keys(commands).join("|")} --url URL ...`);
  process.exit(2);
}
await command();
