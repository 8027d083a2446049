import { Inject, Injectable, Logger } from '@nestjs/common';
import { OnDelayed, RetryLater, type DelayedMessage } from '../../../lib/index.js';
import { SmsGateway } from './sms-gateway.js';
import { outboxPhoneOf, SMS_GATEWAY_LIMIT, SMS_OUTBOX } from './sms-outbox.js';
import type { SmsRequest } from './sms-request.js';

export interface SentSms extends SmsRequest {
  id: string;
  /** ISO 8601. */
  sentAt: string;
}

/**
 * Hands the outbox to the gateway: a DelayQueue consumer limited per phone number. An SMS over its
 * phone's limit waits in the queue until the gateway would take it (no attempt is spent on it),
 * and a phone over its limit never delays the others. When the gateway answers 429 for a phone,
 * that phone's SMS all wait its Retry-After (pauseKey), in every instance, and its limit halves
 * until the gateway takes them again (adaptive).
 */
@Injectable()
export class SmsSender {
  private readonly logger = new Logger(SmsSender.name);
  /** What went out, by id (stands in for the gateway's delivery reports). */
  private readonly sent = new Map<string, SentSms>();

  constructor(@Inject(SmsGateway) private readonly gateway: SmsGateway) {}

  @OnDelayed(SMS_OUTBOX, { rateLimit: { ...SMS_GATEWAY_LIMIT, key: outboxPhoneOf, adaptive: true } })
  deliver({ id, payload }: DelayedMessage<SmsRequest>): void {
    const answer = this.gateway.send(payload);
    // not an attempt: the SMS never dies of the gateway's throttling
    if (answer.status === 429) throw new RetryLater(answer.retryAfterMs, { pauseKey: true });
    // any other throw would retry the SMS after a backoff
    this.logger.log(`SMS ${id} to ${payload.phone}: ${payload.text}`);
    this.sent.set(id, { id, ...payload, sentAt: new Date().toISOString() });
  }

  sentOf(id: string): SentSms | undefined {
    return this.sent.get(id);
  }
}
