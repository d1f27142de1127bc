import { createHash } from 'node:crypto';
import type { ApiClient, Answer } from './http.js';
import type { InputLine } from './input.js';
import { fieldErrors, refusalOutcome, type Result } from './outcomes.js';
import { normaliseIdentifier } from '../domain/identifiers.js';
import { identifyLine } from './identity.js';
import type { ResumeState } from './state.js';

export type MigrateOptions = {
  mode: 'v1' | 'v2';
  team: string | null;
  dryRun: boolean;
  stop: AbortSignal;
  /** How long the status of one account is followed before the line ends `failed` (`status_unknown`). */
  pollTimeoutMs: number;
};

/** A status that keeps answering 404 this many times in a row names no account the service has. */
const MAX_NOT_FOUND = 10;

const V2_TERMINAL = new Set(['PROCESSED', 'ERRORED', 'CANCELLED', 'DRY_RUN_SUCCEEDED', 'DRY_RUN_ERRORED']);

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * One account of `migrate`: skipped when the state file says it is done with this payload; otherwise
 * staged then created (v1), or scheduled then followed until its task ends (v2). Its result is recorded in
 * the state file as soon as it is known.
 */
export function migrateAccount(api: ApiClient, state: ResumeState, options: MigrateOptions) {
  return async (line: Extract<InputLine, { ok: true }>): Promise<Result> => {
    const started = Date.now();
    const named = identifyLine(line);
    // The service trims identifiers and keys them in NFC: the state and the status polls use the same form.
    const who = {
      import_supplier: named.import_supplier === null ? null : normaliseIdentifier(named.import_supplier),
      external_account_number:
        named.external_account_number === null ? null : normaliseIdentifier(named.external_account_number),
    };
    const key =
      who.import_supplier && who.external_account_number
        ? `${who.import_supplier}/${who.external_account_number}`
        : null;
    const hash = createHash('sha256').update(line.text).digest('hex');
    if (key) {
      const known = state.decide(key);
      if (known.action === 'done')
        return { ...known.result, line: line.line, attempts: 0, ms: 0, done_earlier: true };
    }
    let attempts = 0;
    const finish = (
      r: Omit<Result, 'line' | 'attempts' | 'ms' | 'import_supplier' | 'external_account_number'>,
    ) => {
      const result: Result = { line: line.line, ...who, ...r, attempts, ms: Date.now() - started };
      if (key && result.outcome !== 'failed') state.record(key, hash, options.dryRun, result);
      return result;
    };
    const refused = (answer: Answer) => {
      const { outcome, kraken } = refusalOutcome(answer.status, answer.body);
      return finish({
        outcome,
        http_status: answer.status,
        kraken_account_number: kraken,
        errors: outcome === 'already_imported' || outcome === 'dry_run_ok' ? [] : fieldErrors(answer.body),
      });
    };
    /**
     * Every wait for a status is bounded: after `pollTimeoutMs`, or after 404s in a row, the line ends `failed`
     * with `status_unknown` and the last status seen, rather than waiting for ever.
     */
    const polling = { deadline: 0, notFound: 0, last: 'none' };
    const pollBudgetLeft = (status: number, seen: string | undefined) => {
      if (polling.deadline === 0) polling.deadline = Date.now() + options.pollTimeoutMs;
      polling.notFound = status === 404 ? polling.notFound + 1 : 0;
      polling.last = seen ?? `HTTP ${status}`;
      return polling.notFound < MAX_NOT_FOUND && Date.now() < polling.deadline;
    };
    const statusUnknown = (status: number) =>
      finish({
        outcome: 'failed',
        http_status: status,
        kraken_account_number: null,
        // The last status seen stays in http_status; the code says why the line ended.
        errors: [{ code: 'status_unknown', attr: 'non_field_errors' }],
      });
    const send = async (method: string, path: string, body?: unknown, retry503 = true) => {
      const answer = await api.request(method, path, body, { retry503 });
      attempts += answer.attempts;
      return answer;
    };

    if (options.mode === 'v2') {
      const payload = ('value' in line ? line.value : JSON.parse(line.text)) as Record<string, unknown>;
      const withTeam =
        options.team && payload.operations_team_name === undefined
          ? { ...payload, operations_team_name: options.team }
          : payload;
      const scheduled = await send('POST', '/v2/data-import/accounts/', {
        payload: withTeam,
        task_params: { is_dry_run: options.dryRun },
      });
      if (scheduled.status !== 201) return refused(scheduled);
      const path = `/v2/data-import/accounts/${encodeURIComponent(who.import_supplier!)}/${encodeURIComponent(who.external_account_number!)}/`;
      for (let wait = 500; ; wait = Math.min(wait * 1.5, 5_000)) {
        await sleep(wait);
        const status = await send('GET', path);
        const body = status.body as {
          status?: string;
          kraken_identifier?: string | null;
          latest_error?: { code: string } | null;
          latest_event?: { data?: { errors?: { code: string; attr: string }[] } } | null;
        };
        if (status.status !== 200 || !body.status || !V2_TERMINAL.has(body.status)) {
          if (!pollBudgetLeft(status.status, body.status)) return statusUnknown(status.status);
          if (options.stop.aborted && status.status === 200) continue;
          if (status.status !== 200 && status.status !== 404)
            return finish({
              outcome: 'failed',
              http_status: status.status,
              kraken_account_number: null,
              errors: fieldErrors(status.body),
            });
          continue;
        }
        const errors =
          body.latest_event?.data?.errors ??
          (body.latest_error ? [{ code: body.latest_error.code, attr: 'non_field_errors' }] : []);
        switch (body.status) {
          case 'PROCESSED':
            return finish({
              outcome: 'created',
              http_status: 200,
              kraken_account_number: body.kraken_identifier ?? null,
              errors: [],
            });
          case 'DRY_RUN_SUCCEEDED':
            return finish({
              outcome: 'dry_run_ok',
              http_status: 200,
              kraken_account_number: null,
              errors: [],
            });
          default: {
            const code = body.latest_error?.code;
            const outcome =
              code === 'account_failed_validation' || code === 'operations_team_name_does_not_exist'
                ? 'validation_failed'
                : code === 'account_import_process_skipped'
                  ? 'skipped'
                  : code === 'import_supplier_migration_not_ongoing'
                    ? 'supplier_closed'
                    : 'failed';
            return finish({ outcome, http_status: 200, kraken_account_number: null, errors });
          }
        }
      }
    }

    const staged = await send('POST', '/v1/data-import/account-import-process/create-or-update/', line.text);
    if (staged.status !== 200 && staged.status !== 201) return refused(staged);
    const createBody = {
      external_account_number: who.external_account_number,
      import_supplier_code: who.import_supplier,
      operations_team_name: options.team,
      ...(options.dryRun ? { dry_run: true } : {}),
    };
    for (let round = 1; ; round++) {
      const created = await send(
        'POST',
        '/v1/data-import/account-import-process/process/',
        createBody,
        false,
      );
      if (created.status === 201) {
        const number = (created.body as { kraken_account_number?: string }).kraken_account_number ?? null;
        return finish({ outcome: 'created', http_status: 201, kraken_account_number: number, errors: [] });
      }
      const code = (created.body as { code?: string } | null)?.code;
      // Another create of the account runs: most likely this line's own earlier one, whose answer was a 503
      // (a Redis failover interrupted the wait) while its job went on. Followed like a pending one.
      const running = created.status === 400 && code === 'account_import_in_progress';
      if ((created.status === 503 || running) && round >= 10) return refused(created);
      if ((created.status === 503 && code === 'account_creation_pending') || running) {
        // The creation goes on on the server: follow it rather than send it again.
        const path = `/v1/data-import/account-transfer-status/${encodeURIComponent(who.import_supplier!)}/${encodeURIComponent(who.external_account_number!)}/`;
        for (;;) {
          await sleep(2_000);
          const status = await send('GET', path);
          const body = status.body as { status?: string; kraken_account_number?: string };
          if (body.status === 'COMPLETED')
            return finish({
              outcome: 'created',
              http_status: 201,
              kraken_account_number: body.kraken_account_number ?? null,
              errors: [],
            });
          if (body.status === 'UNKNOWN') break;
          if (!pollBudgetLeft(status.status, body.status)) return statusUnknown(status.status);
        }
        continue;
      }
      if (created.status === 503) {
        await sleep(2_000);
        continue;
      }
      return refused(created);
    }
  };
}
