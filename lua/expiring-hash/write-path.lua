-- Include: whether this server runs the write path the caller named, asked before a script writes
-- anything. The caller learnt its path once (hsetex-probe.lua, HPEXPIRE); a failover to an older
-- server, a rolling downgrade or an ACL change can take a command away since, and a script that met
-- it halfway would keep the part of its work already done (scripts are not rolled back).
-- may_run(command, key, args...) -> whether the server has `command` and the caller's ACL lets it
--   run it on `key` with these arguments
-- runs_path(key, native, hsetex) -> whether writes to `key` may use native field expiry (`native`)
--   and one HSETEX for a field and its expiry (`hsetex`)

local function may_run(command, ...)
  -- acl_check_cmd raises on a command the server does not know (and is missing before Redis 7)
  local known, allowed = pcall(redis.acl_check_cmd, command, ...)
  return known and allowed
end

local function runs_path(key, native, hsetex)
  if hsetex and not may_run('hsetex', key, 'PXAT', '1', 'FIELDS', '1', 'f', 'v') then return false end
  if not native then return true end
  return may_run('hpexpireat', key, '1', 'FIELDS', '1', 'f') and may_run('hpexpiretime', key, 'FIELDS', '1', 'f')
end
