import { EXAMPLE_V2_ACCOUNT_NUMBER } from './guide-outcome.js';

// The guide's v2 account (ACC-2025-000124) as its timeline answers once its task has run: staged by its schedule,
// queued, started on a worker, created; no post-import write and no webhook endpoint in the story. The answer
// example of `getAccountTimeline`, and docs/api.md's (Account timeline), which the guide's test sends.
const window = { start: '2026-11-24T00:10:02Z', end: '2026-11-28T00:10:02Z' };

export const timelineExample = {
  import_supplier_code: 'DEMO',
  external_account_number: 'ACC-2025-000124',
  status: 'PROCESSED',
  as_of: '2026-11-24T00:13:00Z',
  steps: [
    {
      id: 'e:000000:1',
      step: 'staged',
      at: '2026-11-24T00:10:02Z',
      duration_ms: null,
      detail: 'Staged: the payload passed every rule.',
      data: {},
    },
    {
      id: 'e:000001:1',
      step: 'scheduled',
      at: '2026-11-24T00:10:02Z',
      duration_ms: null,
      detail: `Scheduled as task 1: its payload staged, to start from ${window.start} until ${window.end}.`,
      data: {
        task: 1,
        schedule_window_start: window.start,
        schedule_window_end: window.end,
        is_dry_run: false,
      },
    },
    {
      id: 'e:000001:2',
      step: 'queued',
      at: '2026-11-24T00:10:02Z',
      duration_ms: 104,
      detail: 'Queued for a worker; one took it after 104 ms.',
      data: { task: 1 },
    },
    {
      id: 'e:000002:1',
      step: 'started',
      at: '2026-11-24T00:10:03Z',
      duration_ms: 61,
      detail: 'Started on worker worker-7c9f:41 (task 1); it ended after 61 ms.',
      data: { worker: 'worker-7c9f:41', task: 1 },
    },
    {
      id: 'e:000003:1',
      step: 'created',
      at: '2026-11-24T00:10:03Z',
      duration_ms: null,
      detail: `Created as ${EXAMPLE_V2_ACCOUNT_NUMBER}.`,
      data: { kraken_account_number: EXAMPLE_V2_ACCOUNT_NUMBER },
    },
  ],
  next: null,
  truncated: false,
  why: {
    code: 'done',
    detail: `Done: created as ${EXAMPLE_V2_ACCOUNT_NUMBER}.`,
    since: '2026-11-24T00:10:03Z',
    data: { kraken_account_number: EXAMPLE_V2_ACCOUNT_NUMBER, post_import_writes: 0 },
  },
};
