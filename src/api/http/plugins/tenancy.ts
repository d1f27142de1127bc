import fp from 'fastify-plugin';
import { migrationRefusal } from '../../../domain/supplier.js';
import type { Supplier } from '../../../storage/records/suppliers.js';
import type { SupplierStatus } from '../../../vocabulary/supplier-statuses.js';
import { ApiError } from '../errors.js';

export type Tenant = {
  /** The caller's organisation (its id, as text). */
  organisationId: string;
  /** The caller's supplier with this code, or null: another organisation's supplier is indistinguishable from none. */
  findSupplier(code: unknown): Promise<Supplier | null>;
  /** Same, answering 404 `import_supplier_not_found` when absent. */
  getSupplier(code: unknown): Promise<Supplier>;
  /** Same, and the supplier must accept migrations (400 `import_supplier_migration_not_ongoing` otherwise). */
  getOngoingSupplier(code: unknown): Promise<Supplier>;
  /** Every supplier of the caller's organisation (code and status), by code; never cached. */
  listSuppliers(): Promise<{ code: string; status: SupplierStatus }[]>;
};

declare module 'fastify' {
  interface FastifyRequest {
    tenant: Tenant;
  }
}

/**
 * The one place that scopes data to the caller's organisation. Routes never query suppliers directly; the
 * suppliers are read through the process's one supplier cache (`storage.suppliers`, AUTH_CACHE_TTL_MS).
 */
export default fp(
  async (app) => {
    const suppliers = app.storage.suppliers;
    app.decorateRequest('tenant', {
      getter() {
        const principal = this.principal;
        if (!principal) throw new Error('tenant used on an unauthenticated route');
        const findSupplier = async (code: unknown) =>
          typeof code === 'string' && code.length > 0 && code.length <= 64
            ? suppliers.find(code, String(principal.organisationId))
            : null;
        const getSupplier = async (code: unknown) => {
          const supplier = await findSupplier(code);
          if (!supplier) throw new ApiError('import_supplier_not_found');
          return supplier;
        };
        return {
          organisationId: String(principal.organisationId),
          findSupplier,
          getSupplier,
          async getOngoingSupplier(code: unknown) {
            const supplier = await getSupplier(code);
            const refusal = migrationRefusal(supplier);
            if (refusal) throw new ApiError(refusal.code, { detail: refusal.detail });
            return supplier;
          },
          listSuppliers: () => suppliers.list(principal.organisationId),
        } satisfies Tenant;
      },
    });
  },
  { name: 'tenancy', dependencies: ['auth'] },
);
