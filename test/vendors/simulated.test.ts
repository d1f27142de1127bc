import { describe, expect, it } from 'vitest';
import { SimulatedVendor } from '../../src/infra/vendors/simulated.js';

const verify = (vendor: SimulatedVendor, reference: string) =>
  vendor.verify({ reference, type: 'CARD' }).then((v) => v.kind);

describe('the SIMULATED vendor', () => {
  it('fails a flaky reference twice, then finds it', async () => {
    const vendor = new SimulatedVendor(0);
    expect([
      await verify(vendor, 'sim_flaky_1'),
      await verify(vendor, 'sim_flaky_1'),
      await verify(vendor, 'sim_flaky_1'),
    ]).toEqual(['transient', 'transient', 'found']);
    expect(await verify(vendor, 'sim_ok_1')).toBe('found');
    expect(await verify(vendor, 'sim_down_1')).toBe('transient');
    expect(await verify(vendor, 'other')).toBe('not_found');
  });

  it('remembers calls for a bounded number of references, forgetting the oldest', async () => {
    const vendor = new SimulatedVendor(0, 3);
    for (let i = 0; i < 50; i++) await verify(vendor, `sim_flaky_${i}`);
    expect(vendor.remembered).toBe(3);
    // The most recent reference is still counted; an evicted one starts over.
    expect(await verify(vendor, 'sim_flaky_49')).toBe('transient');
    expect(await verify(vendor, 'sim_flaky_49')).toBe('found');
    expect(await verify(vendor, 'sim_flaky_0')).toBe('transient');
    expect(vendor.remembered).toBe(3);
  });
});
