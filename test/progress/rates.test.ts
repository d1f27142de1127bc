import { describe, expect, it } from 'vitest';
import { ratesOf } from '../../src/use-cases/progress/cohort.js';

/** 16 per-minute counts, oldest first, the last being the current minute. */
const minutes = (...recent: number[]) =>
  [...Array<number>(16 - recent.length).fill(0), ...recent].map((P) => ({ P }));
const at = (secondsIntoMinute: number) => new Date(Date.UTC(2026, 10, 27, 21, 14, secondsIntoMinute));

describe('processed per minute', () => {
  it('just after a minute begins, the last minute is mostly the one before, not an empty one', () => {
    const { perMinute } = ratesOf(minutes(60, 0), at(6));
    expect(perMinute.last_1m).toBe(54);
    expect(perMinute.last_5m).toBe(12);
  });

  it('counts this minute so far and the whole minutes inside the window', () => {
    const { perMinute, processedIn } = ratesOf(minutes(30, 30, 30, 30, 30, 12), at(30));
    // The last minute: 12 now, half of the 30 before. The last five: 12 + 4 × 30 + half of the 30 before those.
    expect(processedIn(1)).toBe(27);
    expect(perMinute.last_1m).toBe(27);
    expect(processedIn(5)).toBe(147);
    expect(perMinute.last_5m).toBe(29.4);
    expect(perMinute.last_15m).toBe(10.8);
  });

  it('a cohort that stopped more than a quarter of an hour ago has a rate of 0', () => {
    const old = [{ P: 500 }, ...minutes()];
    expect(ratesOf(old.slice(-16), at(59)).perMinute).toEqual({ last_1m: 0, last_5m: 0, last_15m: 0 });
  });
});
