import { clusterSlot } from '../../lib/redis/slot.js';

// Values from CLUSTER KEYSLOT on Redis 7 (the topology suite compares many more on a live cluster).
describe('clusterSlot', () => {
  it('hashes a key without a tag whole', () => {
    expect(clusterSlot('123456789')).toBe(12739); // CRC16-XMODEM check value 0x31C3
    expect(clusterSlot('foo')).toBe(12182);
    expect(clusterSlot('bar')).toBe(5061);
  });

  it('hashes only the first non-empty tag', () => {
    expect(clusterSlot('{user1000}.following')).toBe(clusterSlot('user1000'));
    expect(clusterSlot('foo{bar}{zap}')).toBe(clusterSlot('bar'));
    expect(clusterSlot('foo{{bar}}zap')).toBe(clusterSlot('{bar'));
    expect(clusterSlot('foo{}{bar}')).not.toBe(clusterSlot('bar')); // empty first tag: the whole key
  });

  it('hashes UTF-8 bytes, as Redis receives them', () => {
    expect(clusterSlot('{ü}')).toBe(clusterSlot('ü'));
    expect(clusterSlot('ü')).not.toBe(clusterSlot('u'));
  });
});
