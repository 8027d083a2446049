import type { DashboardOverview } from '../../lib/dashboard/dashboard-overview.js';
import type { DecisionSeriesPage } from '../../lib/dashboard/decision-series.js';
import { TestCluster } from '../harness/redis-cluster.js';
import { ADMIN_KEY, dashboardApp, type DashboardApp } from './dashboard-app.js';

// The chart's minutes share one hash tag: on a Redis Cluster the pipelined writes and the hour's
// read each go to one node. (No browser: the page is the same whatever Redis is behind it.)
describe('the dashboard on a Redis Cluster', () => {
  let cluster: TestCluster;
  let target: DashboardApp;
  beforeAll(async () => {
    cluster = await TestCluster.start();
    target = await dashboardApp('express', cluster);
  });
  afterAll(async () => {
    await target?.close();
    await cluster?.stop();
  });

  const get = <T>(path: string) =>
    fetch(`${target.origin}/redis-limit/api/${path}`, { headers: { 'x-admin-key': ADMIN_KEY } }).then((r) => r.json() as Promise<T>);

  it('keeps the per-minute counts and says it is a cluster', async () => {
    for (let i = 0; i < 4; i++) await fetch(`${target.origin}/hello`);
    await target.flushDecisions();
    const { routes } = await get<DecisionSeriesPage>('decisions');
    const hello = routes.find((r) => r.route === 'HelloController.hello')!;
    const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);
    expect([sum(hello.allowed), sum(hello.refused)]).toEqual([3, 1]);
    expect((await get<DashboardOverview>('overview')).redis).toMatchObject({
      mode: 'cluster',
      server: 'redis',
      version: expect.any(String),
      pingMs: expect.any(Number),
    });
  });
});
