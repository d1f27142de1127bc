import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import {
  batchItem,
  parseReconciliationRequest,
  readBackAccount,
  readBackAccounts,
} from '../../../../use-cases/reconciliation/read-back.js';
import { pathIdentifier } from '../../../../schemas/primitives.js';
import {
  accountReconciliationSchema,
  RECONCILIATION_MAX_ACCOUNTS,
  reconciliationRequestSchema,
  reconciliationResultsSchema,
} from '../../../../schemas/reconciliation.js';
import { ApiError } from '../../errors.js';
import { examples, withExample } from '../../../openapi/examples.js';
import { bodyErrors, commonErrors, errorResponses } from '../../schemas.js';

const accountParams = z.object({
  import_supplier_code: pathIdentifier(64),
  external_account_number: pathIdentifier(128),
});

/**
 * Reconciliation: what the platform holds for created accounts (per ledger the balance, the transactions'
 * count and digest, billing documents; statements, notes, the payment instruction), for one account or a
 * batch. Same authentication and tenancy as the rest of v2; the figures come from `reconciliation/`.
 */
export default async function v2ReconciliationRoutes(fastify: FastifyInstance): Promise<void> {
  const app = fastify.withTypeProvider<ZodTypeProvider>();
  const deps = { storage: app.storage };

  app.get(
    '/accounts/:import_supplier_code/:external_account_number/reconciliation/',
    {
      schema: {
        tags: ['v2'],
        operationId: 'getAccountReconciliation',
        summary: 'What the platform holds for one created account, to compare with the legacy system',
        description:
          'Per ledger (in payload order): the balance, the last statement’s balance and closing date, the ' +
          'transactions’ count (by origin) and order-independent digest, the billing documents; the account’s ' +
          'statements and notes, and its active payment instruction. The same cost whatever the account’s ' +
          'history. 404 `account_not_found` when the account is staged but not created, `not_found` when there ' +
          'is no import process (or the supplier is another organisation’s).',
        params: accountParams,
        response: {
          200: accountReconciliationSchema.describe('The account’s figures.'),
          ...errorResponses([400, 404, ...commonErrors], {
            400: 'request_failed_validation: a path parameter is longer than allowed or holds a control character (invalid_character).',
            404: 'account_not_found (staged, not created) or not_found (no such import process).',
          }),
        },
      },
    },
    async (request) => {
      const { import_supplier_code: code, external_account_number: external } = request.params;
      const supplier = await request.tenant.findSupplier(code);
      if (!supplier) throw new ApiError('not_found');
      const result = await readBackAccount(deps, supplier.code, external, app.clock());
      if (!result.ok) throw new ApiError(result.code);
      return result.body;
    },
  );

  app.post(
    '/accounts/reconciliation/',
    {
      schema: {
        tags: ['v2'],
        operationId: 'reconcileAccounts',
        summary: `The reconciliation figures of up to ${RECONCILIATION_MAX_ACCOUNTS} accounts of one supplier`,
        description:
          'One result per number, in the order sent: the body of `getAccountReconciliation`, or ' +
          '`{"external_account_number", "error": {"code"}}` with `account_not_found` (staged, not created) or ' +
          `\`not_found\` (no import process). More than ${RECONCILIATION_MAX_ACCOUNTS} numbers: 400 ` +
          '`too_many_items`; other invalid bodies: 400 `request_failed_validation`. Unknown supplier (or ' +
          'another organisation’s): 404 `import_supplier_not_found`.',
        body: withExample(
          reconciliationRequestSchema,
          'Two created accounts and one the supplier never staged',
          examples.reconciliation,
        ),
        response: {
          200: reconciliationResultsSchema.describe('The results, in the order asked.'),
          ...errorResponses([...bodyErrors, 404, ...commonErrors], {
            400: `too_many_items (more than ${RECONCILIATION_MAX_ACCOUNTS} numbers) or request_failed_validation, with every error.`,
            404: 'import_supplier_not_found: no such supplier for this organisation.',
          }),
        },
      },
    },
    async (request) => {
      const parsed = parseReconciliationRequest(request.body);
      if (!parsed.ok)
        throw new ApiError(parsed.tooMany ? 'too_many_items' : 'request_failed_validation', {
          errors: parsed.errors,
        });
      const { import_supplier_code: code, external_account_numbers: numbers } = parsed.data;
      const supplier = await request.tenant.getSupplier(code);
      const results = await readBackAccounts(deps, supplier.code, numbers, app.clock());
      return { results: results.map(batchItem) };
    },
  );
}
