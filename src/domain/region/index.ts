import { esProfile } from './es.js';
import { isRegionName, regionNames, type RegionName } from './names.js';
import type { RegionProfile } from './profile.js';

export type { RegionProfile } from './profile.js';
export { DEFAULT_REGION, isRegionName, regionNames, type RegionName } from './names.js';

// Adding a country means adding its name to names.ts and its profile here; a supplier selects one by name.
const profiles: Readonly<Record<RegionName, RegionProfile>> = { ES: esProfile };

/** A supplier's region has no profile: a configuration error, which no retry can mend. */
export class UnknownRegionError extends Error {
  constructor(readonly region: string) {
    super(`Unknown validation region "${region}"; known: ${regionNames.join(', ')}`);
    this.name = 'UnknownRegionError';
  }
}

/** Throws `UnknownRegionError` for an unknown name: the region comes from configuration. */
export function getRegionProfile(name: string): RegionProfile {
  if (!isRegionName(name)) throw new UnknownRegionError(name);
  return profiles[name];
}
