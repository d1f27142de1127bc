import { mkdirSync, readFileSync, unlinkSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { UsageError } from './http.js';
import type { Outcome, Result } from './outcomes.js';
import type { RunHistory, RunRecord } from './run-history.js';

/**
 * What a state's results depend on: the service, the organisation (the API key's) and the options that change
 * an account's outcome. A state belongs to one target: a run with another refuses it (a rehearsal against a
 * staging service, then the production run from the same folder, must not skip the production accounts).
 */
export type StateTarget = {
  service: string;
  organisation: string;
  /** `reconcile` for a resumed reconciliation (its accounts are `matched`, not created). */
  mode: 'v1' | 'v2' | 'reconcile';
  team: string | null;
  dry_run: boolean;
};

/** Whether the process that wrote a lock file still runs (a lock of a crashed or killed run is taken over). */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * The resume state: per account (supplier code and external number), the hash of the payload last sent and
 * how it ended. A SQLite file (node:sqlite, WAL), written as each account finishes, so a run stopped in any
 * way (Ctrl-C, SIGKILL) loses at most the accounts in flight, which the server's own idempotency makes safe
 * to send again (stage replaces, create of an existing account answers "already imported").
 *
 * It is also the history of the migration's runs (`runs`: one record per run, saved every few seconds while
 * it works and at its end): the state is what makes runs one migration (one target, the accounts a rerun
 * skips), whatever report folder each run writes.
 */
export class ResumeState implements RunHistory {
  private readonly db: DatabaseSync;
  private readonly get;
  private readonly put;
  private readonly insertRun;
  private readonly updateRun;
  private readonly listRuns;
  private readonly lockPath: string;

  /** Opens the state of `target`, taking its lock; a usage error when another run holds it or the target differs. */
  constructor(
    readonly path: string,
    target: StateTarget,
  ) {
    mkdirSync(dirname(path), { recursive: true });
    this.lockPath = `${path}.lock`;
    this.lock();
    try {
      this.db = new DatabaseSync(path);
      // Two processes never write at once (the lock), but a reader (e.g. a copy) may hold it a moment.
      this.db.exec('PRAGMA busy_timeout = 10000; PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL;');
      this.bind(target);
    } catch (err) {
      this.unlock();
      throw err;
    }
    this.db.exec(`CREATE TABLE IF NOT EXISTS accounts (
      key TEXT PRIMARY KEY,
      hash TEXT NOT NULL,
      outcome TEXT NOT NULL,
      dry_run INTEGER NOT NULL,
      result TEXT NOT NULL,
      updated_at TEXT NOT NULL
    )`);
    this.get = this.db.prepare('SELECT hash, outcome, dry_run, result FROM accounts WHERE key = ?');
    this.db.exec('CREATE TABLE IF NOT EXISTS runs (run INTEGER PRIMARY KEY, record TEXT NOT NULL)');
    this.insertRun = this.db.prepare('INSERT INTO runs (record) VALUES (?) RETURNING run');
    this.updateRun = this.db.prepare('UPDATE runs SET record = ? WHERE run = ?');
    this.listRuns = this.db.prepare('SELECT run, record FROM runs ORDER BY run');
    // (prepared after the tables exist)
    this.put = this.db.prepare(
      `INSERT INTO accounts (key, hash, outcome, dry_run, result, updated_at) VALUES (?, ?, ?, ?, ?, ?)
       ON CONFLICT(key) DO UPDATE SET hash = excluded.hash, outcome = excluded.outcome,
         dry_run = excluded.dry_run, result = excluded.result, updated_at = excluded.updated_at`,
    );
  }

  private lock(): void {
    for (let attempt = 0; attempt < 2; attempt++) {
      try {
        writeFileSync(this.lockPath, String(process.pid), { flag: 'wx' });
        return;
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
        const holder = Number(readFileSync(this.lockPath, 'utf8').trim());
        if (Number.isInteger(holder) && holder > 0 && alive(holder))
          throw new UsageError(
            `another run (pid ${holder}) is using the state file; wait for it or pass --state`,
          );
        unlinkSync(this.lockPath);
      }
    }
    throw new UsageError('could not take the state file lock');
  }

  private unlock(): void {
    try {
      if (readFileSync(this.lockPath, 'utf8').trim() === String(process.pid)) unlinkSync(this.lockPath);
    } catch {
      // Already gone.
    }
  }

  /** Records the target of a new state; refuses a state of another target, naming what differs. */
  private bind(target: StateTarget): void {
    this.db.exec(
      'CREATE TABLE IF NOT EXISTS target (id INTEGER PRIMARY KEY CHECK (id = 1), value TEXT NOT NULL)',
    );
    const row = this.db.prepare('SELECT value FROM target WHERE id = 1').get() as
      { value: string } | undefined;
    if (!row) {
      const accounts = this.db
        .prepare("SELECT count(*) AS n FROM sqlite_master WHERE type = 'table' AND name = 'accounts'")
        .get() as { n: number };
      const known =
        accounts.n > 0 &&
        (this.db.prepare('SELECT count(*) AS n FROM accounts').get() as { n: number }).n > 0;
      // A state written before targets were recorded: its results cannot be trusted for any target.
      if (known)
        throw new UsageError(
          'the state file records no target (an older client wrote it); pass a new --state',
        );
      this.db.prepare('INSERT INTO target (id, value) VALUES (1, ?)').run(JSON.stringify(target));
      return;
    }
    const was = JSON.parse(row.value) as StateTarget;
    const names: Record<keyof StateTarget, string> = {
      service: 'IMPORT_BASE_URL',
      organisation: 'organisation (IMPORT_API_KEY)',
      mode: '--mode',
      team: '--team',
      dry_run: '--dry-run',
    };
    const differences = (Object.keys(names) as (keyof StateTarget)[])
      .filter((k) => was[k] !== target[k])
      .map((k) => `${names[k]}: ${JSON.stringify(was[k])} in the state, ${JSON.stringify(target[k])} now`);
    if (differences.length > 0)
      throw new UsageError(
        `the state file belongs to another run (${differences.join('; ')}); pass another --state (or --report) for this one`,
      );
  }

  /**
   * What a rerun does with an account: `done` (skip it, reporting what it ended with) or `run`. Only what no
   * rerun can change is done: an account created (whatever its payload now: an account is created once) or
   * found already imported. Everything else (invalid, skipped, supplier closed, failed, a dry run's success) is
   * sent again, since the data, the supplier or the service may have changed since.
   */
  decide(key: string): { action: 'done'; result: Result } | { action: 'run' } {
    const row = this.get.get(key) as { outcome: Outcome; result: string } | undefined;
    if (!row) return { action: 'run' };
    if (row.outcome === 'created' || row.outcome === 'already_imported')
      return { action: 'done', result: JSON.parse(row.result) as Result };
    return { action: 'run' };
  }

  /**
   * `reconcile --state`: the earlier result of an account that matched with the same expected figures (`hash`),
   * else null (mismatched, not created, or its files changed since: compared again).
   */
  matched(key: string, hash: string): Result | null {
    const row = this.get.get(key) as { hash: string; outcome: Outcome; result: string } | undefined;
    return row?.outcome === 'matched' && row.hash === hash ? (JSON.parse(row.result) as Result) : null;
  }

  record(key: string, hash: string, dryRun: boolean, result: Result): void {
    this.put.run(key, hash, result.outcome, dryRun ? 1 : 0, JSON.stringify(result), new Date().toISOString());
  }

  beginRun(record: RunRecord): number {
    const { run } = this.insertRun.get(JSON.stringify(record)) as { run: number };
    return run;
  }

  saveRun(record: RunRecord): void {
    this.updateRun.run(JSON.stringify(record), record.run);
  }

  runs(): RunRecord[] {
    return (this.listRuns.all() as { run: number; record: string }[]).map((row) => ({
      ...(JSON.parse(row.record) as RunRecord),
      run: row.run,
    }));
  }

  close(): void {
    this.db.close();
    this.unlock();
  }
}
