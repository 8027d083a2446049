-- Include: removing fields from a hash key.
-- delete_fields(key, fields) -> nothing; HDELs the list `fields`, 1000 at a time (unpack's bound)
-- reclaim_fields(key, fields) -> nothing; removes `fields` that may have expired by native field
--   expiry. Redis's HDEL removes such a field; Valkey (9.1) keeps it in HLEN until its active
--   expiry reclaims it and its HDEL does not remove it, so there, where HDEL removes fewer than
--   asked, each is written, then removed
-- hdel_leaves_expired() -> true on Valkey: a script cannot ask the server how it behaves, but
--   Valkey names itself in its `server` global
-- drop_due(h, fields) -> nothing; removes an open hash's (hash.lua) due fields, reclaiming them
--   in native mode
local function delete_fields(key, fields)
  for i = 1, #fields, 1000 do
    redis.call('HDEL', key, unpack(fields, i, math.min(i + 999, #fields)))
  end
end

local function hdel_leaves_expired()
  local valkey = rawget(_G, 'server')
  return valkey ~= nil and valkey.SERVER_NAME == 'valkey'
end

local function reclaim_fields(key, fields)
  if #fields == 0 then return end
  if not hdel_leaves_expired() then return delete_fields(key, fields) end
  for i = 1, #fields, 1000 do
    local last = math.min(i + 999, #fields)
    if redis.call('HDEL', key, unpack(fields, i, last)) < last - i + 1 then
      local args = {}
      for j = i, last do
        args[#args + 1] = fields[j]
        args[#args + 1] = ''
      end
      redis.call('HSET', key, unpack(args))
      redis.call('HDEL', key, unpack(fields, i, last))
    end
  end
end

local function drop_due(h, fields)
  if h.native then reclaim_fields(h.key, fields) else delete_fields(h.key, fields) end
end
