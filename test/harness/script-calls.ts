/** Script calls (EVAL and EVALSHA) every master of `redis` has run so far: a test compares two
 * readings to count the calls something made. */
export async function scriptCalls(redis: { onEveryMaster(...command: string[]): Promise<unknown[]> }): Promise<number> {
  const infos = (await redis.onEveryMaster('INFO', 'commandstats')) as string[];
  let calls = 0;
  for (const info of infos) for (const m of info.matchAll(/^cmdstat_(?:eval|evalsha):calls=(\d+)/gm)) calls += Number(m[1]);
  return calls;
}
