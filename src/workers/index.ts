import { pino } from 'pino';
import { loadConfig } from '../config.js';
import { openDatabase, type Database } from '../infra/mongo.js';
import { loggerOptions } from '../logger.js';
import { startWorkers, type RunningWorkers } from './runtime.js';

/** The `worker` process: every queue's worker. The only file that starts workers outside tests. */
const config = loadConfig();
const log = pino(loggerOptions(config.LOG_LEVEL, 'worker'));
let db: Database | undefined;
let running: RunningWorkers | undefined;

// Registered before anything starts, so a SIGTERM at any moment gets a clean shutdown.
let closing = false;
async function shutdown(signal: string): Promise<void> {
  if (closing) return;
  closing = true;
  log.info({ signal }, 'closing workers');
  const force = setTimeout(() => process.exit(1), 30_000);
  await running?.close();
  await db?.close();
  clearTimeout(force);
  process.exit(0);
}
process.on('SIGTERM', () => void shutdown('SIGTERM'));
process.on('SIGINT', () => void shutdown('SIGINT'));

db = await openDatabase(config.MONGO_URL);
if (!closing) {
  running = startWorkers({ config, db, log });
  log.info(
    { queues: running.workers.map((w) => w.name), concurrency: config.WORKER_CONCURRENCY },
    'workers started',
  );
}
