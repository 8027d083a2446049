import { Body, Controller, Get, HttpCode, HttpStatus, Inject, Param, Post } from '@nestjs/common';
import { Funnel } from '../../../lib/index.js';
import { parseSmsRequest, phoneOf } from './sms-request.js';
import { SmsService, type QueuedSms, type SmsStatus } from './sms.service.js';

@Controller('sms')
export class SmsController {
  constructor(@Inject(SmsService) private readonly sms: SmsService) {}

  /** One SMS per phone number per 30 minutes (a verification-code sender's classic limit); it
   * goes out through the outbox, at the gateway's pace. */
  @Post()
  @HttpCode(HttpStatus.ACCEPTED)
  @Funnel({ capacity: 1, leakingDurationMs: 30 * 60_000, key: phoneOf })
  send(@Body() body: unknown): Promise<QueuedSms> {
    return this.sms.send(parseSmsRequest(body));
  }

  @Get(':id')
  status(@Param('id') id: string): SmsStatus {
    return this.sms.status(id);
  }
}
