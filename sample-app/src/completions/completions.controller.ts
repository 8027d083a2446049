import { Body, Controller, HttpCode, HttpStatus, Inject, Post, Headers } from '@nestjs/common';
import { parseApiKey } from '../quotes/quote-request.js';
import { parseCompletionRequest } from './completion-request.js';
import { CompletionsService, type Completion } from './completions.service.js';

@Controller('completions')
export class CompletionsController {
  constructor(@Inject(CompletionsService) private readonly completions: CompletionsService) {}

  /** Answers a prompt within the API key's token budget (10 000 tokens per hour): reserves
   * `maxTokens`, settles to the tokens used. 429 with retryAfterMs when the reservation does not fit. */
  @Post()
  @HttpCode(HttpStatus.OK)
  complete(@Headers('x-api-key') apiKey: string | undefined, @Body() body: unknown): Promise<Completion> {
    return this.completions.complete(parseApiKey(apiKey), parseCompletionRequest(body));
  }
}
