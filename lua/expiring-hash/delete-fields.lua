-- Include: removing fields from a hash key.
-- delete_fields(key, fields) -> nothing; HDELs the list `fields`, 1000 at a time (unpack's bound)
local function delete_fields(key, fields)
  for i = 1, #fields, 1000 do
    redis.call('HDEL', key, unpack(fields, i, math.min(i + 999, #fields)))
  end
end
