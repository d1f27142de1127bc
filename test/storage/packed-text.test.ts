import mongoose from 'mongoose';
import { describe, expect, it } from 'vitest';
import { packText, unpackText } from '../../src/storage/write-path/packed-text.js';
import { realisticAccountPayload } from '../domain/fixtures-realistic.js';

describe('packed text', () => {
  const text = JSON.stringify(realisticAccountPayload({ today: '2026-11-23' })) + ' ñ€😀';

  it('round-trips exactly, as written (Buffer) and as read back from the driver (BSON Binary)', () => {
    const packed = packText(text);
    expect(unpackText(packed)).toBe(text);
    expect(unpackText(new mongoose.mongo.Binary(packed))).toBe(text);
    // The realistic payload stores at a fraction of its size.
    expect(packed.length).toBeLessThan(Buffer.byteLength(text) / 4);
  });

  it('reads text stored before packing as it is', () => {
    expect(unpackText('{"legacy":true}')).toBe('{"legacy":true}');
  });
});
