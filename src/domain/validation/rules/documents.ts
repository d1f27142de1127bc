import type { AccountNote, Statement } from '../../../schemas/account.js';
import type { HistoricalStatement, ImportNote } from '../../../schemas/post-import.js';
import { child } from '../field-error.js';
import type { Loose } from '../salvage.js';
import { checkOrder, checkUnique, eachParsed, type RuleEnv } from './env.js';

/** Document paths are joined under bucket + supplier root, so they must not be able to escape it. */
export function documentPathProblem(path: string): string | null {
  if (path.startsWith('/')) return 'Document paths are relative: remove the leading slash.';
  if (/^[A-Za-z][A-Za-z0-9+.-]*:/.test(path)) return 'Document paths are relative: remove the scheme.';
  // eslint-disable-next-line no-control-regex
  if (/[\\\u0000-\u001f\u007f]/.test(path))
    return 'Document paths must not contain backslashes or control characters.';
  const segments = path.split('/');
  if (segments.some((s) => s === '' || s === '.' || s === '..'))
    return 'Document paths must not contain empty, "." or ".." segments.';
  return null;
}

export function checkDocumentPath(env: RuleEnv, path: string | undefined, attr: string): void {
  const problem = path === undefined ? null : documentPathProblem(path);
  if (problem) env.out.add('invalid_document_path', attr, problem);
}

type AnyNote = Loose<AccountNote> | Loose<ImportNote>;

export function checkNote(env: RuleEnv, note: AnyNote, attr: string): void {
  const paths = 'document_paths' in note ? note.document_paths : undefined;
  // A note without content is refused by its schema. Only a fully parsed note can be said to lack a pin
  // (a broken field is absent here).
  if (env.isComplete(note)) {
    if (note.unpin_at !== undefined && note.is_pinned !== true) {
      env.out.add(
        'unpin_at_without_pin',
        child(attr, 'unpin_at'),
        'unpin_at is only used on pinned notes (is_pinned: true).',
      );
    }
  }
  if (note.unpin_at !== undefined && note.created_at !== undefined && note.unpin_at <= note.created_at) {
    env.out.add(
      'unpin_at_not_after_created_at',
      child(attr, 'unpin_at'),
      'unpin_at must be after created_at.',
    );
  }
  eachParsed(paths, (p, i) =>
    checkDocumentPath(env, p.document_path, child(attr, 'document_paths', i, 'document_path')),
  );
}

type AnyStatement = Loose<Statement> | Loose<HistoricalStatement>;

export function checkStatements(
  env: RuleEnv,
  statements: readonly (AnyStatement | undefined)[] | undefined,
  base: string,
): void {
  const ids: { key: string | undefined; attr: string }[] = [];
  eachParsed(statements, (s, i) => {
    const attr = child(base, i);
    ids.push({ key: s.statement_id, attr: child(attr, 'statement_id') });
    checkOrder(env, s.bill_period_from_date, s.bill_period_to_date, child(attr, 'bill_period_from_date'));
    checkDocumentPath(env, s.statement_path, child(attr, 'statement_path'));
    if ('issued_date' in s) checkIssuedDate(env, s.issued_date, child(attr, 'issued_date'));
  });
  checkUnique(env, ids, 'duplicate_statement_ids', 'statement_id');
}

export function checkIssuedDate(env: RuleEnv, issued: string | undefined, attr: string): void {
  if (issued !== undefined && issued > env.today) {
    env.out.add('issued_date_in_future', attr, `The document is issued after today (${env.today}).`);
  }
}
