import type { RedisClient } from '../../infra/redis.js';

/**
 * The Lua scripts that keep a supplier's progress counts (the keys they keep: `progress-counters.ts`), each
 * defined once per Redis client as a command. Every key of a supplier shares one hash tag, so each script runs
 * on one Redis Cluster slot, and its effects replicate together: a failover that loses recent writes leaves a
 * consistent earlier state, never an index without its counts.
 *
 * The counts live in an epoch (`<base>:<epoch>:…`) named by `<base>:meta`: `cur` the epoch served, `next` the
 * one a rebuild is filling from the database while the changes keep applying to both. A change applies to each
 * epoch by the position of the event it reports (newer wins), so it does not matter whether the rebuild or the
 * change gets to an account first.
 */

const LIB = `
local function dec(key, field, n)
  if redis.call('HINCRBY', key, field, -n) <= 0 then redis.call('HDEL', key, field) end
end
local function zkey(ep, s) return ep .. ':z:' .. s end
local function remove(ep, o, ext)
  local counts = ep .. ':counts'
  if o.x == 1 then
    dec(counts, 'SKIPPED', 1)
    redis.call('ZREM', zkey(ep, 'SKIPPED'), ext)
    return
  end
  if o.s == '' then return end
  dec(counts, o.s, 1)
  redis.call('ZREM', zkey(ep, o.s), ext)
  if o.c ~= '' then
    dec(counts, 'f:' .. o.c, 1)
    redis.call('ZREM', zkey(ep, o.s) .. ':' .. o.c, ext)
    for _, p in ipairs(o.a) do dec(counts, 'a:' .. o.c .. '\\t' .. p, 1) end
  end
end
local function add(ep, n, ext)
  local counts = ep .. ':counts'
  if n.x == 1 then
    redis.call('HINCRBY', counts, 'SKIPPED', 1)
    redis.call('ZADD', zkey(ep, 'SKIPPED'), n.t, ext)
    return
  end
  if n.s == '' then return end
  redis.call('HINCRBY', counts, n.s, 1)
  redis.call('ZADD', zkey(ep, n.s), n.t, ext)
  if n.c ~= '' then
    redis.call('SADD', ep .. ':codes', n.c)
    redis.call('HINCRBY', counts, 'f:' .. n.c, 1)
    redis.call('ZADD', zkey(ep, n.s) .. ':' .. n.c, n.t, ext)
    for _, p in ipairs(n.a) do redis.call('HINCRBY', counts, 'a:' .. n.c .. '\\t' .. p, 1) end
  end
end
local function decode(text)
  local o = cjson.decode(text)
  if type(o.a) ~= 'table' then o.a = {} end
  return o
end
-- Applies an entry to one epoch when its position is newer than the one held; counts a status reached in a
-- minute still kept (ttl seconds before now).
local function applyTo(ep, ext, n, ttl, now)
  local held = redis.call('HGET', ep .. ':idx', ext)
  local o = nil
  if held then
    o = decode(held)
    if o.q >= n.q then return 0 end
    n.x = o.x
    remove(ep, o, ext)
  end
  redis.call('HSET', ep .. ':idx', ext, cjson.encode(n))
  add(ep, n, ext)
  if n.x == 0 and (o == nil or o.s ~= n.s) and n.t > now - ttl * 1000 then
    local field = nil
    if n.s == 'PROCESSED' then field = 'P' elseif n.s == 'ERRORED' or n.s == 'DRY_RUN_ERRORED' then field = 'E' end
    if field then
      local m = ep .. ':m:' .. math.floor(n.t / 60000)
      redis.call('HINCRBY', m, field, 1)
      redis.call('EXPIRE', m, ttl)
    end
  end
  return 1
end
-- The epochs a change applies to; none held (a new supplier, or Redis lost what it held): epoch 1 is started
-- and marked stale, so that a rebuild from the database follows.
local function epochs(meta, base)
  local m = redis.call('HMGET', meta, 'cur', 'next')
  local cur, nxt = m[1], m[2]
  if not cur and not nxt then
    redis.call('HSET', meta, 'cur', '1', 'stale', '1')
    cur = '1'
  end
  local out = {}
  if cur then table.insert(out, base .. ':' .. cur) end
  if nxt and nxt ~= cur then table.insert(out, base .. ':' .. nxt) end
  return out, cur, nxt
end
-- The keys' prefix of the epoch being rebuilt, heard from now (nil when that epoch is no longer being built).
local function building(meta, base, epoch, now)
  if redis.call('HGET', meta, 'next') ~= epoch then return nil end
  redis.call('HSET', meta, 'beat', now)
  return base .. ':' .. epoch
end
local function runId()
  local info = redis.call('INFO', 'server')
  return string.match(info, 'run_id:(%x+)') or ''
end
`;

/** KEYS[1] meta; ARGV: base, ext, entry JSON, pending member ('' for none), minute ttl s, now ms. */
const APPLY = `${LIB}
local base, ext = ARGV[1], ARGV[2]
if ARGV[4] ~= '' then redis.call('ZREM', base .. ':pending', ARGV[4]) end
local applied = 0
local list = epochs(KEYS[1], base)
for _, ep in ipairs(list) do
  if applyTo(ep, ext, decode(ARGV[3]), tonumber(ARGV[5]), tonumber(ARGV[6])) == 1 then applied = 1 end
end
return applied`;

/** KEYS[1] meta; ARGV: base, ext, time ms. Marks a process skipped in every epoch (idempotent). */
const SKIP = `${LIB}
local base, ext = ARGV[1], ARGV[2]
local list = epochs(KEYS[1], base)
local done = 0
for _, ep in ipairs(list) do
  local held = redis.call('HGET', ep .. ':idx', ext)
  local o
  if held then o = decode(held) else o = {q = -1, s = '', c = '', a = {}, k = '', e = '', x = 0} end
  if o.x ~= 1 then
    if held then remove(ep, o, ext) end
    o.x = 1
    o.t = tonumber(ARGV[3])
    redis.call('HSET', ep .. ':idx', ext, cjson.encode(o))
    add(ep, o, ext)
    done = 1
  end
end
return done`;

/**
 * KEYS[1] meta; ARGV: base, event id, resource, count, pending member. Counts a post-import event in the served
 * epoch only when its pending member was still there (the one writer that inserted it, or the repair of its
 * change, removes it once), and in an epoch being rebuilt once per event id (the rebuild counts what it finds
 * in the database by the same ids).
 */
const POST = `${LIB}
local base, id, field, n = ARGV[1], ARGV[2], 'p:' .. ARGV[3], tonumber(ARGV[4])
local removed = redis.call('ZREM', base .. ':pending', ARGV[5])
local list, cur, nxt = epochs(KEYS[1], base)
local counted = 0
if nxt and redis.call('HSETNX', base .. ':' .. nxt .. ':posted', id, '1') == 1 then
  redis.call('HINCRBY', base .. ':' .. nxt .. ':counts', field, n)
  counted = 1
end
if cur and cur ~= nxt and removed == 1 then
  redis.call('HINCRBY', base .. ':' .. cur .. ':counts', field, n)
  counted = 1
end
return counted`;

/**
 * KEYS[1] meta; ARGV: base, force ('1'), now ms, beat timeout ms. Whether the counts need a rebuild from the
 * database: nothing held (lost, or never built), marked stale (a change could not be counted, or epoch 1
 * started on its own), or the Redis server holding them is not the one that built them (a failover or a
 * restart: recent writes may be gone). Returns {0} (no), {1, epoch} (a rebuild is under way, heard from within
 * the timeout), or {2, epoch} (the caller is to run the rebuild of that epoch).
 */
const BEGIN = `${LIB}
local base, now = ARGV[1], tonumber(ARGV[3])
local m = redis.call('HMGET', KEYS[1], 'cur', 'next', 'stale', 'run', 'beat')
local cur, nxt, stale, run, beat = m[1], m[2], m[3], m[4], tonumber(m[5] or '0')
local id = runId()
local need = ARGV[2] == '1' or not cur or stale == '1' or run ~= id or nxt
if not need then return {0, cur} end
if nxt and ARGV[2] ~= '1' and now - beat < tonumber(ARGV[4]) then return {1, nxt} end
if not nxt then
  nxt = tostring(tonumber(cur or '0') + 1)
  -- Leftovers of an epoch of that number (a rebuild abandoned before a loss) are not part of it.
  redis.call('DEL', base .. ':' .. nxt .. ':idx', base .. ':' .. nxt .. ':counts', base .. ':' .. nxt .. ':posted')
end
redis.call('HSET', KEYS[1], 'next', nxt, 'beat', tostring(now), 'nextRun', id)
redis.call('HDEL', KEYS[1], 'stale')
return {2, nxt}`;

/**
 * KEYS[1] meta; ARGV: base, epoch, minute ttl s, now ms, then (ext, entry JSON) pairs. The rebuild's
 * application of the heads it read from the database. Returns -1 when that epoch is no longer being built.
 */
const REBUILD_APPLY = `${LIB}
local ep = building(KEYS[1], ARGV[1], ARGV[2], ARGV[4])
if not ep then return -1 end
local applied = 0
for i = 5, #ARGV, 2 do
  applied = applied + applyTo(ep, ARGV[i], decode(ARGV[i + 1]), tonumber(ARGV[3]), tonumber(ARGV[4]))
end
return applied`;

/** KEYS[1] meta; ARGV: base, epoch, now ms, then (id, resource, count) triples. -1: not being built. */
const REBUILD_POST = `${LIB}
local ep = building(KEYS[1], ARGV[1], ARGV[2], ARGV[3])
if not ep then return -1 end
local counted = 0
for i = 4, #ARGV, 3 do
  if redis.call('HSETNX', ep .. ':posted', ARGV[i], '1') == 1 then
    redis.call('HINCRBY', ep .. ':counts', 'p:' .. ARGV[i + 1], tonumber(ARGV[i + 2]))
    counted = counted + 1
  end
end
return counted`;

/**
 * KEYS[1] meta; ARGV: base, epoch, now ms. Serves the rebuilt epoch: the post-import changes still pending
 * whose events it already counted are dropped (their later application would count them again), its set of
 * counted events goes (what the counts keep stays bounded), and it becomes `cur`, built by this server.
 * Returns {1, old epoch or '', old counts (flat), new counts (flat)}, or {0} when the epoch is not the one
 * being built, or the server is not the one the rebuild began on (a failover under it: built again).
 */
const FINISH = `${LIB}
local base, epoch = ARGV[1], ARGV[2]
local m = redis.call('HMGET', KEYS[1], 'cur', 'next', 'nextRun')
if m[2] ~= epoch then return {0} end
if m[3] ~= runId() then
  redis.call('HDEL', KEYS[1], 'next')
  redis.call('HSET', KEYS[1], 'stale', '1')
  return {0}
end
local ep = base .. ':' .. epoch
local pending = redis.call('ZRANGE', base .. ':pending', 0, -1)
for _, member in ipairs(pending) do
  local ok, change = pcall(cjson.decode, member)
  if ok and change.kind == 'post' and redis.call('HEXISTS', ep .. ':posted', change.id) == 1 then
    redis.call('ZREM', base .. ':pending', member)
  end
end
redis.call('DEL', ep .. ':posted')
redis.call('HSET', KEYS[1], 'cur', epoch, 'run', m[3], 'at', ARGV[3])
redis.call('HDEL', KEYS[1], 'next', 'beat', 'nextRun')
local old = m[1] or ''
local before = {}
if old ~= '' and old ~= epoch then before = redis.call('HGETALL', base .. ':' .. old .. ':counts') end
return {1, old, before, redis.call('HGETALL', ep .. ':counts')}`;

/** KEYS[1] meta; ARGV: base, epoch, then the statuses. Deletes an epoch no longer served nor built. */
const DROP = `
local base, epoch = ARGV[1], ARGV[2]
local m = redis.call('HMGET', KEYS[1], 'cur', 'next')
if m[1] == epoch or m[2] == epoch then return 0 end
local ep = base .. ':' .. epoch
local codes = redis.call('SMEMBERS', ep .. ':codes')
for i = 3, #ARGV do
  redis.call('UNLINK', ep .. ':z:' .. ARGV[i])
  for _, c in ipairs(codes) do redis.call('UNLINK', ep .. ':z:' .. ARGV[i] .. ':' .. c) end
end
redis.call('UNLINK', ep .. ':idx', ep .. ':counts', ep .. ':codes', ep .. ':posted')
return 1`;

/**
 * KEYS[1] meta; ARGV: base, from minute, to minute. What a progress read needs in one round trip: the served
 * epoch (the one being built when nothing else is), whether the counts are being rebuilt (or are to be), its
 * counts (flat) and its per-minute figures ({P, E} per minute, flat).
 */
const READ = `${LIB}
local base = ARGV[1]
local m = redis.call('HMGET', KEYS[1], 'cur', 'next', 'stale', 'run')
local epoch = m[1] or m[2]
local rebuilding = 0
if not m[1] or m[2] or m[3] == '1' or m[4] ~= runId() then rebuilding = 1 end
if not epoch then return {'', rebuilding, {}, {}} end
local ep = base .. ':' .. epoch
local minutes = {}
for minute = tonumber(ARGV[2]), tonumber(ARGV[3]) do
  local v = redis.call('HMGET', ep .. ':m:' .. minute, 'P', 'E')
  table.insert(minutes, v[1] or '0')
  table.insert(minutes, v[2] or '0')
end
return {epoch, rebuilding, redis.call('HGETALL', ep .. ':counts'), minutes}`;

/** KEYS[1] meta; ARGV: base. Marks the counts stale (a change could not be counted: a rebuild follows). */
const STALE = `redis.call('HSET', KEYS[1], 'stale', '1') return 1`;

export type Commands = {
  progressApply(key: string, ...args: (string | number)[]): Promise<number>;
  progressSkip(key: string, ...args: (string | number)[]): Promise<number>;
  progressPost(key: string, ...args: (string | number)[]): Promise<number>;
  progressBegin(key: string, ...args: (string | number)[]): Promise<[number, string | null]>;
  progressRebuildApply(key: string, ...args: (string | number)[]): Promise<number>;
  progressRebuildPost(key: string, ...args: (string | number)[]): Promise<number>;
  progressFinish(key: string, ...args: (string | number)[]): Promise<[number, string?, string[]?, string[]?]>;
  progressDrop(key: string, ...args: (string | number)[]): Promise<number>;
  progressRead(key: string, ...args: (string | number)[]): Promise<[string, number, string[], string[]]>;
  progressStale(key: string, ...args: (string | number)[]): Promise<number>;
};

const scripts: Record<keyof Commands, string> = {
  progressApply: APPLY,
  progressSkip: SKIP,
  progressPost: POST,
  progressBegin: BEGIN,
  progressRebuildApply: REBUILD_APPLY,
  progressRebuildPost: REBUILD_POST,
  progressFinish: FINISH,
  progressDrop: DROP,
  progressRead: READ,
  progressStale: STALE,
};

export function withCommands(redis: RedisClient): RedisClient & Commands {
  if (!('progressRead' in redis)) {
    for (const [name, lua] of Object.entries(scripts)) redis.defineCommand(name, { numberOfKeys: 1, lua });
  }
  return redis as RedisClient & Commands;
}
