import 'reflect-metadata';
import { Logger } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { RedisNode } from '../../test/harness/redis-server.js';
import { AppModule, setUpSampleApp } from './app.module.js';
import { redisFromEnv } from './redis-from-env.js';

// `npm start`: the sample app on PORT (default 3000), against REDIS_URL, a cluster
// (REDIS_CLUSTER_NODES=host:port,host:port), sentinels (REDIS_SENTINELS=host:port,... with
// REDIS_SENTINEL_NAME) or, when none is set, a redis-server started for this process and stopped with it.
const logger = new Logger('SampleApp');
const port = Number(process.env['PORT'] ?? 3000);
const configured = redisFromEnv(process.env);
const embedded = configured ? undefined : await RedisNode.start();
const redis = configured ?? embedded!.url;
if (embedded) logger.log(`REDIS_URL is unset: started an embedded redis-server at ${embedded.url}`);

const app = setUpSampleApp(await NestFactory.create(AppModule.register({ redis })));
await app.listen(port).catch(async (error: unknown) => {
  await app.close();
  await embedded?.stop();
  throw error;
});

// Not app.enableShutdownHooks(): its handler ends the process as soon as the app is closed, and
// the embedded server must stop after that, once the limiter has quit its connection to it.
let closing = false;
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.on(signal, () => {
    if (closing) return; // Ctrl-C reaches us twice: from the terminal and from start-sample.mjs
    closing = true;
    logger.log(`${signal}: shutting down`);
    void app
      .close()
      .finally(() => embedded?.stop())
      .then(
        () => process.exit(0),
        (error: unknown) => {
          logger.error(error);
          process.exit(1);
        },
      );
  });
}

const base = `localhost:${port}`;
logger.log(`Listening on http://${base}`);
console.log(`
Try (every route: 100 requests per minute per IP unless it says otherwise; /health never limited):
  # 5 quotes per 10 s per IP: the 6th call within 10 s answers 429 with Retry-After
  for i in 1 2 3 4 5 6; do curl -s -o /dev/null -w '%{http_code}\\n' ${base}/quotes/ACME; done
  curl -i ${base}/quotes/ACME

  # per API key, 3 per second and 5 per minute, decided together
  curl -i -H 'x-api-key: demo' ${base}/quotes/ACME/history

  # one permit per symbol, 20 per minute
  curl -i '${base}/quotes?symbols=ACME,GLOBEX,INITECH'

  # never limited
  curl -i ${base}/health

  # GraphQL: 5 quotes per 10 s per IP; the 6th answers errors[0].extensions { code: 'TOO_MANY_REQUESTS', retryAfterMs }
  curl -s ${base}/graphql -H 'content-type: application/json' -d '{"query":"{ quote(symbol: \\"ACME\\") { symbol price } }"}'
  curl -s ${base}/graphql -H 'content-type: application/json' -d '{"query":"mutation { createAlert(symbol: \\"ACME\\", price: 100) { id } }"}'

  # WebSocket at ws://${base}/ws: 5 quotes per 10 s; the 6th answers an exception event with statusCode 429 (run from this directory)
  node -e "const s=new (require('ws'))('ws://${base}/ws'),q=()=>s.send(JSON.stringify({event:'quote',data:{symbol:'ACME'}}));let n=0;s.on('open',q).on('message',(m)=>{console.log(String(m));++n<6?q():s.close()})"

  # one SMS per phone per 30 minutes: the second answers 429 with Retry-After: 1800
  curl -i -X POST ${base}/sms -H 'content-type: application/json' -d '{"phone":"+15555550100","text":"Your code is 123456"}'
  # it goes out through a DelayQueue consumer limited to one SMS per phone per minute at the gateway
  curl -s ${base}/sms/<id>

  # login: 5 failed attempts per 15 min per account, then a 15 min lockout; a success never counts (alice / wonderland)
  for i in 1 2 3 4 5 6; do curl -s -o /dev/null -w '%{http_code}\\n' -X POST ${base}/login -H 'content-type: application/json' -d '{"account":"bob","password":"guess"}'; done
  curl -i -X POST ${base}/login -H 'content-type: application/json' -d '{"account":"alice","password":"wonderland"}'

  # a token budget, 10 000 per hour per API key: reserves maxTokens, then gives back what the answer did not use
  curl -s -X POST ${base}/completions -H 'x-api-key: demo' -H 'content-type: application/json' -d '{"prompt":"hello token budget","maxTokens":500}'

  # at most 3 unpaid orders per user: the 4th answers 429 until one is paid or lapses (30 min)
  for i in 1 2 3 4; do curl -s -w ' %{http_code}\\n' -X POST ${base}/orders -H 'x-user-id: alice' -H 'content-type: application/json' -d '{"item":"book"}'; done
  curl -s ${base}/orders -H 'x-user-id: alice'
  curl -i -X POST ${base}/orders/<id>/pay -H 'x-user-id: alice'

  # the dashboard: open http://${base}/redis-limit in a browser (any user name; password: the admin key, ADMIN_KEY or demo-admin-key)
`);
