import { BadRequestException, type ExecutionContext } from '@nestjs/common';

export interface SmsRequest {
  /** E.164, e.g. +15555550100. */
  phone: string;
  text: string;
}

const E164 = /^\+[1-9]\d{7,14}$/;
const MAX_TEXT = 480; // three concatenated segments

/** Checks a `POST /sms` body; 400 unless it holds an E.164 phone and a non-empty text. */
export function parseSmsRequest(body: unknown): SmsRequest {
  const { phone, text } = (typeof body === 'object' && body !== null ? body : {}) as Record<string, unknown>;
  if (typeof phone !== 'string' || !E164.test(phone)) {
    throw new BadRequestException('phone must be an E.164 number, e.g. +15555550100');
  }
  if (typeof text !== 'string' || text.length === 0 || text.length > MAX_TEXT) {
    throw new BadRequestException(`text must be 1-${MAX_TEXT} characters`);
  }
  return { phone, text };
}

// The funnel's guard runs before pipes: it validates the whole body, so a bad request is a 400
// that charges no phone's funnel.
export const phoneOf = (ctx: ExecutionContext): string => parseSmsRequest(ctx.switchToHttp().getRequest<{ body?: unknown }>().body).phone;
