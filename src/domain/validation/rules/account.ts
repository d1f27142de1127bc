import type { AccountPayload } from '../../../schemas/account.js';
import { child } from '../field-error.js';
import type { Loose } from '../salvage.js';
import { checkCustomers } from './customers.js';
import { checkNote, checkStatements } from './documents.js';
import { checkChoice, checkUnique, eachParsed, type RuleEnv } from './env.js';
import { checkSupplyAddresses } from './supply.js';
import { checkLedgers, checkTransactionIds } from './transactions.js';

/** Every cross-field and catalogue rule of the account payload. */
export function checkAccount(env: RuleEnv, a: Loose<AccountPayload>): void {
  checkChoice(env, 'account_type', a.account_type, 'account_type');
  checkChoice(env, 'sales_channel', a.sales_channel, 'sales_channel');
  checkChoice(env, 'communication_preference', a.communication_preference, 'communication_preference');
  if (a.billing_postcode !== undefined) {
    const problem = env.region.postcodeProblem(a.billing_postcode);
    if (problem) env.out.add('invalid_postcode', 'billing_postcode', problem);
  }
  checkCustomers(env, a.customers, 'customers');
  checkSupplyAddresses(env, a.supply_addresses, 'supply_addresses');
  eachParsed(a.notes, (n, i) => checkNote(env, n, child('notes', i)));
  checkTransactionIds(env, checkLedgers(env, a.ledgers, 'ledgers'));
  eachParsed(a.payment_schedules, (s, i) => {
    checkChoice(env, 'payment_schedule_means', s.means, child('payment_schedules', i, 'means'));
    checkChoice(env, 'payment_schedule_trigger', s.trigger, child('payment_schedules', i, 'trigger'));
  });
  checkStatements(env, a.statements, 'statements');
  const keys = (a.metadata ?? []).map((m, i) => ({ key: m?.key, attr: child('metadata', i, 'key') }));
  checkUnique(env, keys, 'duplicate_metadata_keys', 'metadata key');
}
