import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { findLuaDir } from './find-lua-dir.js';

// ES module form. The CommonJS build compiles lua-dir-cjs.ts in its place (tsconfig.build-cjs.json).
export const LUA_DIR = findLuaDir(dirname(fileURLToPath(import.meta.url)));
