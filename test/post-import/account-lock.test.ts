import { Types } from 'mongoose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AccountLocks } from '../../src/use-cases/post-import/account-lock.js';
import { startTestApp, type TestApp } from '../support/app.js';

// The per-account lock of journal writers: in one process, writers of an account queue behind each other and
// each holds the Redis lock in turn; the wait in line is bounded like the wait in Redis.
let t: TestApp;
let locks: AccountLocks;

beforeAll(async () => {
  t = await startTestApp({ env: { TEST_LABEL: 'account_lock' } });
  locks = new AccountLocks(t.app.redis, t.config.QUEUE_PREFIX);
});
afterAll(async () => t?.close());

/** A promise and the function that settles it. */
function gate() {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => (open = resolve));
  return { open, opened };
}

describe('account locks in one process', () => {
  it('run the writers of one account one at a time, in arrival order, each holding the Redis lock', async () => {
    const account = new Types.ObjectId();
    const log: string[] = [];
    const lockSeen: boolean[] = [];
    const first = gate();
    const writer = (name: string, until?: Promise<void>) =>
      // The one instance of the process (the API builds one, with its post-import context): the line is its.
      locks.with(account, async () => {
        log.push(`${name} in`);
        lockSeen.push((await t.app.redis.get(locks.key(account))) !== null);
        await until;
        log.push(`${name} out`);
      });
    const runs = [writer('a', first.opened), writer('b'), writer('c')];
    // Another account's writer does not wait for this one's line (a is still in).
    await locks.with(new Types.ObjectId(), async () => void log.push('other account'));
    expect(log).not.toContain('a out');
    first.open();
    await Promise.all(runs);
    expect(log.filter((l) => l !== 'other account')).toEqual([
      'a in',
      'a out',
      'b in',
      'b out',
      'c in',
      'c out',
    ]);
    expect(lockSeen).toEqual([true, true, true]);
    expect(await t.app.redis.get(locks.key(account))).toBeNull();
  });

  it('lets a writer go on without the lock once it has waited in line for waitMs', async () => {
    const account = new Types.ObjectId();
    const stuck = gate();
    const log: string[] = [];
    const holder = locks.with(account, async () => {
      log.push('holder in');
      await stuck.opened;
      log.push('holder out');
    });
    // Runs while the holder still holds: its wait in line ran out.
    await locks.with(account, async () => void log.push('waiter in'), { waitMs: 100 });
    expect(log).toEqual(['holder in', 'waiter in']);
    stuck.open();
    await holder;
    expect(log).toEqual(['holder in', 'waiter in', 'holder out']);
  });
});
