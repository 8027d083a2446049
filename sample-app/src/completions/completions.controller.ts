import { Body, Controller, HttpCode, HttpStatus, Inject, Post, Headers, type ExecutionContext } from '@nestjs/common';
import { MaxConcurrent } from '../../../lib/index.js';
import { parseApiKey } from '../quotes/quote-request.js';
import { parseCompletionRequest } from './completion-request.js';
import { CompletionsService, type Completion } from './completions.service.js';

/** Completions one API key may have running at once: a model call holds its GPU for seconds. */
export const COMPLETIONS_AT_ONCE = 2;

const apiKeyOf = (ctx: ExecutionContext) => parseApiKey(ctx.switchToHttp().getRequest<{ headers: Record<string, string | undefined> }>().headers['x-api-key']);

@Controller('completions')
export class CompletionsController {
  constructor(@Inject(CompletionsService) private readonly completions: CompletionsService) {}

  /** Answers a prompt within the API key's token budget (10 000 tokens per hour): reserves
   * `maxTokens`, settles to the tokens used. 429 with retryAfterMs when the reservation does not fit,
   * or while the key has COMPLETIONS_AT_ONCE completions running (in any instance). */
  @Post()
  @MaxConcurrent(COMPLETIONS_AT_ONCE, { key: apiKeyOf, name: 'completions' })
  @HttpCode(HttpStatus.OK)
  complete(@Headers('x-api-key') apiKey: string | undefined, @Body() body: unknown): Promise<Completion> {
    return this.completions.complete(parseApiKey(apiKey), parseCompletionRequest(body));
  }
}
