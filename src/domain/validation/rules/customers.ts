import type { Customer } from '../../../schemas/account.js';
import { isLikelyTestEmail, isValidEmail } from '../../region/email.js';
import { child } from '../field-error.js';
import type { Loose } from '../salvage.js';
import { checkChoice, checkUnique, eachParsed, type RuleEnv } from './env.js';

export const ACCOUNT_HOLDER = 'ACCOUNT_HOLDER';

export function checkEmail(env: RuleEnv, email: string | undefined, attr: string): void {
  if (email === undefined) return;
  if (!isValidEmail(email)) env.out.add('invalid_email', attr, 'Enter a valid e-mail address.');
  else if (isLikelyTestEmail(email))
    env.out.add('possible_test_email_address', attr, 'This looks like a test e-mail address.');
}

function checkAccountHolder(
  env: RuleEnv,
  customers: readonly (Loose<Customer> | undefined)[] | undefined,
  base: string,
): void {
  if (customers === undefined || customers.length === 0) return; // the schema reports it
  if (customers.some((c) => c?.account_roles?.includes(ACCOUNT_HOLDER))) return;
  // Only conclude "no holder" when every customer's roles are known.
  if (customers.every((c) => c !== undefined && env.isComplete(c.account_roles))) {
    env.out.add('account_holder_missing', base, `At least one customer needs the ${ACCOUNT_HOLDER} role.`);
  }
}

export function checkCustomers(
  env: RuleEnv,
  customers: readonly (Loose<Customer> | undefined)[] | undefined,
  base: string,
): void {
  checkAccountHolder(env, customers, base);
  eachParsed(customers, (c, i) => {
    const attr = child(base, i);
    eachParsed(c.account_roles, (role, j) =>
      checkChoice(env, 'account_role', role, child(attr, 'account_roles', j)),
    );
    const namespaces: { key: string | undefined; attr: string }[] = [];
    eachParsed(c.user_details, (d, j) => {
      const at = child(attr, 'user_details', j);
      namespaces.push({ key: d.namespace, attr: child(at, 'namespace') });
      checkChoice(env, 'user_detail_namespace', d.namespace, child(at, 'namespace'));
      if (d.namespace === 'fiscal_code' && d.value !== undefined) {
        const problem = env.region.fiscalCodeProblem(d.value);
        if (problem) env.out.add('invalid_fiscal_code', child(at, 'value'), problem);
      }
    });
    checkUnique(env, namespaces, 'duplicate_user_detail_namespaces', 'user_details namespace');
    checkEmail(env, c.email, child(attr, 'email'));
    for (const kind of ['mobile', 'landline'] as const) {
      const value = c[kind];
      const problem = value === undefined ? null : env.region.phoneProblem(value, kind);
      if (problem) env.out.add('invalid_phone_number', child(attr, kind), problem);
    }
  });
}
