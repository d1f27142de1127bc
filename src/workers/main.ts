import { pino } from 'pino';
import { loadConfig } from '../config.js';
import { stopTracing } from '../infra/telemetry/index.js';
import { openDatabase, type Database } from '../storage/database.js';
import { loggerOptions } from '../logger.js';
import { startWorkers, type RunningWorkers } from './runtime.js';

/** The `worker` process (started by index.ts): every queue's worker. The only file that starts workers outside tests. */
const config = loadConfig();
const log = pino(loggerOptions(config.LOG_LEVEL, 'worker'));
const started: { db?: Database; running?: RunningWorkers } = {};

// Registered before anything starts, so a SIGTERM at any moment gets a clean shutdown.
let closing = false;
async function shutdown(signal: string): Promise<void> {
  if (closing) return;
  closing = true;
  log.info({ signal }, 'closing workers');
  const force = setTimeout(() => process.exit(1), 30_000);
  await started.running?.close();
  await started.db?.close();
  await stopTracing();
  clearTimeout(force);
  process.exit(0);
}
process.on('SIGTERM', () => void shutdown('SIGTERM'));
process.on('SIGINT', () => void shutdown('SIGINT'));

const db = await openDatabase(config);
started.db = db;
if (!closing) {
  const running = startWorkers({ config, db, log });
  started.running = running;
  log.info(
    { queues: running.workers.map((w) => w.name), concurrency: config.WORKER_CONCURRENCY },
    'workers started',
  );
}
