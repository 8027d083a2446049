/** A Redis sorted set in memory: members ordered by score, then bytewise (members are byte
 * strings, one char per byte, so `<` on them is Redis's order). */
export class SortedSet {
  readonly scores = new Map<string, number>();
  /** Every member, in Redis's order. */
  readonly members: string[] = [];

  get size(): number {
    return this.members.length;
  }

  /** Adds `member` or moves it to `score`; true when it is new. */
  add(member: string, score: number): boolean {
    const old = this.scores.get(member);
    if (old === score) return false;
    if (old !== undefined) this.members.splice(this.insertionPoint(old, member), 1);
    this.scores.set(member, score);
    this.members.splice(this.insertionPoint(score, member), 0, member);
    return old === undefined;
  }

  remove(member: string): boolean {
    const score = this.scores.get(member);
    if (score === undefined) return false;
    this.members.splice(this.insertionPoint(score, member), 1);
    this.scores.delete(member);
    return true;
  }

  /** The rank of the first member whose score is above `score` (or, with `inclusive`, at or above it). */
  firstFrom(score: number, inclusive: boolean): number {
    let lo = 0;
    let hi = this.members.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      const s = this.scores.get(this.members[mid]!)!;
      if (s < score || (!inclusive && s === score)) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  /** Where (score, member) is, or would go, in `members`. */
  private insertionPoint(score: number, member: string): number {
    let lo = 0;
    let hi = this.members.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      const other = this.members[mid]!;
      const s = this.scores.get(other)!;
      if (s < score || (s === score && other < member)) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }
}
