import { Module } from '@nestjs/common';
import { QuotesModule } from '../quotes/quotes.module.js';
import { QuotesGateway } from './quotes.gateway.js';

@Module({ imports: [QuotesModule], providers: [QuotesGateway] })
export class LiveModule {}
