import type { DelayedMessage } from '../../../lib/index.js';
import type { SmsRequest } from './sms-request.js';

/** The DelayQueue queue of SMS waiting for the gateway. */
export const SMS_OUTBOX = 'sms-outbox';

/**
 * What the gateway takes: one SMS per phone per minute, from every instance of the app together.
 * The HTTP funnel guards what users ask for; this guards what the app sends, whoever enqueued it.
 */
export const SMS_GATEWAY_LIMIT = { limit: 1, windowMs: 60_000 };

export const outboxPhoneOf = (message: DelayedMessage): string => (message.payload as SmsRequest).phone;
