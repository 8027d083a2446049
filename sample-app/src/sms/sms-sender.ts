import { Injectable, Logger } from '@nestjs/common';
import { OnDelayed, type DelayedMessage } from '../../../lib/index.js';
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
 * and a phone over its limit never delays the others.
 */
@Injectable()
export class SmsSender {
  private readonly logger = new Logger(SmsSender.name);
  /** What went out, by id (stands in for the gateway's delivery reports). */
  private readonly sent = new Map<string, SentSms>();

  @OnDelayed(SMS_OUTBOX, { rateLimit: { ...SMS_GATEWAY_LIMIT, key: outboxPhoneOf } })
  deliver({ id, payload }: DelayedMessage<SmsRequest>): void {
    // a real sender calls the gateway here; a throw would retry the SMS after a backoff
    this.logger.log(`SMS ${id} to ${payload.phone}: ${payload.text}`);
    this.sent.set(id, { id, ...payload, sentAt: new Date().toISOString() });
  }

  sentOf(id: string): SentSms | undefined {
    return this.sent.get(id);
  }
}
