import fp from 'fastify-plugin';
import { LRUCache } from 'lru-cache';
import type { HydratedDocument } from 'mongoose';
import type { ImportSupplier } from '../../models/import-supplier.js';
import { findSupplierDocument, listSupplierRows } from '../../storage/suppliers.js';
import { ApiError } from '../errors.js';

export type SupplierDoc = HydratedDocument<ImportSupplier>;

export type Tenant = {
  /** The caller's supplier with this code, or null: another organisation's supplier is indistinguishable from none. */
  findSupplier(code: unknown): Promise<SupplierDoc | null>;
  /** Same, answering 404 `import_supplier_not_found` when absent. */
  getSupplier(code: unknown): Promise<SupplierDoc>;
  /** Same, and the supplier must be `Ongoing` (400 `import_supplier_migration_not_ongoing` otherwise). */
  getOngoingSupplier(code: unknown): Promise<SupplierDoc>;
  /** Every supplier of the caller's organisation (code and status), by code; never cached. */
  listSuppliers(): Promise<{ code: string; status: string }[]>;
};

declare module 'fastify' {
  interface FastifyRequest {
    tenant: Tenant;
  }
}

/** The one place that scopes data to the caller's organisation. Routes never query suppliers directly. */
export default fp(
  async (app) => {
    const ttl = app.config.AUTH_CACHE_TTL_MS;
    // Status changes by operators reach every API pod within AUTH_CACHE_TTL_MS; null results are cached too.
    const cache = ttl > 0 ? new LRUCache<string, { doc: SupplierDoc | null }>({ max: 10_000, ttl }) : null;
    const load = async (organisationId: string, code: string): Promise<SupplierDoc | null> => {
      const key = `${organisationId}/${code}`;
      const hit = cache?.get(key);
      if (hit) return hit.doc;
      const doc = await findSupplierDocument(app.db.models, code, organisationId);
      cache?.set(key, { doc });
      return doc;
    };
    app.decorateRequest('tenant', {
      getter() {
        const principal = this.principal;
        if (!principal) throw new Error('tenant used on an unauthenticated route');
        const findSupplier = async (code: unknown) =>
          typeof code === 'string' && code.length > 0 && code.length <= 64
            ? load(String(principal.organisationId), code)
            : null;
        const getSupplier = async (code: unknown) => {
          const supplier = await findSupplier(code);
          if (!supplier) throw new ApiError('import_supplier_not_found');
          return supplier;
        };
        return {
          findSupplier,
          getSupplier,
          async getOngoingSupplier(code: unknown) {
            const supplier = await getSupplier(code);
            if (supplier.status !== 'Ongoing') {
              throw new ApiError('import_supplier_migration_not_ongoing', {
                detail: `Migrations for import supplier ${supplier.code} are ${supplier.status}.`,
              });
            }
            return supplier;
          },
          async listSuppliers() {
            const rows = await listSupplierRows(app.db.models, principal.organisationId);
            return rows.map((r) => ({ code: r.code, status: String(r.status) }));
          },
        } satisfies Tenant;
      },
    });
  },
  { name: 'tenancy', dependencies: ['auth'] },
);
