import { Module } from '@nestjs/common';
import { SmsGateway } from './sms-gateway.js';
import { SmsSender } from './sms-sender.js';
import { SmsController } from './sms.controller.js';
import { SmsService } from './sms.service.js';

@Module({ controllers: [SmsController], providers: [SmsService, SmsSender, SmsGateway] })
export class SmsModule {}
