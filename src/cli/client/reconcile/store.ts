import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync, type StatementSync } from 'node:sqlite';

/** Rows written per transaction (one transaction per row would sync the file at every line). */
const ROWS_PER_TRANSACTION = 2_000;

/**
 * Reconcile's working store, on disk so that the client's memory does not grow with the cohort: a temporary
 * SQLite file (node:sqlite) in the system's temporary folder (`TMPDIR`), removed when the run ends. It holds
 *
 * - the post-import lines that were read, each as the parts of its body reconcile uses (`inputs.ts`), keyed by
 *   account, in the order they were read (kind by kind in the workflow's order, file by file, line by line);
 *   an account's lines are read back when its cohort line is read, and applied in that order;
 * - the key and line of every account of the cohort read so far (a repeated account names its first line).
 *
 * Its size is about that of the post-import files' used parts plus some 100 bytes an account; nothing of it
 * needs to survive the run (a resumed run reads the files again, see `--state`). A run killed with SIGKILL
 * leaves its folder (`import-client-reconcile-*`) behind.
 */
export class ReconcileStore {
  private readonly dir: string;
  private readonly db: DatabaseSync;
  private readonly insertPost: StatementSync;
  private readonly insertCohort: StatementSync;
  private readonly cohortLine: StatementSync;
  private selectPost: StatementSync | null = null;
  private inTransaction = 0;
  /** Post-import lines stored. */
  postLines = 0;

  constructor(parent = tmpdir()) {
    this.dir = mkdtempSync(join(parent, 'import-client-reconcile-'));
    try {
      this.db = new DatabaseSync(join(this.dir, 'store.sqlite'));
      // A scratch file: no journal, no sync (a crash loses nothing the next run needs).
      this.db.exec(`PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF; PRAGMA cache_size = -16000;
        CREATE TABLE post (seq INTEGER PRIMARY KEY, key TEXT NOT NULL, kind INTEGER NOT NULL, body TEXT NOT NULL);
        CREATE TABLE cohort (key TEXT PRIMARY KEY, line INTEGER NOT NULL) WITHOUT ROWID;`);
    } catch (err) {
      rmSync(this.dir, { recursive: true, force: true });
      throw err;
    }
    this.insertPost = this.db.prepare('INSERT INTO post (key, kind, body) VALUES (?, ?, ?)');
    this.insertCohort = this.db.prepare(
      'INSERT INTO cohort (key, line) VALUES (?, ?) ON CONFLICT (key) DO NOTHING',
    );
    this.cohortLine = this.db.prepare('SELECT line FROM cohort WHERE key = ?');
  }

  /** One post-import line of the account `key`: `kind` (its index in the workflow's order) and its body's parts. */
  addPostImport(key: string, kind: number, body: unknown): void {
    this.write(() => this.insertPost.run(key, kind, JSON.stringify(body)));
    this.postLines++;
  }

  /**
   * Every post-import line has been added: indexes them by account (built once, after the bulk of inserts,
   * which is faster than keeping an index up to date line by line).
   */
  postImportsRead(): void {
    this.commit();
    if (this.postLines === 0) return;
    this.db.exec('CREATE INDEX post_by_account ON post (key, seq)');
    this.selectPost = this.db.prepare('SELECT kind, body FROM post WHERE key = ? ORDER BY seq');
  }

  /** The post-import lines of the account `key`, in the order they were read (none before `postImportsRead`). */
  postImportsOf(key: string): { kind: number; body: unknown }[] {
    if (!this.selectPost) return [];
    return (this.selectPost.all(key) as { kind: number; body: string }[]).map((row) => ({
      kind: row.kind,
      body: JSON.parse(row.body) as unknown,
    }));
  }

  /** Records the cohort account `key` at `line`; when it was read before, the line it was first read at. */
  claim(key: string, line: number): number | null {
    let changes: number | bigint = 0;
    this.write(() => ({ changes } = this.insertCohort.run(key, line)));
    if (Number(changes) === 1) return null;
    return (this.cohortLine.get(key) as { line: number }).line;
  }

  /** Per kind (its index), how many post-import lines name an account of the cohort. */
  appliedByKind(): Map<number, number> {
    this.commit();
    const rows = this.db
      .prepare(
        'SELECT p.kind AS kind, count(*) AS n FROM post p JOIN cohort c ON c.key = p.key GROUP BY p.kind',
      )
      .all() as { kind: number; n: number }[];
    return new Map(rows.map((r) => [r.kind, r.n]));
  }

  /** Closes the store and removes its folder. */
  close(): void {
    try {
      if (this.db.isOpen) this.db.close();
    } finally {
      rmSync(this.dir, { recursive: true, force: true });
    }
  }

  private write(statement: () => void): void {
    if (this.inTransaction === 0) this.db.exec('BEGIN');
    statement();
    if (++this.inTransaction >= ROWS_PER_TRANSACTION) this.commit();
  }

  private commit(): void {
    if (this.inTransaction === 0) return;
    this.db.exec('COMMIT');
    this.inTransaction = 0;
  }
}
