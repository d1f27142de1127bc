import { esProfile } from './es.js';
import type { RegionProfile } from './profile.js';

export type { RegionProfile } from './profile.js';

// Adding a country means adding its profile here; the supplier configuration selects one by name.
const profiles: Readonly<Record<string, RegionProfile>> = { ES: esProfile };

export const regionNames: readonly string[] = Object.keys(profiles);

/** Throws for an unknown name: the region comes from configuration, so that is a deployment error. */
export function getRegionProfile(name: string): RegionProfile {
  const profile = Object.hasOwn(profiles, name) ? profiles[name] : undefined;
  if (!profile) throw new Error(`Unknown validation region "${name}"; known: ${regionNames.join(', ')}`);
  return profile;
}
