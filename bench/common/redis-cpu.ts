import type { Redis } from 'ioredis';

/** redis-server's CPU time so far (user + sys, s): differences give its CPU per call. */
export async function redisCpuSeconds(admin: Redis): Promise<number> {
  const info = await admin.info('cpu');
  const field = (name: string) => Number(new RegExp(`^${name}:([\\d.]+)`, 'm').exec(info)![1]);
  return field('used_cpu_user') + field('used_cpu_sys');
}
