import { scenario, type Edit, type Scenario } from './scenarios.js';

// Paths into the account fixture, shared by the account scenario lists.
export const GAS = 'supply_addresses.0.supply_points.0';
export const ELEC = 'supply_addresses.0.supply_points.1';
export const SUPPLY_CHARGE = 'ledgers.0.historical_statement_transactions.0';
export const GAS_LEDGER = 'ledgers.1';

export const a = (code: Scenario['code'], attr: string, name: string, ...edits: Edit[]): Scenario =>
  scenario('account', code, attr, name, ...edits);
