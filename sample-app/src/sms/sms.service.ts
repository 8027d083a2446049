import { Inject, Injectable } from '@nestjs/common';
import { DelayQueueService } from '../../../lib/index.js';
import { SMS_OUTBOX } from './sms-outbox.js';
import type { SmsRequest } from './sms-request.js';
import { SmsSender } from './sms-sender.js';

export interface QueuedSms {
  id: string;
  phone: string;
  status: 'queued';
}

export interface SmsStatus {
  id: string;
  status: 'queued' | 'sent';
  sentAt?: string;
}

/** Puts SMS in the outbox; SmsSender sends them as fast as the gateway takes them. */
@Injectable()
export class SmsService {
  constructor(
    @Inject(DelayQueueService) private readonly queue: DelayQueueService,
    @Inject(SmsSender) private readonly sender: SmsSender,
  ) {}

  async send({ phone, text }: SmsRequest): Promise<QueuedSms> {
    const id = await this.queue.enqueue(SMS_OUTBOX, { phone, text });
    return { id, phone, status: 'queued' };
  }

  /** Sent, or still queued (or unknown: this process keeps what it sent, not the queue's content). */
  status(id: string): SmsStatus {
    const sent = this.sender.sentOf(id);
    return sent ? { id, status: 'sent', sentAt: sent.sentAt } : { id, status: 'queued' };
  }
}
