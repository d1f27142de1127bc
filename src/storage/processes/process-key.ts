/**
 * The `_id` of an import process: its natural key. Supplier codes match ^[A-Z0-9_]{1,32}$, so the first '/'
 * separates the two parts unambiguously. Looking processes up by `_id` alone matters on FerretDB's SQLite
 * backend: an exact `{_id}` filter is the only one it answers from SQL; any other filter reads every document.
 * It is also the account's creation slot member and the `processId` of its jobs.
 */
export function processKey(importSupplier: string, externalAccountNumber: string): string {
  return `${importSupplier}/${externalAccountNumber}`;
}
