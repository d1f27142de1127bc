import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import type { Outcome, Result } from './outcomes.js';

/**
 * The resume state: per account (supplier code and external number), the hash of the payload last sent and
 * how it ended. A SQLite file (node:sqlite, WAL), written as each account finishes, so a run stopped in any
 * way (Ctrl-C, SIGKILL) loses at most the accounts in flight, which the server's own idempotency makes safe
 * to send again (stage replaces, create of an existing account answers "already imported").
 */
export class ResumeState {
  private readonly db: DatabaseSync;
  private readonly get;
  private readonly put;

  constructor(path: string) {
    mkdirSync(dirname(path), { recursive: true });
    this.db = new DatabaseSync(path);
    this.db.exec('PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL;');
    this.db.exec(`CREATE TABLE IF NOT EXISTS accounts (
      key TEXT PRIMARY KEY,
      hash TEXT NOT NULL,
      outcome TEXT NOT NULL,
      dry_run INTEGER NOT NULL,
      result TEXT NOT NULL,
      updated_at TEXT NOT NULL
    )`);
    this.get = this.db.prepare('SELECT hash, outcome, dry_run, result FROM accounts WHERE key = ?');
    this.put = this.db.prepare(
      `INSERT INTO accounts (key, hash, outcome, dry_run, result, updated_at) VALUES (?, ?, ?, ?, ?, ?)
       ON CONFLICT(key) DO UPDATE SET hash = excluded.hash, outcome = excluded.outcome,
         dry_run = excluded.dry_run, result = excluded.result, updated_at = excluded.updated_at`,
    );
  }

  /**
   * What a rerun does with an account: `done` (skip it, reporting what it ended with) or `run`. Created
   * accounts are done whatever their payload now (an account is created once); other final outcomes only with
   * the same payload; a dry-run success counts only for another dry run.
   */
  decide(key: string, hash: string, dryRun: boolean): { action: 'done'; result: Result } | { action: 'run' } {
    const row = this.get.get(key) as
      { hash: string; outcome: Outcome; dry_run: number; result: string } | undefined;
    if (!row) return { action: 'run' };
    const result = JSON.parse(row.result) as Result;
    if (row.outcome === 'created' || row.outcome === 'already_imported') return { action: 'done', result };
    if (row.hash !== hash) return { action: 'run' };
    if (row.outcome === 'dry_run_ok')
      return dryRun && row.dry_run === 1 ? { action: 'done', result } : { action: 'run' };
    if (['validation_failed', 'skipped', 'supplier_closed'].includes(row.outcome))
      return { action: 'done', result };
    return { action: 'run' };
  }

  record(key: string, hash: string, dryRun: boolean, result: Result): void {
    this.put.run(key, hash, result.outcome, dryRun ? 1 : 0, JSON.stringify(result), new Date().toISOString());
  }

  close(): void {
    this.db.close();
  }
}
