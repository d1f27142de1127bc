import type { RedisClient } from '../infra/redis.js';

/**
 * The Lua scripts that change a supplier's progress counts (the keys they keep: `progress-counters.ts`), each
 * defined once per Redis client as a command.
 */

const LIB = `
local function zkey(base, s) return base .. ':z:' .. s end
local function remove(base, o, ext)
  local counts = base .. ':counts'
  if o.x == 1 then
    redis.call('HINCRBY', counts, 'SKIPPED', -1)
    redis.call('ZREM', zkey(base, 'SKIPPED'), ext)
    return
  end
  if o.s == '' then return end
  redis.call('HINCRBY', counts, o.s, -1)
  redis.call('ZREM', zkey(base, o.s), ext)
  if o.c ~= '' then
    redis.call('HINCRBY', counts, 'f:' .. o.c, -1)
    redis.call('ZREM', zkey(base, o.s) .. ':' .. o.c, ext)
    for _, p in ipairs(o.a) do redis.call('HINCRBY', counts, 'a:' .. o.c .. '\\t' .. p, -1) end
  end
end
local function add(base, n, ext)
  local counts = base .. ':counts'
  if n.x == 1 then
    redis.call('HINCRBY', counts, 'SKIPPED', 1)
    redis.call('ZADD', zkey(base, 'SKIPPED'), n.t, ext)
    return
  end
  if n.s == '' then return end
  redis.call('HINCRBY', counts, n.s, 1)
  redis.call('ZADD', zkey(base, n.s), n.t, ext)
  if n.c ~= '' then
    redis.call('HINCRBY', counts, 'f:' .. n.c, 1)
    redis.call('ZADD', zkey(base, n.s) .. ':' .. n.c, n.t, ext)
    for _, p in ipairs(n.a) do redis.call('HINCRBY', counts, 'a:' .. n.c .. '\\t' .. p, 1) end
  end
end
local function decode(text)
  local o = cjson.decode(text)
  if type(o.a) ~= 'table' then o.a = {} end
  return o
end
`;

/**
 * KEYS[1] idx; ARGV: base, ext, entry JSON, pending member ('' for none), minute ttl, force ('1': replace
 * whatever is held, the rebuild). Returns 1 when applied.
 */
const APPLY = `${LIB}
local base, ext = ARGV[1], ARGV[2]
local n = decode(ARGV[3])
if ARGV[4] ~= '' then redis.call('ZREM', base .. ':pending', ARGV[4]) end
local held = redis.call('HGET', KEYS[1], ext)
local o = nil
if held then
  o = decode(held)
  if ARGV[6] ~= '1' and o.q >= n.q then return 0 end
  if ARGV[6] ~= '1' then n.x = o.x end
  remove(base, o, ext)
end
redis.call('HSET', KEYS[1], ext, cjson.encode(n))
add(base, n, ext)
if ARGV[6] ~= '1' and n.x == 0 and (o == nil or o.s ~= n.s) then
  local field = nil
  if n.s == 'PROCESSED' then field = 'P' elseif n.s == 'ERRORED' or n.s == 'DRY_RUN_ERRORED' then field = 'E' end
  if field then
    local m = base .. ':m:' .. math.floor(n.t / 60000)
    redis.call('HINCRBY', m, field, 1)
    redis.call('EXPIRE', m, tonumber(ARGV[5]))
  end
end
return 1`;

/** KEYS[1] idx; ARGV: base, ext, time ms. Marks a process skipped (idempotent). */
const SKIP = `${LIB}
local base, ext = ARGV[1], ARGV[2]
local held = redis.call('HGET', KEYS[1], ext)
local o
if held then
  o = decode(held)
  if o.x == 1 then return 0 end
  remove(base, o, ext)
else
  o = {q = -1, s = '', c = '', a = {}, k = '', e = ''}
end
o.x = 1
o.t = tonumber(ARGV[3])
redis.call('HSET', KEYS[1], ext, cjson.encode(o))
add(base, o, ext)
return 1`;

/** KEYS[1] posted; ARGV: base, event id, resource, count, pending member. */
const POST = `
redis.call('ZREM', ARGV[1] .. ':pending', ARGV[5])
if redis.call('HSETNX', KEYS[1], ARGV[2], '1') == 0 then return 0 end
redis.call('HINCRBY', ARGV[1] .. ':counts', 'p:' .. ARGV[3], tonumber(ARGV[4]))
return 1`;

export type Commands = {
  progressApply(key: string, ...args: (string | number)[]): Promise<number>;
  progressSkip(key: string, ...args: (string | number)[]): Promise<number>;
  progressPost(key: string, ...args: (string | number)[]): Promise<number>;
};

export function withCommands(redis: RedisClient): RedisClient & Commands {
  if (!('progressApply' in redis)) {
    redis.defineCommand('progressApply', { numberOfKeys: 1, lua: APPLY });
    redis.defineCommand('progressSkip', { numberOfKeys: 1, lua: SKIP });
    redis.defineCommand('progressPost', { numberOfKeys: 1, lua: POST });
  }
  return redis as RedisClient & Commands;
}
