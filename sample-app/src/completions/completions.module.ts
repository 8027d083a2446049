import { Module } from '@nestjs/common';
import { CompletionsController } from './completions.controller.js';
import { CompletionsService } from './completions.service.js';
import { ModelService } from './model.service.js';

@Module({ controllers: [CompletionsController], providers: [CompletionsService, ModelService] })
export class CompletionsModule {}
