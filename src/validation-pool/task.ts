import { Buffer } from 'node:buffer';
import { workerData } from 'node:worker_threads';
import { buildCatalogue } from '../domain/validation/index.js';
import { validateAccountText, type AccountTextOutcome } from './account-text.js';
import type { AccountTask, PoolData } from './types.js';

// The worker thread's entry (loaded by piscina): pure validation, no Fastify, database or Redis.

const catalogue = buildCatalogue((workerData as PoolData).catalogueExtra);

export default function validateAccountTask(task: AccountTask): AccountTextOutcome {
  // Decoded as Fastify decodes a JSON body it parses itself.
  const text = Buffer.from(task.body.buffer, task.body.byteOffset, task.body.byteLength).toString('utf8');
  return validateAccountText(text, { region: task.region, today: task.today, catalogue });
}
