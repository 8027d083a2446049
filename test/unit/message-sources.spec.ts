import { MessageSources, TICK_SOURCE, isTick, sourceTag } from '../../lib/delay-queue/message-sources.js';
import type { DelayedMessage } from '../../lib/delay-queue/delay-queue.types.js';

const message = { id: 'm' } as DelayedMessage;

describe('MessageSources', () => {
  it('hands a marked message to its kind with the ref it was enqueued with', async () => {
    const sources = new MessageSources();
    const asked: string[] = [];
    sources.register('expiry', { beforeOutcome: async (ref) => (asked.push(ref), 7) });
    // a ref is the source's own text: spaces included
    expect(await sources.beforeOutcome(sourceTag('expiry', '["cart 1","9:f"]'), message)).toBe(7);
    expect(asked).toEqual(['["cart 1","9:f"]']);
  });

  it("waits for nothing on a user's message, a tick, or a kind not registered", () => {
    const sources = new MessageSources();
    sources.register('expiry', { beforeOutcome: async () => 7 });
    expect(sources.beforeOutcome('', message)).toBeUndefined();
    expect(sources.beforeOutcome(sourceTag(TICK_SOURCE, 'nightly'), message)).toBeUndefined();
    expect(sources.beforeOutcome(sourceTag('other', 'x'), message)).toBeUndefined();
  });

  it('refuses a kind that is reserved or holds a space', () => {
    const sources = new MessageSources();
    expect(() => sources.register(TICK_SOURCE, { beforeOutcome: async () => 0 })).toThrow(RangeError);
    expect(() => sources.register('ex piry', { beforeOutcome: async () => 0 })).toThrow(RangeError);
  });

  it('tells a tick by its mark alone', () => {
    expect(isTick(sourceTag(TICK_SOURCE, 'a@b'))).toBe(true);
    expect(isTick('')).toBe(false);
    expect(isTick(sourceTag('expiry', 'tick x'))).toBe(false);
  });
});
