import { Injectable } from '@nestjs/common';
import type { SmsRequest } from './sms-request.js';

/** What the gateway answers: taken, or "too many to this destination, retry after". */
export type GatewayAnswer = { status: 202 } | { status: 429; retryAfterMs: number };

/**
 * Stands in for an SMS gateway's API. Real gateways throttle per destination carrier with limits
 * they do not publish, and say so with 429 and Retry-After; this one does when told a phone's
 * carrier is busy (`busyFor`, for demos and tests).
 */
@Injectable()
export class SmsGateway {
  /** phone → busy until (ms since the epoch). */
  private readonly busy = new Map<string, number>();

  busyFor(phone: string, ms: number): void {
    this.busy.set(phone, Date.now() + ms);
  }

  send({ phone }: SmsRequest): GatewayAnswer {
    const left = (this.busy.get(phone) ?? 0) - Date.now();
    return left > 0 ? { status: 429, retryAfterMs: left } : { status: 202 };
  }
}
