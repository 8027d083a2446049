// The headlines and chart panels of the DelayQueue operations section (issue 16) of `npm run bench`.
import type { Panel } from './chart.js';
import type { EnqueueFigures } from './delay-queue-enqueue.bench.js';
import type { QueueMemoryFigures } from './delay-queue-memory.bench.js';
import type { RateResult } from './delay-queue-rate.bench.js';
import { cell, formatRatio, ratio } from './common/stats.js';

export interface QueueOpsFigures {
  enqueue?: EnqueueFigures;
  memory?: QueueMemoryFigures;
  rate?: Partial<Record<'ours' | 'bullmq', RateResult>>;
}

export function queueOpsReport({ enqueue, memory, rate }: QueueOpsFigures): { headlines: string[]; panels: Panel[] } {
  const headlines: string[] = [];
  const panels: Panel[] = [];
  if (enqueue) {
    const one = enqueue['one at a time'];
    const bulk = enqueue.bulk;
    headlines.push(
      `- **DelayQueue enqueue** (20,000 delayed messages, 100-byte payload): \`enqueue\` ${cell(one.ours)}/s, ${formatRatio(ratio(one.ours, one.bullmq))} BullMQ's \`add\`; ` +
        `\`enqueueMany\` ${cell(bulk.ours)}/s, ${formatRatio(ratio(bulk.ours, bulk.bullmq))} \`addBulk\` (target: at least 1.5×).`,
    );
    panels.push({
      title: 'DelayQueue: 20,000 delayed messages enqueued, 100-byte payload',
      unit: 'messages/s',
      bars: [
        { label: 'enqueue, 100 in flight', ...one.ours, ours: true },
        { label: 'BullMQ add, 100 in flight', ...one.bullmq, ours: false },
        { label: 'enqueueMany, calls of 1,000', ...bulk.ours, ours: true },
        { label: 'BullMQ addBulk, calls of 1,000', ...bulk.bullmq, ours: false },
      ],
    });
  }
  if (memory) {
    headlines.push(
      `- **DelayQueue memory**: ${memory.ours.median.toFixed(0)} B per scheduled message (100-byte payload) against ${memory.bullmq.median.toFixed(0)} B per BullMQ delayed job, ` +
        `${formatRatio(ratio(memory.ours, memory.bullmq))} (target: at most 0.5×); BullMQ keeps a hash key per job ` +
        `(${memory.keys.bullmq.toLocaleString('en-US')} keys for ${memory.n.toLocaleString('en-US')} jobs; ours ${memory.keys.ours}).`,
    );
    panels.push({
      title: 'DelayQueue: memory per scheduled message, 100-byte payload',
      unit: 'bytes, lower is better',
      bars: [
        { label: 'nest-redis-limit DelayQueue', ...memory.ours, ours: true },
        { label: 'BullMQ delayed job', ...memory.bullmq, ours: false },
      ],
    });
  }
  const ours = rate?.ours;
  const bull = rate?.bullmq;
  if (ours) {
    headlines.push(
      `- **DelayQueue rate limit per tenant** (10 tenants × 10 a second, ${ours.seconds} s): handler starts per tenant-second at most ${ours.max}, ` +
        `at least ${ours.min}, mean ${ours.mean.toFixed(2)} (target: never above 10, mean at least 9.5)` +
        (bull ? `; BullMQ's global limiter at the same 100 a second gave one tenant up to ${bull.max} in a second and left one with ${bull.min}.` : '.'),
    );
  }
  return { headlines, panels };
}
