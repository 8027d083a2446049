-- Include: one shard of the sweep registry. A hash with work is listed in a bucket of the time
-- slice (SLICE_MS wide) it is due in: a sorted set of user key -> when the hash next has work
-- (ms). Buckets hold at most FULL hashes, so Redis keeps them in its compact (listpack) encoding:
-- about 27 bytes a listed hash where one sorted set per shard cost about 109 (a slice with only
-- one or two hashes in a shard costs more: about 205, as each bucket is a key). A slice's first
-- bucket is named by the slice; once it is full, a hash goes one level down its path: at level L,
-- to bucket L.(sha1(hash) mod 4^L), so a busy slice spreads over more buckets and a quiet one
-- keeps one. The shard's index, a sorted set of bucket name -> the earliest time it needs a look,
-- says which buckets to open; the times in a bucket are exact, the slice only groups them.
-- Scores below LEASED are due times; a due time with a half (x.5) is held: a write that
-- registered it may still be on its way, so a sweep that finds no work there looks once more
-- before forgetting the hash. A leased member's score is LEASED + its lease deadline, in the
-- bucket it was claimed from. The registry of 0.1 (one sorted set per shard, the same members and
-- scores) is read as one more bucket, named '' in the index, until it drains.
-- A hash may be listed in more than one bucket: a later listing costs one sweep that finds
-- nothing due and tells the registry when the hash really has work.
-- Bucket keys are built here, not passed in: which one a listing takes depends on the server's
-- clock and on how full the buckets are. All share the stem's hash tag, so the index's slot.
--- @include "../includes/server-time.lua"
--- @include "replies.lua"

local rcall = redis.call
local LEASED = 1125899906842624 -- 2^50 ms: no due time comes near it
local SLICE_MS = 10000
-- zset-max-listpack-entries' default
local FULL = 128
-- 4^6 buckets a slice at the deepest level: a shard keeps about 700,000 hashes a slice compactly
local DEEPEST = 6

-- A registry shard: its index key, its buckets' key stem (a bucket is stem .. ':' .. name, in the
-- stem's hash tag, so the index's slot) and 0.1's registry key (nil where nothing reads it).
local function registry_of(index, stem, legacy)
  return { index = index, stem = stem, legacy = legacy, touched = {} }
end

local function bucket(r, name)
  if name == '' then return r.legacy end
  return r.stem .. ':' .. name
end

-- The bucket a listing of `member` at `at` goes in: the first on the member's path through the
-- slice of `at` with room. (Only that bucket is searched for an earlier listing of the member; one
-- in a bucket that has filled up since costs a sweep that finds nothing.)
local function place(r, member, at)
  local slice = int(math.floor(at / SLICE_MS))
  local h
  for level = 0, DEEPEST do
    local name = slice
    if level > 0 then
      h = h or tonumber(string.sub(redis.sha1hex(member), 1, 8), 16)
      name = slice .. ':' .. level .. '.' .. int(h % 4 ^ level)
    end
    if level == DEEPEST or rcall('ZCARD', bucket(r, name)) < FULL then return name end
  end
end

-- Lists `member` in bucket `name` as due at `at` unless it is listed there earlier; the index
-- learns the bucket's new earliest time.
local function list_in(r, name, member, at)
  rcall('ZADD', bucket(r, name), 'LT', at, member)
  rcall('ZADD', r.index, 'LT', math.floor(at), name)
end

-- The earliest time anything in the sorted set `zset` needs a look: a due time, or a lease's
-- deadline (its sweeper may have died), or NOTHING_DUE.
local function earliest(zset)
  local first = rcall('ZRANGE', zset, 0, 0, 'WITHSCORES')
  if not first[2] then return NOTHING_DUE end
  local score = tonumber(first[2])
  if score >= LEASED then return math.floor(score - LEASED) end
  local lease = rcall('ZRANGEBYSCORE', zset, LEASED, '+inf', 'WITHSCORES', 'LIMIT', 0, 1)
  if lease[2] then score = math.min(score, tonumber(lease[2]) - LEASED) end
  return math.floor(score)
end

-- The earliest time anything in the shard needs a look, or NOTHING_DUE.
local function shard_earliest(r)
  local first = rcall('ZRANGE', r.index, 0, 0, 'WITHSCORES')
  return first[2] and math.floor(tonumber(first[2])) or NOTHING_DUE
end

-- The index learns what the buckets changed since the last call hold.
local function reindex(r)
  for name in pairs(r.touched) do
    local t = earliest(bucket(r, name))
    if t == NOTHING_DUE then
      rcall('ZREM', r.index, name)
    else
      rcall('ZADD', r.index, t, name)
    end
  end
  r.touched = {}
end
