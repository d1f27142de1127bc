import { RATE_WINDOW_MS, RECENT_SPACING_MAX_MS } from '../../domain/cutover/plan.js';
import type { RedisClient } from '../../infra/redis.js';

/**
 * The Lua of a cohort plan's gate (see `plan-gate.ts`). Every decision is one script over the supplier's three
 * keys, which share one hash tag (one Redis Cluster slot), so "count, compare, admit" and "count, compare,
 * pause" are atomic across every API pod and worker.
 *
 * - `state` hash: the settings (`expected`, `canary`, `pct`, `over`, `ws`, `we`: window bounds in ms, 0 none),
 *   the pause (`paused`: '' or its reason, `since` ms, `note`, `codes` JSON), the counts of the plan's own
 *   creations (`processed`, `errored`), `approved` ('1' once the canary is approved), and the transitions
 *   (`pauses`, `risks`: how many there were, the cohort events' numbers; `at_risk` '1' while at risk), and the
 *   current run for the projection's rate: `run_at` (ms) the first admission after none for `RUN_GAP_MS`,
 *   `run_done` the plan's finished creations (`processed` + `errored`) then, `admitted_at` the last admission;
 *   and two checkpoints of the run (`ck1_at`/`ck1_done` older, `ck2_at`/`ck2_done` newer: when, and the plan's
 *   finished creations then), rolled as creations finish so that `ck1` stays a quarter to a half of the run's age
 *   back (at most 2 × `RECENT_SPACING_MAX_MS`): the recent rate is measured from it.
 * - `in-flight` set: the creations admitted and not finished (a slot member each: the process key).
 * - `recent` list: the last `over` finished outcomes, newest first ('' for PROCESSED, else the error code).
 */

const NOW = `local t = redis.call('TIME') local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)`;
const NUM = `local function num(f) return tonumber(redis.call('HGET', KEYS[1], f) or '0') or 0 end`;

/**
 * No admission for this long ends a run: the next admission starts another (a rehearsal again, a resume after a
 * long pause). The projection's rate window: a run older than it is measured over that window alone.
 */
export const RUN_GAP_MS = RATE_WINDOW_MS;

// ARGV: member. Returns {status, reason, window start ms}: 1 admitted (or already in flight), 0 paused (reason
// canary | breaker | operator), 2 not now (reason: canary, its N being created; before_window; window_ended).
export const ADMIT = `${NOW}
${NUM}
if redis.call('EXISTS', KEYS[1]) == 0 then return {1, '', 0} end
if redis.call('SISMEMBER', KEYS[2], ARGV[1]) == 1 then return {1, '', 0} end
local paused = redis.call('HGET', KEYS[1], 'paused') or ''
if paused ~= '' then return {0, paused, 0} end
local ws, we = num('ws'), num('we')
if ws > 0 and now < ws then return {2, 'before_window', ws} end
if we > 0 and now > we then return {2, 'window_ended', 0} end
local canary = num('canary')
if canary > 0 and redis.call('HGET', KEYS[1], 'approved') ~= '1' then
  if num('processed') + redis.call('SCARD', KEYS[2]) >= canary then return {2, 'canary', 0} end
end
if now - num('admitted_at') > ${RUN_GAP_MS} then
  local fin = num('processed') + num('errored')
  redis.call('HSET', KEYS[1], 'run_at', now, 'run_done', fin, 'ck1_at', 0, 'ck1_done', 0, 'ck2_at', now,
    'ck2_done', fin)
end
redis.call('HSET', KEYS[1], 'admitted_at', now)
redis.call('SADD', KEYS[2], ARGV[1])
return {1, '', 0}`;

const PAUSE_FN = `local function pause(reason, note, codes)
  redis.call('HSET', KEYS[1], 'paused', reason, 'since', now, 'note', note, 'codes', codes)
  return redis.call('HINCRBY', KEYS[1], 'pauses', 1)
end`;

// ARGV: member, outcome ('ok' | 'error' | 'none': not a finished account), error code. Returns {pause number (0:
// no transition), reason, processed, errored, in flight, codes JSON}. Only an admitted creation counts, once.
export const SETTLE = `${NOW}
${NUM}
${PAUSE_FN}
if redis.call('SREM', KEYS[2], ARGV[1]) == 0 or ARGV[2] == 'none' then return {0, '', 0, 0, 0, ''} end
if ARGV[2] == 'ok' then redis.call('HINCRBY', KEYS[1], 'processed', 1)
else redis.call('HINCRBY', KEYS[1], 'errored', 1) end
local runAt = num('run_at')
if runAt > 0 then
  local spacing = math.max(1000, math.min(math.floor((now - runAt) / 4), ${RECENT_SPACING_MAX_MS}))
  if now - num('ck2_at') >= spacing then
    redis.call('HSET', KEYS[1], 'ck1_at', num('ck2_at'), 'ck1_done', num('ck2_done'), 'ck2_at', now,
      'ck2_done', num('processed') + num('errored'))
  end
end
local over, pct = num('over'), num('pct')
if over > 0 then
  redis.call('LPUSH', KEYS[3], ARGV[2] == 'ok' and '' or ARGV[3])
  redis.call('LTRIM', KEYS[3], 0, over - 1)
end
local n, reason, codes = 0, '', ''
if (redis.call('HGET', KEYS[1], 'paused') or '') == '' then
  local canary = num('canary')
  if canary > 0 and redis.call('HGET', KEYS[1], 'approved') ~= '1' and num('processed') >= canary then
    reason, codes = 'canary', '{}'
  elseif over > 0 then
    local recent, errors, byCode = redis.call('LRANGE', KEYS[3], 0, -1), 0, {}
    for _, c in ipairs(recent) do
      if c ~= '' then errors = errors + 1 byCode[c] = (byCode[c] or 0) + 1 end
    end
    if errors * 100 > pct * over then reason, codes = 'breaker', cjson.encode(byCode) end
  end
  if reason ~= '' then n = pause(reason, '', codes) end
end
return {n, reason, num('processed'), num('errored'), redis.call('SCARD', KEYS[2]), codes}`;

// ARGV: note. Returns {pause number (0: already paused), reason in force, processed, errored, in flight}.
export const PAUSE = `${NOW}
${NUM}
${PAUSE_FN}
if redis.call('EXISTS', KEYS[1]) == 0 then return {-1, '', 0, 0, 0} end
local paused = redis.call('HGET', KEYS[1], 'paused') or ''
local n = 0
if paused == '' then n = pause('operator', ARGV[1], '{}') paused = 'operator' end
return {n, paused, num('processed'), num('errored'), redis.call('SCARD', KEYS[2])}`;

// Returns the reason the plan was paused for ('' when it was not; '-' without a plan). Approving the canary
// lets the rest through; resuming after the breaker starts its window afresh.
export const RESUME = `
if redis.call('EXISTS', KEYS[1]) == 0 then return '-' end
local paused = redis.call('HGET', KEYS[1], 'paused') or ''
if paused == '' then return '' end
if paused == 'canary' then redis.call('HSET', KEYS[1], 'approved', '1') end
if paused == 'breaker' then redis.call('DEL', KEYS[3]) end
redis.call('HSET', KEYS[1], 'paused', '', 'note', '', 'codes', '')
return paused`;

// ARGV: expected, canary, pct, over, ws, we (0: none), only if missing ('1': a worker restoring the settings
// Redis lost). The pause, counts and transitions are kept: a declaration again changes the settings only.
export const DECLARE = `
if ARGV[7] == '1' and redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
redis.call('HSET', KEYS[1], 'expected', ARGV[1], 'canary', ARGV[2], 'pct', ARGV[3], 'over', ARGV[4],
  'ws', ARGV[5], 'we', ARGV[6])
local over = tonumber(ARGV[4])
if over > 0 then redis.call('LTRIM', KEYS[3], 0, over - 1) else redis.call('DEL', KEYS[3]) end
return 1`;

// ARGV: '1' at risk now, '0' not. Returns the risk's number when the plan became at risk now, else 0.
export const RISK = `
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
local was = redis.call('HGET', KEYS[1], 'at_risk') == '1'
if ARGV[1] == '1' and not was then
  redis.call('HSET', KEYS[1], 'at_risk', '1')
  return redis.call('HINCRBY', KEYS[1], 'risks', 1)
end
if ARGV[1] == '0' and was then redis.call('HSET', KEYS[1], 'at_risk', '0') end
return 0`;

// Returns {the state hash as a flat list, in flight, Redis's time in ms} (the run's age on the clock that set it).
export const READ = `${NOW}
return {redis.call('HGETALL', KEYS[1]), redis.call('SCARD', KEYS[2]), now}`;

type Keys = [string, string, string];
export type PlanCommands = {
  planAdmit(...args: [...Keys, string]): Promise<[number, string, number]>;
  planSettle(
    ...args: [...Keys, string, string, string]
  ): Promise<[number, string, number, number, number, string]>;
  planPause(...args: [...Keys, string]): Promise<[number, string, number, number, number]>;
  planResume(...args: Keys): Promise<string>;
  planDeclare(...args: [...Keys, ...(string | number)[]]): Promise<number>;
  planRisk(...args: [...Keys, string]): Promise<number>;
  planRead(...args: Keys): Promise<[string[], number, number]>;
};

export function withPlanCommands(redis: RedisClient): RedisClient & PlanCommands {
  if (!('planAdmit' in redis)) {
    const scripts = {
      planAdmit: ADMIT,
      planSettle: SETTLE,
      planPause: PAUSE,
      planResume: RESUME,
      planDeclare: DECLARE,
      planRisk: RISK,
      planRead: READ,
    };
    for (const [name, lua] of Object.entries(scripts)) redis.defineCommand(name, { numberOfKeys: 3, lua });
  }
  return redis as RedisClient & PlanCommands;
}
