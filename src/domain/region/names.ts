// The validation regions by name, without their profiles (and the libraries behind them): what operators'
// tools need to check a supplier's setting. `index.ts` holds a profile for each.

export const regionNames = ['ES'] as const;

export type RegionName = (typeof regionNames)[number];

/** The validation profile of a supplier created without one, and of a body naming no (known) supplier. */
export const DEFAULT_REGION: RegionName = 'ES';

export function isRegionName(name: string): name is RegionName {
  return (regionNames as readonly string[]).includes(name);
}
