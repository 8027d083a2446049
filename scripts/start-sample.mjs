// `npm start`: compiles the sample app (with lib/ and the test harness it uses) into dist-sample/,
// then runs it, forwarding SIGINT/SIGTERM and passing its exit code on.
import { execFileSync, spawn } from 'node:child_process';
import { createRequire } from 'node:module';

const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
execFileSync(process.execPath, [tsc, '-p', 'sample-app/tsconfig.json'], { stdio: 'inherit' });

const child = spawn(process.execPath, ['dist-sample/sample-app/src/main.js'], { stdio: 'inherit' });
const forward = (signal) => child.kill(signal);
process.on('SIGINT', forward).on('SIGTERM', forward);
child.on('exit', (code, signal) => {
  if (code !== null) process.exit(code);
  // the child died of a signal: die of the same one
  process.off('SIGINT', forward).off('SIGTERM', forward);
  process.kill(process.pid, signal);
});
