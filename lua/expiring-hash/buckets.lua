-- Include: the bucket index B: "<bucket>" = its chunk count, "<bucket>.<k>" = names (names.lua)
-- of fields expiring in that bucket (BUCKET_MS long), each chunk near CHUNK bytes at most.
-- bucket_of(t) -> the bucket of time `t` (ms)
-- chunk_name(id, k) -> the field of chunk `k` of the bucket whose decimal text is `id`
local BUCKET_MS, CHUNK = 10000, 2048

local function bucket_of(t)
  return math.floor(t / BUCKET_MS)
end

local function chunk_name(id, k)
  return id .. '.' .. k
end
