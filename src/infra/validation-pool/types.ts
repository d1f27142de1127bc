import type { CatalogueName } from '../../vocabulary/catalogue.js';

/** Fixed for the life of a pool: each thread builds its enumeration catalogue from it once. */
export type PoolData = { catalogueExtra: Partial<Record<CatalogueName, readonly string[]>> };

/** One validate-account request: the raw body text and what the validation context needs. */
export type AccountTask = { text: string; region: string; today: string /* YYYY-MM-DD */ };
