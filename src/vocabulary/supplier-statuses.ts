/** An import supplier's migration status: only an `Ongoing` supplier accepts migrations (`domain/supplier.ts`). */
export const supplierStatuses = ['Ongoing', 'Paused', 'Complete'] as const;
export type SupplierStatus = (typeof supplierStatuses)[number];
