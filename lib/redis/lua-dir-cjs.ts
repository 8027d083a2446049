import { findLuaDir } from './find-lua-dir.js';

// CommonJS form of lua-dir.ts: `import.meta` is a syntax error there, `__dirname` is what exists.
export const LUA_DIR = findLuaDir(__dirname);
