import { createHash } from 'node:crypto';
import { ReplyError, type MemoryReply } from './memory-keyspace.js';

import type { Fengari, LuaState } from './fengari.types.js';

/**
 * The library's Lua scripts, run in this process by fengari (a Lua VM in JavaScript) against an
 * in-memory keyspace: the same scripts Redis runs, so the in-memory engine cannot drift from them.
 * fengari is Lua 5.3 and Redis's Lua 5.1; the differences our scripts could meet are closed here:
 * numbers are doubles as in 5.1 (see PRELUDE), floats with an integral value print as 5.1 prints
 * them ("5", not "5.0": set by FENGARICONF before fengari loads, and checked after), `unpack` is
 * global, and `struct` and `cjson` exist.
 */
export class LuaEngine {
  private readonly L: LuaState;
  private readonly compiled = new Map<string, number>();
  /** The command runner of the script in progress (redis.call's target). */
  private current: ((args: string[]) => MemoryReply) | undefined;

  constructor(private readonly f: Fengari) {
    const { lauxlib, lualib } = f;
    this.L = lauxlib.luaL_newstate();
    lualib.luaL_openlibs(this.L);
    this.installRedis();
    this.installCjson();
    this.installStruct();
    this.exec(PRELUDE);
    const probe = this.runSource('return tostring(10 / 2)', [], [], () => null);
    if (probe !== '5') {
      throw new Error(
        `RedisLimitModule.forTesting: fengari was loaded before with its own settings (tostring(10 / 2) is ${JSON.stringify(probe)}, Redis says "5"); let forTesting load it first`,
      );
    }
  }

  /** Runs `source` (cached by `sha`) with KEYS and ARGV (byte strings); `call` serves redis.call. */
  run(sha: string, source: string, keys: string[], argv: string[], call: (args: string[]) => MemoryReply): MemoryReply {
    const { lua } = this.f;
    const L = this.L;
    let ref = this.compiled.get(sha);
    if (ref === undefined) {
      const status = this.f.lauxlib.luaL_loadbuffer(L, this.f.to_luastring(source), null, this.f.to_luastring(`@user_script`));
      if (status !== lua.LUA_OK) {
        const message = this.popText();
        throw new ReplyError(`ERR Error compiling script (new function): ${message}`);
      }
      ref = this.f.lauxlib.luaL_ref(L, lua.LUA_REGISTRYINDEX);
      this.compiled.set(sha, ref);
    }
    this.setArray('KEYS', keys);
    this.setArray('ARGV', argv);
    this.current = call;
    try {
      lua.lua_rawgeti(L, lua.LUA_REGISTRYINDEX, ref);
      if (lua.lua_pcall(L, 0, 1, 0) !== lua.LUA_OK) throw this.scriptError();
      const reply = this.toReply(-1);
      lua.lua_settop(L, 0);
      return reply;
    } finally {
      this.current = undefined;
      lua.lua_settop(L, 0);
    }
  }

  private runSource(source: string, keys: string[], argv: string[], call: (args: string[]) => MemoryReply): MemoryReply {
    return this.run(`source:${source}`, source, keys, argv, call);
  }

  private exec(source: string): void {
    const { lua, lauxlib } = this.f;
    if (lauxlib.luaL_dostring(this.L, this.f.to_luastring(source)) !== lua.LUA_OK) throw new Error(this.popText());
  }

  private setArray(name: string, values: string[]): void {
    const { lua } = this.f;
    lua.lua_createtable(this.L, values.length, 0);
    values.forEach((value, i) => {
      this.pushBytes(value);
      lua.lua_rawseti(this.L, -2, i + 1);
    });
    lua.lua_setglobal(this.L, this.f.to_luastring(name));
  }

  /** A global table `name` of JS functions, as Redis gives a script its libraries. */
  private library(name: string, functions: Record<string, (S: LuaState) => number>): void {
    const { lua } = this.f;
    lua.lua_createtable(this.L, 0, Object.keys(functions).length);
    for (const [field, body] of Object.entries(functions)) {
      lua.lua_pushjsfunction(this.L, body);
      lua.lua_setfield(this.L, -2, this.f.to_luastring(field));
    }
    lua.lua_setglobal(this.L, this.f.to_luastring(name));
  }

  private installRedis(): void {
    const { lua } = this.f;
    this.library('redis', {
      call: (S) => this.redisCall(S, true),
      pcall: (S) => this.redisCall(S, false),
      sha1hex: (S) => {
        lua.lua_pushstring(S, this.f.to_luastring(sha1(this.bytesAt(S, 1))));
        return 1;
      },
      acl_check_cmd: (S) => {
        lua.lua_pushboolean(S, true);
        return 1;
      },
    });
  }

  private installCjson(): void {
    this.library('cjson', {
      decode: (S) => {
        let parsed: unknown;
        try {
          parsed = JSON.parse(Buffer.from(this.bytesAt(S, 1), 'latin1').toString('utf8'));
        } catch {
          return this.f.lauxlib.luaL_error(S, this.f.to_luastring('Expected value but found invalid token'));
        }
        this.pushJson(S, parsed);
        return 1;
      },
      encode: (S) => {
        this.pushBytes(Buffer.from(JSON.stringify(this.toJson(S, 1)), 'utf8').toString('latin1'), S);
        return 1;
      },
    });
  }

  /** Lua 5.1's struct library, for the formats of big- and little-endian integers (I, i, H, B with a
   * size), doubles (d) and, packed only, strings (c): on doubles, as everything here, so an I4 may
   * hold 2^32 - 1. */
  private installStruct(): void {
    const { lua } = this.f;
    this.library('struct', {
      pack: (S) => {
        const format = this.bytesAt(S, 1);
        const chunks: Buffer[] = [];
        let arg = 2;
        for (const { kind, size, little } of structFormat(format)) {
          if (kind === 'c') {
            // a string: all of it for c0, else its first `size` bytes
            const text = Buffer.from(this.bytesAt(S, arg++), 'latin1');
            if (text.length < size) return this.f.lauxlib.luaL_error(S, this.f.to_luastring('string too short'));
            chunks.push(size === 0 ? text : text.subarray(0, size));
            continue;
          }
          const value = lua.lua_tonumber(S, arg++);
          const chunk = Buffer.alloc(size);
          if (kind === 'd') {
            if (little) chunk.writeDoubleLE(value);
            else chunk.writeDoubleBE(value);
          } else if (kind === 'u') {
            if (little) chunk.writeUIntLE(value, 0, size);
            else chunk.writeUIntBE(value, 0, size);
          } else if (little) chunk.writeIntLE(value, 0, size);
          else chunk.writeIntBE(value, 0, size);
          chunks.push(chunk);
        }
        this.pushBytes(Buffer.concat(chunks).toString('latin1'), S);
        return 1;
      },
      unpack: (S) => {
        const format = this.bytesAt(S, 1);
        const data = Buffer.from(this.bytesAt(S, 2), 'latin1');
        let at = lua.lua_gettop(S) >= 3 ? lua.lua_tonumber(S, 3) - 1 : 0;
        let pushed = 0;
        for (const { kind, size, little } of structFormat(format)) {
          if (kind === 'c') return this.f.lauxlib.luaL_error(S, this.f.to_luastring("struct.unpack of 'c' is not supported by the in-memory engine"));
          if (at + size > data.length) return this.f.lauxlib.luaL_error(S, this.f.to_luastring('data string too short'));
          let value: number;
          if (kind === 'd') value = little ? data.readDoubleLE(at) : data.readDoubleBE(at);
          else if (kind === 'u') value = little ? data.readUIntLE(at, size) : data.readUIntBE(at, size);
          else value = little ? data.readIntLE(at, size) : data.readIntBE(at, size);
          lua.lua_pushnumber(S, value);
          pushed++;
          at += size;
        }
        lua.lua_pushnumber(S, at + 1);
        return pushed + 1;
      },
    });
  }

  /** The Lua value at `idx` as cjson.encode reads it: a table whose keys are 1..n is an array
   * (an empty one an object), any other an object. */
  private toJson(S: LuaState, idx: number): unknown {
    const { lua } = this.f;
    const at = lua.lua_absindex(S, idx);
    switch (lua.lua_type(S, at)) {
      case lua.LUA_TNUMBER:
        return lua.lua_tonumber(S, at);
      case lua.LUA_TSTRING:
        return Buffer.from(this.bytesAt(S, at), 'latin1').toString('utf8');
      case lua.LUA_TBOOLEAN:
        return lua.lua_toboolean(S, at);
      case lua.LUA_TTABLE: {
        const entries: [unknown, unknown][] = [];
        lua.lua_pushnil(S);
        while (lua.lua_next(S, at) !== 0) {
          const key = lua.lua_type(S, -2) === lua.LUA_TNUMBER ? lua.lua_tonumber(S, -2) : Buffer.from(this.bytesAt(S, -2), 'latin1').toString('utf8');
          entries.push([key, this.toJson(S, -1)]);
          lua.lua_pop(S, 1);
        }
        const isArray = entries.length > 0 && entries.every(([key]) => typeof key === 'number' && Number.isInteger(key) && key >= 1 && key <= entries.length);
        if (isArray) return entries.sort(([a], [b]) => (a as number) - (b as number)).map(([, value]) => value);
        return Object.fromEntries(entries.map(([key, value]) => [String(key), value]));
      }
      default:
        return null;
    }
  }

  private pushJson(S: LuaState, value: unknown): void {
    const { lua } = this.f;
    if (value === null || value === undefined) lua.lua_pushnil(S);
    else if (typeof value === 'boolean') lua.lua_pushboolean(S, value);
    else if (typeof value === 'number') lua.lua_pushnumber(S, value);
    else if (typeof value === 'string') lua.lua_pushstring(S, this.f.to_luastring(value));
    else if (Array.isArray(value)) {
      lua.lua_createtable(S, value.length, 0);
      value.forEach((item, i) => {
        this.pushJson(S, item);
        lua.lua_rawseti(S, -2, i + 1);
      });
    } else {
      const entries = Object.entries(value as Record<string, unknown>);
      lua.lua_createtable(S, 0, entries.length);
      for (const [key, item] of entries) {
        this.pushJson(S, item);
        lua.lua_setfield(S, -2, this.f.to_luastring(key));
      }
    }
  }

  /** redis.call / redis.pcall: runs the command; an error reply raises (call) or is returned as
   * { err = message } (pcall), as Redis does. */
  private redisCall(S: LuaState, raise: boolean): number {
    const { lua } = this.f;
    const count = lua.lua_gettop(S);
    const args: string[] = [];
    for (let i = 1; i <= count; i++) {
      const type = lua.lua_type(S, i);
      if (type === lua.LUA_TNUMBER) args.push(lua.lua_isinteger(S, i) ? String(lua.lua_tointeger(S, i)) : String(lua.lua_tonumber(S, i)));
      else if (type === lua.LUA_TSTRING) args.push(this.bytesAt(S, i));
      else return this.raise(S, 'ERR Lua redis lib command arguments must be strings or integers', raise);
    }
    if (args.length === 0) return this.raise(S, 'ERR Please specify at least one argument for this redis lib call', raise);
    let reply: MemoryReply;
    try {
      reply = this.current!(args);
    } catch (error) {
      if (!(error instanceof ReplyError)) throw error;
      return this.raise(S, error.message, raise);
    }
    this.pushReply(S, reply);
    return 1;
  }

  private raise(S: LuaState, message: string, raise: boolean): number {
    const { lua } = this.f;
    lua.lua_createtable(S, 0, 1);
    lua.lua_pushstring(S, this.f.to_luastring(message));
    lua.lua_setfield(S, -2, this.f.to_luastring('err'));
    return raise ? lua.lua_error(S) : 1;
  }

  private pushReply(S: LuaState, reply: MemoryReply): void {
    const { lua } = this.f;
    if (reply === null) lua.lua_pushboolean(S, false);
    else if (typeof reply === 'number') lua.lua_pushnumber(S, reply);
    else if (typeof reply === 'string') this.pushBytes(reply, S);
    else if (Array.isArray(reply)) {
      lua.lua_createtable(S, reply.length, 0);
      reply.forEach((item, i) => {
        this.pushReply(S, item);
        lua.lua_rawseti(S, -2, i + 1);
      });
    } else {
      lua.lua_createtable(S, 0, 1);
      lua.lua_pushstring(S, this.f.to_luastring(reply.ok));
      lua.lua_setfield(S, -2, this.f.to_luastring('ok'));
    }
  }

  /** The script's return value at `idx`, converted as Redis converts it. */
  private toReply(idx: number): MemoryReply {
    const { lua } = this.f;
    const L = this.L;
    const at = lua.lua_absindex(L, idx);
    switch (lua.lua_type(L, at)) {
      case lua.LUA_TNUMBER:
        return Math.trunc(lua.lua_tonumber(L, at));
      case lua.LUA_TSTRING:
        return this.bytesAt(L, at);
      case lua.LUA_TBOOLEAN:
        return lua.lua_toboolean(L, at) ? 1 : null;
      case lua.LUA_TTABLE: {
        lua.lua_getfield(L, at, this.f.to_luastring('err'));
        if (lua.lua_type(L, -1) === lua.LUA_TSTRING) throw new ReplyError(this.popText());
        lua.lua_pop(L, 1);
        lua.lua_getfield(L, at, this.f.to_luastring('ok'));
        if (lua.lua_type(L, -1) === lua.LUA_TSTRING) return { ok: this.popText() };
        lua.lua_pop(L, 1);
        const out: MemoryReply[] = [];
        for (let i = 1; ; i++) {
          lua.lua_rawgeti(L, at, i);
          if (lua.lua_type(L, -1) === lua.LUA_TNIL) {
            lua.lua_pop(L, 1);
            return out;
          }
          out.push(this.toReply(-1));
          lua.lua_pop(L, 1);
        }
      }
      default:
        return null;
    }
  }

  private scriptError(): ReplyError {
    const { lua } = this.f;
    const L = this.L;
    if (lua.lua_type(L, -1) === lua.LUA_TTABLE) {
      lua.lua_getfield(L, -1, this.f.to_luastring('err'));
      if (lua.lua_type(L, -1) === lua.LUA_TSTRING) return new ReplyError(this.popText());
    }
    return new ReplyError(`ERR user_script: ${this.popText()}`);
  }

  /** The string at `idx` as a byte string (numbers converted as Lua converts them). */
  private bytesAt(S: LuaState, idx: number): string {
    const bytes = this.f.lua.lua_tolstring(S, idx);
    return bytes === null ? '' : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('latin1');
  }

  private pushBytes(value: string, S: LuaState = this.L): void {
    const bytes = Buffer.from(value, 'latin1');
    this.f.lua.lua_pushlstring(S, new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength), bytes.length);
  }

  private popText(): string {
    const text = this.f.lua.lua_tojsstring(this.L, -1);
    this.f.lua.lua_pop(this.L, 1);
    return text ?? 'unknown error';
  }
}

// Redis's Lua 5.1 has one number type, a double; fengari's 5.3 adds 32-bit integers, which
// would wrap at 2^31 (a time in ms does not fit). So numbers from outside (tonumber, replies,
// cjson) and math.floor / math.ceil are doubles here, as in 5.1, and string.format's %d prints a
// double as 5.1 does (truncated), whatever its size. `unpack` is global, as in 5.1.
const PRELUDE = `
unpack = table.unpack
do
  local tn, floor, ceil, fmt, pack = tonumber, math.floor, math.ceil, string.format, table.pack
  tonumber = function(...)
    local n = tn(...)
    if n then return n + 0.0 end
    return n
  end
  math.floor = function(x) return floor(x) + 0.0 end
  math.ceil = function(x) return ceil(x) + 0.0 end
  string.format = function(f, ...)
    local args, i = pack(...), 0
    local spec = string.gsub(f, '%%([-+ #0]*)(%d*)(%.?%d*)([%a%%])', function(flags, width, precision, conversion)
      if conversion == '%' then return nil end
      i = i + 1
      local n = args[i]
      if (conversion ~= 'd' and conversion ~= 'i') or type(n) ~= 'number' then return nil end
      if n >= 0 then n = floor(n) else n = ceil(n) end
      local text = fmt('%.0f', n)
      local w = tn(width)
      if w and #text < w then
        if string.find(flags, '-', 1, true) then text = text .. string.rep(' ', w - #text)
        elseif string.find(flags, '0', 1, true) then
          local sign = string.match(text, '^-') or ''
          text = sign .. string.rep('0', w - #text) .. string.sub(text, #sign + 1)
        else text = string.rep(' ', w - #text) .. text end
      end
      args[i] = text
      return '%s'
    end)
    return fmt(spec, table.unpack(args, 1, args.n))
  end
end
`;

/** A struct format's fields: '>' / '<' set the byte order (big by default here, as our formats say
 * it), I / i / H / h / B / b an unsigned or signed integer (with an optional size), d a double, c a
 * string (c0: all of it; cN: its first N bytes). */
function structFormat(format: string): { kind: 'u' | 's' | 'd' | 'c'; size: number; little: boolean }[] {
  const fields: { kind: 'u' | 's' | 'd' | 'c'; size: number; little: boolean }[] = [];
  let little = false;
  for (let i = 0; i < format.length; i++) {
    const c = format[i]!;
    if (c === '>' || c === '!') little = false;
    else if (c === '<') little = true;
    else if (c === 'd') fields.push({ kind: 'd', size: 8, little });
    else if (c === 'c') {
      const digits = /^\d+/.exec(format.slice(i + 1))?.[0];
      i += digits?.length ?? 0;
      fields.push({ kind: 'c', size: digits ? Number(digits) : 1, little });
    } else if ('IiHhBb'.includes(c)) {
      const digits = /^\d+/.exec(format.slice(i + 1))?.[0];
      i += digits?.length ?? 0;
      const size = digits ? Number(digits) : c === 'H' || c === 'h' ? 2 : c === 'B' || c === 'b' ? 1 : 4;
      fields.push({ kind: c === c.toUpperCase() ? 'u' : 's', size, little });
    } else if (c !== ' ') throw new ReplyError(`ERR struct format '${c}' is not supported by the in-memory engine`);
  }
  return fields;
}

function sha1(bytes: string): string {
  return createHash('sha1').update(Buffer.from(bytes, 'latin1')).digest('hex');
}

let loading: Promise<LuaEngine> | undefined;

/** fengari, loaded once per process (an optional peer dependency: only forTesting needs it). */
export function loadLuaEngine(): Promise<LuaEngine> {
  loading ??= (async () => {
    const had = process.env['FENGARICONF'];
    process.env['FENGARICONF'] = JSON.stringify({ ...(had ? JSON.parse(had) : {}), LUA_COMPAT_FLOATSTRING: true });
    const name = 'fengari';
    let fengari: Fengari & { default?: Fengari };
    try {
      fengari = (await import(name)) as Fengari & { default?: Fengari };
    } catch (error) {
      throw new Error(
        `RedisLimitModule.forTesting needs the 'fengari' package (it runs the library's Lua scripts in memory): npm install --save-dev fengari (${(error as Error).message})`,
      );
    } finally {
      if (had === undefined) delete process.env['FENGARICONF'];
      else process.env['FENGARICONF'] = had;
    }
    return new LuaEngine(fengari.default ?? fengari);
  })();
  return loading;
}
