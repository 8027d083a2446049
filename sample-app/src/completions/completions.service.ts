import { Inject, Injectable } from '@nestjs/common';
import { RateLimitException, RateLimiterService, type RateLimitPolicy } from '../../../lib/index.js';
import type { CompletionRequest } from './completion-request.js';
import { ModelService, type Generated } from './model.service.js';

/** Each API key's token budget: 10 000 tokens per hour, over any hour. */
export const TOKEN_BUDGET: RateLimitPolicy = { limit: 10_000, windowMs: 60 * 60_000, algorithm: 'sliding-window' };

export interface Completion {
  text: string;
  tokensUsed: number;
  /** Tokens the key had left once this answer was settled (other requests may have spent since). */
  tokensLeft: number;
}

/**
 * A token budget by reservation: the request reserves `maxTokens` before the model runs (so
 * concurrent requests never overspend the budget together), then gives back what the answer
 * did not use. Should the model fail, the whole reservation goes back.
 */
@Injectable()
export class CompletionsService {
  constructor(
    @Inject(RateLimiterService) private readonly limiter: RateLimiterService,
    @Inject(ModelService) private readonly model: ModelService,
  ) {}

  async complete(apiKey: string, { prompt, maxTokens }: CompletionRequest): Promise<Completion> {
    const key = `tokens:${apiKey}`;
    const reserved = await this.limiter.consume(key, TOKEN_BUDGET, maxTokens);
    if (!reserved.allowed) throw new RateLimitException(reserved.retryAfterMs);
    const grantId = reserved.grantId!; // set on every allowed decision
    let answer: Generated;
    try {
      answer = await this.model.generate(prompt, maxTokens);
    } catch (error) {
      await this.settle(key, grantId, maxTokens);
      throw error;
    }
    const back = await this.settle(key, grantId, maxTokens - answer.tokens);
    return { text: answer.text, tokensUsed: answer.tokens, tokensLeft: reserved.remaining + back };
  }

  /** Gives back `unused` tokens of the reservation; 0 when there is nothing to give back. */
  private settle(key: string, grantId: string, unused: number): Promise<number> {
    return unused > 0 ? this.limiter.refund(key, TOKEN_BUDGET, grantId, unused) : Promise.resolve(0);
  }
}
