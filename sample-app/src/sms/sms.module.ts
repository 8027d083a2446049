import { Module } from '@nestjs/common';
import { SmsSender } from './sms-sender.js';
import { SmsController } from './sms.controller.js';
import { SmsService } from './sms.service.js';

@Module({ controllers: [SmsController], providers: [SmsService, SmsSender] })
export class SmsModule {}
