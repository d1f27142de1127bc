import { workerData } from 'node:worker_threads';
import { buildCatalogue } from '../../vocabulary/catalogue.js';
import { validateAccountText, type AccountTextOutcome } from './account-text.js';
import type { AccountTask, PoolData } from './types.js';

// The worker thread's entry (loaded by piscina): pure validation, no Fastify, database or Redis.

const catalogue = buildCatalogue((workerData as PoolData).catalogueExtra);

export default function validateAccountTask(task: AccountTask): AccountTextOutcome {
  return validateAccountText(task.text, { region: task.region, today: task.today, catalogue });
}
