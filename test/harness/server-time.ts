/** The Redis server's clock in ms, which due times and windows are on. */
export async function redisNow(client: { time(): Promise<(string | number)[]> }): Promise<number> {
  const [s, us] = await client.time();
  return Number(s) * 1000 + Math.floor(Number(us) / 1000);
}
