/** `"name";q=5;w=10` → { name, q: 5, w: 10 }: an RFC 8941 list member with integer parameters. */
export function sfItem(member: string): Record<string, string | number> {
  const match = /^"([^"]+)"((?:;[a-z]+=\d+)+)$/.exec(member.trim());
  if (!match) throw new Error(`not a structured-field item: ${member}`);
  const params = Object.fromEntries(
    match[2]!
      .slice(1)
      .split(';')
      .map((p) => [p.split('=')[0]!, Number(p.split('=')[1])]),
  );
  return { name: match[1]!, ...params };
}

/** Every member of an RFC 8941 list of such items. */
export const sfList = (field: string) => field.split(',').map(sfItem);
