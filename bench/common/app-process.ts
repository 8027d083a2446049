// A bench server in a process of its own, so autocannon does not share its event loop; it sends
// its port when listening and answers 'cpu' with its process.cpuUsage().
import { fork, type ChildProcess } from 'node:child_process';

export interface AppProcess {
  process: ChildProcess;
  port: number;
}

/** Forks the compiled `script` (a file URL or path) with `args` and waits for its port. */
export async function startApp(script: string, args: string[]): Promise<AppProcess> {
  const child = fork(script, args, { stdio: 'inherit' });
  const port = await new Promise<number>((resolve, reject) => {
    child.once('message', (m) => resolve((m as { port: number }).port));
    child.once('exit', (code) => reject(new Error(`${script} ${args.join(' ')} exited with ${code}`)));
  });
  return { process: child, port };
}

export async function stopApp({ process: child }: AppProcess): Promise<void> {
  child.disconnect();
  await new Promise((resolve) => child.once('exit', resolve));
}

/** The server's CPU time so far, µs (user + system). */
export function appCpuMicros(server: AppProcess): Promise<number> {
  return new Promise<number>((resolve) => {
    server.process.once('message', (m) => {
      const { cpu } = m as { cpu: NodeJS.CpuUsage };
      resolve(cpu.user + cpu.system);
    });
    server.process.send('cpu');
  });
}

/** The server side of startApp: report the port, answer CPU asks, close on disconnect. */
export function serveBench(port: number, close: () => Promise<void>): void {
  process.send!({ port });
  // the bench asks for this process' CPU time around each load, to report CPU per request
  process.on('message', (m) => m === 'cpu' && process.send!({ cpu: process.cpuUsage() }));
  process.on('disconnect', () => void close().then(() => process.exit(0)));
}
