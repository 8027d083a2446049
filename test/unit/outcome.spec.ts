import { BadRequestException, HttpException } from '@nestjs/common';
import { RpcException } from '@nestjs/microservices';
import { WsException } from '@nestjs/websockets';
import { handlerOutcome } from '../../lib/rate-limit/outcome.js';

// What countIf sees where no status is sent (GraphQL, WebSocket, microservices).
describe('handlerOutcome', () => {
  it('is 200 when the handler answered', () => {
    expect(handlerOutcome(undefined, false)).toEqual({ statusCode: 200 });
  });

  it("is an HttpException's status, with the error", () => {
    const error = new BadRequestException();
    expect(handlerOutcome(error, true)).toEqual({ statusCode: 400, error });
    expect(handlerOutcome(new HttpException('teapot', 418), true).statusCode).toBe(418);
  });

  it('is the statusCode of a WsException or RpcException error object', () => {
    expect(handlerOutcome(new WsException({ statusCode: 403, message: 'no' }), true).statusCode).toBe(403);
    expect(handlerOutcome(new RpcException({ statusCode: 409, message: 'taken' }), true).statusCode).toBe(409);
  });

  it('is 500 for anything else thrown, undefined and strings included', () => {
    for (const thrown of [new Error('bug'), new WsException('no status'), new RpcException({ statusCode: '404' }), 'text', undefined, null]) {
      expect(handlerOutcome(thrown, true)).toEqual({ statusCode: 500, error: thrown });
    }
  });
});
