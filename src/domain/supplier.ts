import type { SupplierStatus } from '../vocabulary/supplier-statuses.js';

/** Why a supplier refuses a migration step (staging, creating, any post-import request): the one rule. */
export type MigrationRefusal = { code: 'import_supplier_migration_not_ongoing'; detail: string };

/** Null when the supplier accepts migrations (it is `Ongoing`), else the refusal every entry point answers. */
export function migrationRefusal(supplier: {
  code: string;
  status: SupplierStatus | string;
}): MigrationRefusal | null {
  if (supplier.status === 'Ongoing') return null;
  return {
    code: 'import_supplier_migration_not_ongoing',
    detail: `Migrations for import supplier ${supplier.code} are ${supplier.status}.`,
  };
}
