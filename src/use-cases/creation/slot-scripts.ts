import type { RedisClient } from '../../infra/redis.js';

/**
 * The Lua of the creation limit (see `slots.ts`): every decision on the slots is one script, so "count, compare,
 * add" is atomic across every API pod and worker, and every key a script touches shares the creation's hash tag
 * (one Redis Cluster slot).
 *
 * Keys of the fair share (besides `slots`, `peak`, `attempts`, `done`):
 * - `slot-org`: hash, slot member → `<organisation>\t<taken at ms>` (who holds the slot, since when);
 * - `org-use`: hash, organisation → slots it holds;
 * - `weights`: hash, organisation → its weight (absent: 1), mirrored from the database (`org set-weight`);
 * - `waiting`: sorted set, `<organisation>\t<ticket>` → the ticket's expiry; a ticket is a v1 create waiting in
 *   its API pod (`req:<request id>`, renewed while it waits) or a parked v2 task (`job:<job id>`);
 * - `org-waiting`: hash, organisation → its live tickets; `org-parked`: hash, organisation → its parked tasks;
 * - `parked:<organisation>`: sorted set, job id → when the task was first parked (the organisation's line);
 * - `hold`: the mean time a slot is held (ms, a moving average), for `Retry-After`.
 */

const NOW = `local t = redis.call('TIME') local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)`;

/** Lowers an organisation's count in a hash, removing the field at zero. */
const DECREMENT = `local function decrement(hash, org)
  if redis.call('HINCRBY', hash, org, -1) <= 0 then redis.call('HDEL', hash, org) end
end
local function orgOf(entry) return string.match(entry, '^([^\\t]*)') end`;

/**
 * Drops lapsed slots (a crashed holder's: nobody renewed it) and lapsed tickets, keeping the per-organisation
 * counts right. `SLOTS`, `SLOT_ORG`, `ORG_USE`, `WAITING`, `ORG_WAITING` are the script's key variables.
 */
const CLEAN = `local function clean()
  local gone = redis.call('ZRANGEBYSCORE', SLOTS, '-inf', now, 'LIMIT', 0, 500)
  for _, m in ipairs(gone) do
    local holder = redis.call('HGET', SLOT_ORG, m)
    if holder then decrement(ORG_USE, orgOf(holder)) redis.call('HDEL', SLOT_ORG, m) end
    redis.call('ZREM', SLOTS, m)
  end
  local lapsed = redis.call('ZRANGEBYSCORE', WAITING, '-inf', now, 'LIMIT', 0, 500)
  for _, w in ipairs(lapsed) do
    decrement(ORG_WAITING, orgOf(w))
    redis.call('ZREM', WAITING, w)
  end
end`;

/**
 * The shares: every organisation holding a slot or waiting for one (and the caller) is active; an active
 * organisation's share is the limit times its weight over the active weights. `FAIR` says whether shares apply.
 */
const SHARES = `local function shares(limit, org)
  local active, use, waiting, weight = { [org] = true }, {}, {}, {}
  local uses = redis.call('HGETALL', ORG_USE)
  for i = 1, #uses, 2 do active[uses[i]] = true use[uses[i]] = tonumber(uses[i + 1]) end
  local waits = redis.call('HGETALL', ORG_WAITING)
  for i = 1, #waits, 2 do active[waits[i]] = true waiting[waits[i]] = tonumber(waits[i + 1]) end
  local total = 0
  for o in pairs(active) do
    weight[o] = tonumber(redis.call('HGET', WEIGHTS, o) or '1') or 1
    if weight[o] <= 0 then weight[o] = 1 end
    total = total + weight[o]
  end
  local share = {}
  for o in pairs(active) do share[o] = limit * weight[o] / total end
  return share, use, waiting
end`;

// KEYS: slots, peak, attempts, done, slot-org, org-use, weights, waiting, org-waiting, hold.
// ARGV: member, limit (0 = none), lease ms, mode ('api' | 'worker'), claim, organisation, fair ('1' | '0'),
// ticket ('' = none), ticket ms (how long an api ticket lives unless renewed).
// Returns {status, in_flight, attempt, claimed, done, org_use, share_milli, org_waiting, hold_ms}: status 1 taken
// (or renewed, worker mode), 0 refused (the organisation is at or over its share: the whole limit when alone),
// 2 wait (under its share while the limit is full: in api mode its ticket is recorded, so that organisations
// over their share give the next slot up), -1 already held (api mode). `attempt`, `claimed`, `done`: see
// `CreationSlots.acquire`.
export const ACQUIRE = `${NOW}
${DECREMENT}
local SLOTS, SLOT_ORG, ORG_USE, WEIGHTS, WAITING, ORG_WAITING = KEYS[1], KEYS[5], KEYS[6], KEYS[7], KEYS[8], KEYS[9]
${CLEAN}
${SHARES}
clean()
local member, lease, mode, org, ticket = ARGV[1], tonumber(ARGV[3]), ARGV[4], ARGV[6], ARGV[8]
local limit = tonumber(ARGV[2])
local hold = tonumber(redis.call('GET', KEYS[10]) or '0')
local function dropTicket()
  if ticket ~= '' and redis.call('ZREM', WAITING, org .. '\\t' .. ticket) == 1 then decrement(ORG_WAITING, org) end
end
local share, use, waiting = { [org] = limit }, {}, {}
if limit > 0 and ARGV[7] == '1' then share, use, waiting = shares(limit, org)
else use[org] = tonumber(redis.call('HGET', ORG_USE, org) or '0') end
local mine = use[org] or 0
local function answer(status, card, attempt, claimed, done)
  return {status, card, attempt, claimed, done, use[org] or 0, math.floor(share[org] * 1000),
    tonumber(redis.call('HGET', ORG_WAITING, org) or '0'), math.floor(hold)}
end
if redis.call('ZSCORE', SLOTS, member) then
  if mode == 'api' then return answer(-1, redis.call('ZCARD', SLOTS), 0, 0, 0) end
  redis.call('ZADD', SLOTS, now + lease, member)
  dropTicket()
  return answer(1, redis.call('ZCARD', SLOTS), 0, 0, 0)
end
local card = redis.call('ZCARD', SLOTS)
if limit > 0 then
  local under = ARGV[7] == '1' and mine < share[org]
  local yield = false
  if not under then
    for o, s in pairs(share) do
      if o ~= org and (waiting[o] or 0) > 0 and (use[o] or 0) < s then yield = true break end
    end
  end
  if card >= limit or yield then
    if not under then return answer(0, card, 0, 0, 0) end
    if mode == 'api' and ticket ~= '' then
      if redis.call('ZADD', WAITING, now + tonumber(ARGV[9]), org .. '\\t' .. ticket) == 1 then
        redis.call('HINCRBY', ORG_WAITING, org, 1)
      end
    end
    return answer(2, card, 0, 0, 0)
  end
end
redis.call('ZADD', SLOTS, now + lease, member)
redis.call('HSET', SLOT_ORG, member, org .. '\\t' .. now)
use[org] = tonumber(redis.call('HINCRBY', ORG_USE, org, 1))
dropTicket()
card = card + 1
if card > tonumber(redis.call('GET', KEYS[2]) or '0') then redis.call('SET', KEYS[2], card) end
if mode ~= 'api' then return answer(1, card, 0, 0, 0) end
local attempt = tonumber(redis.call('HGET', KEYS[3], member) or '0')
if attempt == 0 and ARGV[5] == '1' then return answer(1, card, redis.call('HINCRBY', KEYS[3], member, 1), 1, 0) end
return answer(1, card, attempt, 0, tonumber(redis.call('HGET', KEYS[4], member) or '0'))`;

// KEYS: slots, done, slot-org, org-use, hold, org-parked. ARGV: member, the finished job's attempt (0: none; -1:
// a release, which records no attempt). Frees the slot (and its organisation's count) and records that the
// attempt's job is over, in one step: whoever takes the slot next knows the job is finished even before BullMQ
// has moved it to completed. Returns how many organisations have parked tasks (a worker then hands it on).
export const FINISH = `${NOW}
${DECREMENT}
local holder = redis.call('HGET', KEYS[3], ARGV[1])
if redis.call('ZREM', KEYS[1], ARGV[1]) == 1 and holder then
  decrement(KEYS[4], orgOf(holder))
  local taken = tonumber(string.match(holder, '\\t(%d+)$') or now)
  local held = now - taken
  local mean = tonumber(redis.call('GET', KEYS[5]) or tostring(held))
  redis.call('SET', KEYS[5], math.floor(mean * 0.9 + held * 0.1))
end
if holder then redis.call('HDEL', KEYS[3], ARGV[1]) end
local attempt = tonumber(ARGV[2])
if attempt > tonumber(redis.call('HGET', KEYS[2], ARGV[1]) or '0') then redis.call('HSET', KEYS[2], ARGV[1], attempt) end
return redis.call('HLEN', KEYS[6])`;

// Renews only a slot that is still held: a late heartbeat must never resurrect a released slot.
export const RENEW = `${NOW}
local score = redis.call('ZSCORE', KEYS[1], ARGV[1])
if score and tonumber(score) > now then
  redis.call('ZADD', KEYS[1], now + tonumber(ARGV[2]), ARGV[1])
  return 1
end
return 0`;

export const HELD = `${NOW}
local score = redis.call('ZSCORE', KEYS[1], ARGV[1])
if score and tonumber(score) > now then return 1 end
return 0`;

export const IN_FLIGHT = `${NOW}
return redis.call('ZCOUNT', KEYS[1], '(' .. now, '+inf')`;

// KEYS: slots, slot-org, org-use, weights, waiting, org-waiting. ARGV: organisation, limit, fair.
// Returns {org_use, share_milli, in_flight, org_waiting} for an organisation (a reading: nothing is taken).
export const USAGE = `${NOW}
${DECREMENT}
local SLOTS, SLOT_ORG, ORG_USE, WEIGHTS, WAITING, ORG_WAITING = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6]
${CLEAN}
${SHARES}
clean()
local org, limit = ARGV[1], tonumber(ARGV[2])
local share = { [org] = limit }
if limit > 0 and ARGV[3] == '1' then share = shares(limit, org) end
return {tonumber(redis.call('HGET', ORG_USE, org) or '0'), math.floor(share[org] * 1000), redis.call('ZCARD', SLOTS),
  tonumber(redis.call('HGET', ORG_WAITING, org) or '0')}`;

// KEYS: parked:<org>, waiting, org-waiting, org-parked. ARGV: organisation, job id, first parked at (ms), ticket
// expiry (ms from now). Puts a v2 task in its organisation's line (keeping its place when it is there already)
// and records its ticket.
export const PARK = `${NOW}
redis.call('ZADD', KEYS[1], 'NX', ARGV[3], ARGV[2])
redis.call('HSET', KEYS[4], ARGV[1], redis.call('ZCARD', KEYS[1]))
if redis.call('ZADD', KEYS[2], now + tonumber(ARGV[4]), ARGV[1] .. '\\tjob:' .. ARGV[2]) == 1 then
  redis.call('HINCRBY', KEYS[3], ARGV[1], 1)
end
return 1`;

// KEYS: parked:<org>, waiting, org-waiting, org-parked. ARGV: organisation, job id ('' = the first in line).
// Takes a task out of its organisation's line with its ticket; returns its job id (false: the line is empty).
export const UNPARK = `${DECREMENT}
local id = ARGV[2]
if id == '' then
  local first = redis.call('ZPOPMIN', KEYS[1])
  if #first == 0 then redis.call('HDEL', KEYS[4], ARGV[1]) return false end
  id = first[1]
elseif redis.call('ZREM', KEYS[1], id) == 0 then return false end
local left = redis.call('ZCARD', KEYS[1])
if left == 0 then redis.call('HDEL', KEYS[4], ARGV[1]) else redis.call('HSET', KEYS[4], ARGV[1], left) end
if redis.call('ZREM', KEYS[2], ARGV[1] .. '\\tjob:' .. id) == 1 then decrement(KEYS[3], ARGV[1]) end
return id`;

// KEYS: org-parked, org-use, weights. ARGV: fair. The organisation whose parked task goes next: with shares,
// the lowest slots-in-use per weight (after one more slot), so lines are served by weight in turn; without,
// any organisation with a line (the oldest task is then its own line's first). False: nothing is parked.
export const NEXT_ORG = `local parked = redis.call('HGETALL', KEYS[1])
local best, score = false, nil
for i = 1, #parked, 2 do
  local o = parked[i]
  local w = tonumber(redis.call('HGET', KEYS[3], o) or '1') or 1
  if w <= 0 then w = 1 end
  local s = (tonumber(redis.call('HGET', KEYS[2], o) or '0') + 1) / w
  if ARGV[1] ~= '1' then s = 0 end
  if score == nil or s < score then best, score = o, s end
end
return best`;

// KEYS: task-rank:<org>, weights. ARGV: organisation, how long the rank lives without a new task (ms), the
// highest priority. The BullMQ priority of the organisation's next v2 task: its rank among the tasks the
// organisation scheduled lately, over its weight. Due tasks are taken lowest priority first, so the due tasks of
// several organisations are started in turn by weight (the n-th of one beside the n-th of another), however
// many one of them has; within an organisation, in the order they were scheduled.
export const TASK_PRIORITY = `local n = redis.call('INCR', KEYS[1])
redis.call('PEXPIRE', KEYS[1], ARGV[2])
local w = tonumber(redis.call('HGET', KEYS[2], ARGV[1]) or '1') or 1
if w <= 0 then w = 1 end
return math.min(1 + math.floor((n - 1) / w), tonumber(ARGV[3]))`;

// KEYS: attempts. ARGV: member, the attempt the caller saw. Moves to the next attempt only if no one else
// did since; either way returns the current one, so two racing claims join the same job.
export const CLAIM = `local current = tonumber(redis.call('HGET', KEYS[1], ARGV[1]) or '0')
if current == tonumber(ARGV[2]) then current = redis.call('HINCRBY', KEYS[1], ARGV[1], 1) end
return current`;

// KEYS: attempts. ARGV: member, an attempt whose job exists. Raises the counter to it (never lowers it).
export const RESTORE = `local current = tonumber(redis.call('HGET', KEYS[1], ARGV[1]) or '0')
if current < tonumber(ARGV[2]) then redis.call('HSET', KEYS[1], ARGV[1], ARGV[2]) end
return 1`;

type Reply9 = [number, number, number, number, number, number, number, number, number];

export type SlotCommands = {
  slotAcquire(...args: (string | number)[]): Promise<Reply9>;
  slotFinish(...args: (string | number)[]): Promise<number>;
  slotRenew(slots: string, member: string, leaseMs: number): Promise<number>;
  slotHeld(slots: string, member: string): Promise<number>;
  slotInFlight(slots: string): Promise<number>;
  slotUsage(...args: (string | number)[]): Promise<[number, number, number, number]>;
  slotPark(...args: (string | number)[]): Promise<number>;
  slotUnpark(...args: string[]): Promise<string | null>;
  slotNextOrg(...args: string[]): Promise<string | null>;
  slotTaskPriority(rank: string, weights: string, org: string, ttlMs: number, max: number): Promise<number>;
  slotClaimAttempt(attempts: string, member: string, seen: number): Promise<number>;
  slotRestoreAttempt(attempts: string, member: string, attempt: number): Promise<number>;
};

export function withSlotCommands(redis: RedisClient): RedisClient & SlotCommands {
  if (!('slotAcquire' in redis)) {
    redis.defineCommand('slotAcquire', { numberOfKeys: 10, lua: ACQUIRE });
    redis.defineCommand('slotFinish', { numberOfKeys: 6, lua: FINISH });
    redis.defineCommand('slotRenew', { numberOfKeys: 1, lua: RENEW });
    redis.defineCommand('slotHeld', { numberOfKeys: 1, lua: HELD });
    redis.defineCommand('slotInFlight', { numberOfKeys: 1, lua: IN_FLIGHT });
    redis.defineCommand('slotUsage', { numberOfKeys: 6, lua: USAGE });
    redis.defineCommand('slotPark', { numberOfKeys: 4, lua: PARK });
    redis.defineCommand('slotUnpark', { numberOfKeys: 4, lua: UNPARK });
    redis.defineCommand('slotNextOrg', { numberOfKeys: 3, lua: NEXT_ORG });
    redis.defineCommand('slotTaskPriority', { numberOfKeys: 2, lua: TASK_PRIORITY });
    redis.defineCommand('slotClaimAttempt', { numberOfKeys: 1, lua: CLAIM });
    redis.defineCommand('slotRestoreAttempt', { numberOfKeys: 1, lua: RESTORE });
  }
  return redis as RedisClient & SlotCommands;
}
