import type { Agreement, SupplyAddressEntry, SupplyPoint } from '../../../schemas/supply.js';
import { matchesToTheCent } from '../../../vocabulary/money.js';
import { isIsoCountryCode } from '../../region/countries.js';
import { child } from '../field-error.js';
import type { Loose } from '../salvage.js';
import { checkChoice, checkOrder, checkUnique, eachParsed, type RuleEnv } from './env.js';

type Point = Loose<SupplyPoint>;

const ELECTRICITY_ONLY = [
  'contractual_max_power',
  'annual_consumption',
  'estimated_monthly_fee_in_cents',
  'atr_type',
] as const;

function checkAgreement(env: RuleEnv, p: Point, ag: Loose<Agreement>, attr: string): void {
  checkOrder(env, ag.effective_from, ag.effective_to, child(attr, 'effective_from'));
  if (
    ag.effective_from !== undefined &&
    p.supply_start_date !== undefined &&
    ag.effective_from < p.supply_start_date
  ) {
    env.out.add(
      'agreement_before_supply_start',
      child(attr, 'effective_from'),
      `The agreement starts before the supply start date (${p.supply_start_date}).`,
    );
  }
  if (p.supply_type === 'ELECTRICITY' && ag.params !== undefined) {
    env.out.add('gas_only_field', child(attr, 'params'), 'params is only used on gas supply points.');
  }
  if (p.supply_type === 'GAS') {
    for (const field of ELECTRICITY_ONLY) {
      if (ag[field] !== undefined)
        env.out.add(
          'electricity_only_field',
          child(attr, field),
          `${field} is only used on electricity supply points.`,
        );
    }
  }
}

// effective_to is exclusive: an agreement may start the day the previous one ends. Only agreements that
// parsed completely take part, so a broken effective_to is not mistaken for an open end.
function checkOverlaps(env: RuleEnv, agreements: Point['agreements'], attr: string): void {
  const dated = (agreements ?? [])
    .map((ag, index) => ({ ag, index }))
    .filter(
      (x): x is { ag: Loose<Agreement>; index: number } =>
        env.isComplete(x.ag) && x.ag?.effective_from !== undefined,
    )
    .sort((a, b) =>
      a.ag.effective_from! < b.ag.effective_from!
        ? -1
        : a.ag.effective_from! > b.ag.effective_from!
          ? 1
          : a.index - b.index,
    );
  let furthestEnd: string | null = null; // null: nothing yet; '9999-99-99': open-ended
  for (const { ag, index } of dated) {
    if (furthestEnd !== null && ag.effective_from! < furthestEnd) {
      env.out.add(
        'overlapping_agreements',
        child(attr, 'agreements', index, 'effective_from'),
        'The agreement overlaps another agreement of this supply point.',
      );
    }
    const end = ag.effective_to ?? '9999-99-99';
    if (furthestEnd === null || end > furthestEnd) furthestEnd = end;
  }
}

function checkPoint(env: RuleEnv, p: Point, attr: string): void {
  if (p.identifier !== undefined) {
    const problem = env.region.supplyPointIdentifierProblem(p.identifier);
    if (problem) env.out.add('invalid_cups', child(attr, 'identifier'), problem);
  }
  if (
    p.last_billed_to_date !== undefined &&
    p.supply_start_date !== undefined &&
    p.last_billed_to_date < p.supply_start_date
  ) {
    env.out.add(
      'last_billed_to_date_before_supply_start',
      child(attr, 'last_billed_to_date'),
      `last_billed_to_date is before supply_start_date (${p.supply_start_date}).`,
    );
  }
  if (p.supply_type === 'ELECTRICITY') {
    for (const field of ['readings', 'billable_items'] as const) {
      if (p[field] !== undefined)
        env.out.add('gas_only_field', child(attr, field), `${field} is only used on gas supply points.`);
    }
  }
  eachParsed(p.agreements, (ag, i) => checkAgreement(env, p, ag, child(attr, 'agreements', i)));
  checkOverlaps(env, p.agreements, attr);
  eachParsed(p.readings, (r, i) => {
    if (
      r.interval_start !== undefined &&
      r.interval_end !== undefined &&
      r.interval_start >= r.interval_end
    ) {
      env.out.add(
        'invalid_reading_interval',
        child(attr, 'readings', i, 'interval_start'),
        'interval_start must be before interval_end.',
      );
    }
  });
  eachParsed(p.billable_items, (b, i) => {
    const at = child(attr, 'billable_items', i);
    checkOrder(env, b.interval_start, b.interval_end, child(at, 'interval_start'));
    checkChoice(env, 'billable_item_unit_type', b.unit_type, child(at, 'unit_type'));
    if (
      b.net_amount !== undefined &&
      b.price_per_unit !== undefined &&
      b.number_of_units !== undefined &&
      !matchesToTheCent(b.net_amount, b.price_per_unit, b.number_of_units)
    ) {
      env.out.add(
        'incorrect_billable_item_net_amount',
        child(at, 'net_amount'),
        `net_amount ${b.net_amount} is not price_per_unit × number_of_units to the cent.`,
      );
    }
  });
}

export function checkSupplyAddresses(
  env: RuleEnv,
  entries: readonly (Loose<SupplyAddressEntry> | undefined)[] | undefined,
  base: string,
): void {
  const identifiers: { key: string | undefined; attr: string }[] = [];
  eachParsed(entries, (entry, i) => {
    const attr = child(base, i);
    const address = entry.supply_address;
    if (address?.postal_code !== undefined) {
      const problem = env.region.postcodeProblem(address.postal_code);
      if (problem) env.out.add('invalid_postcode', child(attr, 'supply_address', 'postal_code'), problem);
    }
    if (address?.country !== undefined && !isIsoCountryCode(address.country)) {
      env.out.add(
        'invalid_country',
        child(attr, 'supply_address', 'country'),
        'Enter an ISO 3166-1 alpha-2 country code such as "ES".',
      );
    }
    eachParsed(entry.supply_points, (p, j) => {
      const at = child(attr, 'supply_points', j);
      identifiers.push({ key: p.identifier, attr: child(at, 'identifier') });
      checkPoint(env, p, at);
    });
  });
  checkUnique(env, identifiers, 'duplicate_supply_point_identifiers', 'supply point identifier');
}
