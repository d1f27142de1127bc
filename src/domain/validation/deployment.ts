import type { Config } from '../../config.js';
import { enabledVendors } from '../../vocabulary/payment-vendors.js';
import { DEFAULT_REGION } from '../region/index.js';
import {
  buildCatalogue,
  knownCatalogueExtra,
  type Catalogue,
  type CatalogueName,
} from '../../vocabulary/catalogue.js';
import type { ValidationContext } from './index.js';

/** CATALOGUE_EXTRA restricted to the catalogue's names: what a deployment adds to the defaults. */
export function catalogueExtra(config: Config): Partial<Record<CatalogueName, string[]>> {
  return knownCatalogueExtra(config.CATALOGUE_EXTRA);
}

const catalogues = new WeakMap<Config, Catalogue>();

/**
 * The deployment's enumeration catalogue, built once per configuration: defaults plus CATALOGUE_EXTRA, and
 * the payment vendors PAYMENT_VENDORS enables.
 */
export function deploymentCatalogue(config: Config): Catalogue {
  let catalogue = catalogues.get(config);
  if (!catalogue) {
    catalogue = buildCatalogue(catalogueExtra(config), {
      payment_instruction_vendor: enabledVendors(config).enabled,
    });
    catalogues.set(config, catalogue);
  }
  return catalogue;
}

/** "Today" for date rules is the UTC calendar date of the clock. */
export const todayAt = (now: Date): string => now.toISOString().slice(0, 10);

/** The context a request body is validated in: its supplier's region (or the default), the catalogue, today. */
export function validationContextAt(
  catalogue: Catalogue,
  region: string | null | undefined,
  now: Date,
): ValidationContext {
  return { region: region ?? DEFAULT_REGION, catalogue, today: todayAt(now) };
}
