import 'reflect-metadata';
import { Controller, Get, Post } from '@nestjs/common';
import { EventPattern, MessagePattern } from '@nestjs/microservices';
import { SubscribeMessage, WebSocketGateway } from '@nestjs/websockets';
import { Mutation, Query, ResolveField, Resolver } from '@nestjs/graphql';
import { handlerKind } from '../../lib/handler-kind.js';
import { routeRef } from '../../lib/route-identity.js';

// The classifier reads Nest's metadata by its literal keys: these use the real decorators, so a
// key Nest renamed would show here.

@Controller('orders')
class OrdersController {
  @Get()
  list() {}

  @Post()
  create() {}

  @MessagePattern({ cmd: 'sum' })
  sum(_data: unknown) {}

  @EventPattern('order.paid')
  paid(_data: unknown) {}

  helper() {}
}

@WebSocketGateway()
class ChatGateway {
  @SubscribeMessage('say')
  say() {}
}

@Resolver()
class OrdersResolver {
  @Query(() => String)
  order() {
    return '';
  }

  @Mutation(() => String)
  pay() {
    return '';
  }

  @ResolveField(() => String)
  total() {
    return '';
  }
}

describe('handlerKind', () => {
  it.each([
    ['an HTTP GET route', OrdersController.prototype.list, 'http'],
    ['an HTTP POST route', OrdersController.prototype.create, 'http'],
    ['a @MessagePattern handler', OrdersController.prototype.sum, 'rpc'],
    ['an @EventPattern handler', OrdersController.prototype.paid, 'rpc'],
    ['a @SubscribeMessage handler', ChatGateway.prototype.say, 'ws'],
    ['a @Query', OrdersResolver.prototype.order, 'graphql'],
    ['a @Mutation', OrdersResolver.prototype.pay, 'graphql'],
    ['a @ResolveField', OrdersResolver.prototype.total, 'graphql'],
    ['a method nothing calls', OrdersController.prototype.helper, undefined],
  ])('%s is %s', (_what, handler, kind) => {
    expect(handlerKind(handler)).toBe(kind);
  });

  it('scopes non-HTTP handlers by what their transport calls them', () => {
    expect(routeRef(OrdersController, OrdersController.prototype.sum).scope).toBe('rpc {"cmd":"sum"} OrdersController.sum');
    expect(routeRef(ChatGateway, ChatGateway.prototype.say).scope).toBe('ws say ChatGateway.say');
    expect(routeRef(OrdersResolver, OrdersResolver.prototype.pay).scope).toBe('graphql Mutation.pay OrdersResolver.pay');
    expect(routeRef(OrdersController, OrdersController.prototype.list).scope).toBe('GET /orders OrdersController.list');
  });
});
