import { randomUUID } from 'node:crypto';
import { Injectable, Logger } from '@nestjs/common';
import type { SmsRequest } from './sms-request.js';

export interface QueuedSms {
  id: string;
  phone: string;
  status: 'queued';
}

/** Stands in for an SMS gateway: logs the message instead of paying for it. */
@Injectable()
export class SmsService {
  private readonly logger = new Logger(SmsService.name);

  send({ phone, text }: SmsRequest): QueuedSms {
    const id = randomUUID();
    this.logger.log(`SMS ${id} to ${phone}: ${text}`);
    return { id, phone, status: 'queued' };
  }
}
