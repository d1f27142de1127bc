import { esProfile } from './es.js';
import type { RegionProfile } from './profile.js';

export type { RegionProfile } from './profile.js';

// Adding a country means adding its profile here; the supplier configuration selects one by name.
const profiles: Readonly<Record<string, RegionProfile>> = { ES: esProfile };

export const regionNames: readonly string[] = Object.keys(profiles);

/** The validation profile of a supplier created without one, and of a body naming no (known) supplier. */
export const DEFAULT_REGION = 'ES';

export function isRegionName(name: string): boolean {
  return Object.hasOwn(profiles, name);
}

/** A supplier's region has no profile: a configuration error, which no retry can mend. */
export class UnknownRegionError extends Error {
  constructor(readonly region: string) {
    super(`Unknown validation region "${region}"; known: ${regionNames.join(', ')}`);
    this.name = 'UnknownRegionError';
  }
}

/** Throws `UnknownRegionError` for an unknown name: the region comes from configuration. */
export function getRegionProfile(name: string): RegionProfile {
  const profile = isRegionName(name) ? profiles[name] : undefined;
  if (!profile) throw new UnknownRegionError(name);
  return profile;
}
