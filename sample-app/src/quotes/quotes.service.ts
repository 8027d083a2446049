import { Injectable } from '@nestjs/common';

export interface Quote {
  symbol: string;
  price: number;
  currency: 'USD';
  asOf: string;
}

export interface DailyClose {
  date: string;
  close: number;
}

/** Made-up market data: a stable price per symbol that wiggles a little with time. */
@Injectable()
export class QuotesService {
  quote(symbol: string, at = new Date()): Quote {
    const wiggle = Math.sin(at.getTime() / 60_000 + basePrice(symbol)) * 0.5;
    return { symbol, price: round(basePrice(symbol) + wiggle), currency: 'USD', asOf: at.toISOString() };
  }

  history(symbol: string, days = 5, at = new Date()): DailyClose[] {
    return Array.from({ length: days }, (_, i) => {
      const day = new Date(Date.UTC(at.getUTCFullYear(), at.getUTCMonth(), at.getUTCDate() - (days - i)));
      return { date: day.toISOString().slice(0, 10), close: round(basePrice(symbol) * (1 + Math.sin(i + symbol.length) / 50)) };
    });
  }
}

function basePrice(symbol: string): number {
  let hash = 0;
  for (const c of symbol) hash = (hash * 31 + c.charCodeAt(0)) % 10_000;
  return 10 + (hash % 490);
}

const round = (n: number) => Math.round(n * 100) / 100;
