import fc from 'fast-check';
import { clone, deleteAt, getAt, setAt } from './json-path.js';

// Random breakages of a valid payload. Each one must make the payload invalid, whatever field it hits.

/** Every path in the payload except inside free-form metadata values. */
export function pathsOf(value: unknown, prefix = ''): string[] {
  if (typeof value !== 'object' || value === null) return [];
  const entries = Array.isArray(value) ? value.map((v, i) => [String(i), v] as const) : Object.entries(value);
  return entries.flatMap(([key, child]) => {
    const path = prefix ? `${prefix}.${key}` : key;
    if (/^metadata\.\d+\.value$/.test(path)) return [path];
    return [path, ...pathsOf(child, path)];
  });
}

// Keys that are required wherever they appear (decisions §6: identifiers, dates and amounts), plus
// fields the transaction type requires in this fixture.
const REQUIRED_KEYS = new Set(
  (
    'import_supplier external_account_number account_type customers billing_name billing_address1 billing_postcode ' +
    'account_roles namespace value supply_address customer_at_supply_address_from_date postal_code country identifier ' +
    'supply_type supply_start_date tariff_code effective_from availability_discount consumption_discount ' +
    'meter_serial_number interval_start interval_end consumption_delta net_amount billable_item_type number_of_units ' +
    'price_per_unit unit_type body created_at ledger_code last_statement_balance last_statement_closing_date ' +
    'ledger_balance transaction_id transaction_date amount type rate_band start_date end_date tax_type value_taxed rate ' +
    'means trigger bill_period_from_date bill_period_to_date statement_path statement_id key reason payment_type ' +
    'product_code line_items'
  ).split(' '),
);

// The same key names that are optional in these places.
const OPTIONAL_HERE = /^statements\.\d+\.supply_type$/;

function wrongType(value: unknown): unknown {
  if (typeof value === 'string' || typeof value === 'number') return true;
  if (typeof value === 'boolean') return String(value);
  return Array.isArray(value) ? {} : [];
}

function deeplyNested(depth: number): unknown {
  let v: unknown = 'x';
  for (let i = 0; i < depth; i++) v = i % 2 === 0 ? [v] : { a: v };
  return v;
}

type Mutation = { kind: string; path: string; payload: unknown };

export function mutationArb(base: object, paths: string[]): fc.Arbitrary<Mutation> {
  const objectPaths = paths.filter((p) => {
    const v = getAt(base, p);
    return typeof v === 'object' && v !== null && !Array.isArray(v) && !/^metadata\.\d+\.value/.test(p);
  });
  const stringPaths = paths.filter((p) => typeof getAt(base, p) === 'string');
  const requiredPaths = paths.filter(
    (p) => REQUIRED_KEYS.has(p.slice(p.lastIndexOf('.') + 1)) && !OPTIONAL_HERE.test(p),
  );
  const junkKey = fc.constantFrom('__proto__', '$where', '$gt', '$set', 'constructor', 'junk', 'toString');
  const apply = (kind: string, path: string, edit: (p: unknown) => void): Mutation => {
    const payload = clone(base);
    edit(payload);
    // Round-trip so that the payload looks exactly like a parsed JSON body (own "__proto__" keys included).
    return { kind, path, payload: JSON.parse(JSON.stringify(payload)) };
  };
  return fc.oneof(
    fc
      .constantFrom(...paths)
      .map((path) => apply('wrong type', path, (p) => setAt(p, path, wrongType(getAt(p, path))))),
    fc.constantFrom(...requiredPaths).map((path) => apply('remove required', path, (p) => deleteAt(p, path))),
    fc
      .tuple(fc.constantFrom('', ...objectPaths), junkKey, fc.jsonValue({ maxDepth: 2 }))
      .map(([path, key, value]) =>
        apply('junk key', path, (p) => setAt(p, path ? `${path}.${key}` : key, value)),
      ),
    fc
      .constantFrom(...stringPaths)
      .map((path) => apply('huge string', path, (p) => setAt(p, path, 'x'.repeat(100_000)))),
    fc
      .tuple(fc.constantFrom(...paths), fc.integer({ min: 50, max: 3000 }))
      .map(([path, depth]) => apply('deep nesting', path, (p) => setAt(p, path, deeplyNested(depth)))),
  );
}
