import { Injectable } from '@nestjs/common';

export interface Generated {
  text: string;
  /** Tokens the answer used: never more than asked. */
  tokens: number;
}

/** Stands in for a language model: answers with the prompt's words reversed, one token a word. */
@Injectable()
export class ModelService {
  async generate(prompt: string, maxTokens: number): Promise<Generated> {
    const words = prompt.trim().split(/\s+/).reverse().slice(0, maxTokens);
    return { text: words.join(' '), tokens: words.length };
  }
}
