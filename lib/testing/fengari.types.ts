/** A Lua state (opaque). */
export type LuaState = { readonly __luaState: unique symbol };
/** A function Lua calls: reads its arguments from the stack, pushes its results, returns their
 * count. */
export type LuaFunction = (L: LuaState) => number;

/**
 * The part of fengari's API (https://github.com/fengari-lua/fengari, the C API of Lua 5.3 in
 * JavaScript) the in-memory engine uses: fengari ships no types. Strings are byte arrays.
 */
export interface Fengari {
  lua: {
    LUA_OK: number;
    LUA_REGISTRYINDEX: number;
    LUA_TNIL: number;
    LUA_TBOOLEAN: number;
    LUA_TNUMBER: number;
    LUA_TSTRING: number;
    LUA_TTABLE: number;
    lua_absindex(L: LuaState, idx: number): number;
    lua_createtable(L: LuaState, narr: number, nrec: number): void;
    lua_error(L: LuaState): number;
    lua_getfield(L: LuaState, idx: number, k: Uint8Array): number;
    lua_gettop(L: LuaState): number;
    lua_isinteger(L: LuaState, idx: number): boolean;
    lua_next(L: LuaState, idx: number): number;
    lua_pcall(L: LuaState, nargs: number, nresults: number, errfunc: number): number;
    lua_pop(L: LuaState, n: number): void;
    lua_pushboolean(L: LuaState, b: boolean): void;
    lua_pushjsfunction(L: LuaState, fn: LuaFunction): void;
    lua_pushlstring(L: LuaState, s: Uint8Array, len: number): void;
    lua_pushnil(L: LuaState): void;
    lua_pushnumber(L: LuaState, n: number): void;
    lua_pushstring(L: LuaState, s: Uint8Array): void;
    lua_rawgeti(L: LuaState, idx: number, n: number): number;
    lua_rawseti(L: LuaState, idx: number, n: number): void;
    lua_setfield(L: LuaState, idx: number, k: Uint8Array): void;
    lua_setglobal(L: LuaState, name: Uint8Array): void;
    lua_settop(L: LuaState, idx: number): void;
    lua_toboolean(L: LuaState, idx: number): boolean;
    lua_tointeger(L: LuaState, idx: number): number;
    lua_tojsstring(L: LuaState, idx: number): string | null;
    lua_tolstring(L: LuaState, idx: number): Uint8Array | null;
    lua_tonumber(L: LuaState, idx: number): number;
    lua_type(L: LuaState, idx: number): number;
  };
  lauxlib: {
    luaL_dostring(L: LuaState, s: Uint8Array): number;
    luaL_error(L: LuaState, fmt: Uint8Array): number;
    luaL_loadbuffer(L: LuaState, s: Uint8Array, size: number | null, name: Uint8Array): number;
    luaL_newstate(): LuaState;
    luaL_ref(L: LuaState, t: number): number;
  };
  lualib: { luaL_openlibs(L: LuaState): void };
  to_luastring(s: string): Uint8Array;
}
