import { ConfigurableModuleBuilder } from '@nestjs/common';
import type { RedisLimitModuleOptions } from './redis-limit.options.js';

export const {
  ConfigurableModuleClass,
  MODULE_OPTIONS_TOKEN: REDIS_LIMIT_OPTIONS,
  OPTIONS_TYPE,
  ASYNC_OPTIONS_TYPE,
} = new ConfigurableModuleBuilder<RedisLimitModuleOptions>({ moduleName: 'RedisLimit' })
  .setClassMethodName('forRoot')
  .setExtras({ isGlobal: true }, (definition, extras) => ({ ...definition, global: extras.isGlobal }))
  .build();
