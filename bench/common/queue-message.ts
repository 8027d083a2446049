// The scheduled message the DelayQueue benches of issue 16 enqueue: a 100-byte JSON payload, due
// in an hour (so nothing consumes it while it is measured).

export const PAYLOAD = { text: 'x'.repeat(89) };
export const PAYLOAD_BYTES = JSON.stringify(PAYLOAD).length; // 100
export const DELAY_MS = 3_600_000;
