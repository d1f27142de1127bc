import type { CreationSlots } from './slots.js';

/**
 * Hands free creation slots to parked v2 tasks. A task that finds no slot for its organisation parks in its
 * organisation's line (`CreationSlots.park`) and sleeps in BullMQ's delayed set, instead of polling; whoever
 * frees a slot then promotes the first task of the organisation that goes next (the fewest slots in use per
 * weight, see `NEXT_ORG`), which takes the slot when it runs. Nothing rests on the hand-over: a task whose
 * promotion is lost (its worker died in between, or it was already awake) wakes on its own fallback, and a
 * promoted task that finds no slot parks again at its place in line.
 */

/** Moves a delayed job to the waiting list; false when it is not delayed (awake, finished or gone). */
export type Promote = (jobId: string) => Promise<boolean>;

/** Promotes the next parked task, trying past stale entries a few times; true when one was promoted. */
export async function handOnSlot(slots: CreationSlots, promote: Promote, tries = 4): Promise<boolean> {
  for (let i = 0; i < tries; i++) {
    const organisation = await slots.nextParkedOrganisation();
    if (!organisation) return false;
    const id = await slots.unpark(organisation);
    if (id && (await promote(id))) return true;
  }
  return false;
}

/**
 * Promotes parked tasks into the free slots (the periodic sweep of every worker process: slots freed by a
 * lapse, an API pod's give-back, or a hand-over that was lost). Returns how many it promoted.
 */
export async function fillFreeSlots(slots: CreationSlots, promote: Promote): Promise<number> {
  if (slots.limit <= 0) return 0;
  const free = slots.limit - (await slots.inFlight());
  let promoted = 0;
  while (promoted < free && (await handOnSlot(slots, promote))) promoted++;
  return promoted;
}
