import { BadRequestException } from '@nestjs/common';

export interface CompletionRequest {
  prompt: string;
  /** The most tokens the answer may use: what is reserved from the budget up front. */
  maxTokens: number;
}

const MAX_PROMPT = 4_000;
/** Most tokens one answer may use: a request never reserves more than this. */
export const MAX_TOKENS = 1_000;

/** Checks a `POST /completions` body; 400 unless it holds a prompt and a maxTokens of 1..MAX_TOKENS. */
export function parseCompletionRequest(body: unknown): CompletionRequest {
  const { prompt, maxTokens } = (typeof body === 'object' && body !== null ? body : {}) as Record<string, unknown>;
  if (typeof prompt !== 'string' || prompt.trim().length === 0 || prompt.length > MAX_PROMPT) {
    throw new BadRequestException(`prompt must be 1-${MAX_PROMPT} characters`);
  }
  if (typeof maxTokens !== 'number' || !Number.isSafeInteger(maxTokens) || maxTokens < 1 || maxTokens > MAX_TOKENS) {
    throw new BadRequestException(`maxTokens must be an integer from 1 to ${MAX_TOKENS}`);
  }
  return { prompt, maxTokens };
}
