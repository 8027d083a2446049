-- Whether native-mode writes may set a field and its expiry with one HSETEX on this server: it
-- has the command (Redis >= 8.0) and the caller's ACL lets it run on the library's keys. Asked on
-- every master before the first write, so no write script meets an unknown or refused HSETEX
-- halfway through its work (scripts are not rolled back; write-path.lua checks again each time).
-- KEYS     none: keyless, so any node runs it (the caller asks each master in turn)
-- ARGV[1]  probeKey: string  a hash key under the key prefix: its name is checked against the
--          ACL, nothing is written
-- Returns  allowed: HSETEX_ALLOWED | HSETEX_REFUSED  HSETEX_ALLOWED if HSETEX may run (codes:
--          replies.lua)
--- @include "replies.lua"
--- @include "write-path.lua"

return runs_path(ARGV[1], false, true) and HSETEX_ALLOWED or HSETEX_REFUSED
